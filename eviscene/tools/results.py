"""What a tool call returns to the agent loop."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from eviscene.events import GateDecided, SourceSeen

ToolStatus = Literal["ok", "empty", "blocked", "invalid", "error"]

POLICY_GATE = "source_access_policy"


class ToolOutcome(BaseModel):
    """One tool call's result: the observation the model sees, the sources it exposed,
    the policy blocks it caused, and structured data for programmatic policies."""

    status: ToolStatus = Field(description="`invalid`: rejected call; `blocked`: the source-access policy refused it.")
    observation: str = Field(description="Text given to the model; never holds blocked content or policy rules.")
    sources: list[SourceSeen] = Field(default_factory=list, description="Sources shown in the observation, with evidence ids.")
    blocks: list[GateDecided] = Field(default_factory=list, description="One `source_access_policy` decision per source removed or refused.")
    data: dict[str, Any] = Field(default_factory=dict, description="Structured results (hits, scores, page fields, similarity numbers).")
    error: str = Field("", description="Why the call was invalid or failed.")
    cache_hit: bool = Field(False, description="Served from the tool cache (the loop records it on `tool.returned`).")


def policy_block(url: str, reason: str) -> GateDecided:
    return GateDecided(gate=POLICY_GATE, subject=url, passed=False, reasons=[reason])
