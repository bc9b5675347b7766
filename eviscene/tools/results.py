"""What a tool call returns to the agent loop."""

from __future__ import annotations

from typing import Any, Iterable, Literal, Optional

from pydantic import BaseModel, Field

from eviscene.events import GateDecided, SourceSeen
from eviscene.rules.source_policy import SourceAccessPolicy

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


def visit_listing(policy: SourceAccessPolicy, images: Iterable[dict[str, Any]],
                  links: Iterable[str]) -> tuple[list[dict[str, Any]], list[str], list[GateDecided]]:
    """A visited page's images (`image_url`, `sha256` where known, `alt`) and links without
    those `policy` blocks, and one block for each URL left out: an image's URL or alt text, or
    a link, can name the answer (a fact-check's picture, often wrapped in a link to itself).
    Both backends list a fresh visit through it, and the tool cache checks a cached one with it."""
    images, links = list(images), list(links)
    reasons: dict[str, Optional[str]] = {}
    for url, sha256 in [*((im["image_url"], im.get("sha256")) for im in images), *((link, None) for link in links)]:
        reasons[url] = reasons.get(url) or policy.check(url, sha256)
    blocks = [policy_block(url, reason) for url, reason in reasons.items() if reason]
    return ([im for im in images if not reasons[im["image_url"]]], [link for link in links if not reasons[link]], blocks)
