"""One episode of `unified-react-v1`: perception, a ReAct loop of model calls and tool calls
(at most `max_tool_actions`), then a schema-validated judgment. Every step is an event."""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Awaitable, Callable

import anyio
from pydantic import BaseModel

from eviscene.agent import prompts
from eviscene.agent.judgment import judgment_schema, parse_judgment
from eviscene.agent.provider import ModelRequest, ModelResponse, Provider, ProviderError, Stage
from eviscene.events import (
    EpisodeFinished,
    EpisodeStarted,
    GateDecided,
    ModelCalled,
    PerceptionReported,
    TokenUsage,
    ToolCalled,
    ToolReturned,
)
from eviscene.redaction import redact
from eviscene.store.chain import canonical_json
from eviscene.store.writer import EventDraft, RunWriter
from eviscene.tools import EpisodeTools, Toolbox, ToolOutcome

AGENT_DECISION_POLICY_VERSION = "unified-react-v1"
MAX_TOOL_ACTIONS = 24
JUDGMENT_RETRIES = 1


@dataclass(frozen=True)
class EpisodeSpec:
    episode_id: str
    case_id: str
    image_file: Path
    image_sha256: str
    sampling_seed: int
    attempt: int


@dataclass(frozen=True)
class AgentSettings:
    label_set: tuple[str, ...]
    timeout_seconds: float
    image_access_mode: str = "direct_multimodal"
    max_tool_actions: int = MAX_TOOL_ACTIONS


Perceive = Callable[[Path, str], Awaitable[PerceptionReported]]


class EpisodeRecorder:
    """Emits one episode attempt's events with consecutive step numbers."""

    def __init__(self, writer: RunWriter, episode_id: str, attempt: int):
        self.writer, self.episode_id, self.attempt = writer, episode_id, attempt
        self.step = 0

    async def emit(self, payload: BaseModel) -> None:
        await self.writer.emit(EventDraft(payload, episode_id=self.episode_id, attempt=self.attempt, step=self.step))
        self.step += 1


@dataclass
class _Tally:
    tool_calls: int = 0
    model_calls: int = 0
    usage: TokenUsage = field(default_factory=TokenUsage)


class _JudgmentRefused(Exception):
    pass


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def tool_message(call_id: str, outcome: ToolOutcome) -> dict[str, Any]:
    """The observation text, with its structured form beside it: wire providers send the
    text, a programmatic policy (the offline provider) reads the data."""
    return {"role": "tool", "tool_call_id": call_id, "content": outcome.observation, "data": outcome.data}


def assistant_message(response: ModelResponse) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": response.content}
    if response.reasoning:
        message["reasoning_content"] = response.reasoning
    if response.tool_calls:
        message["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": canonical_json(c.arguments)}}
            for c in response.tool_calls
        ]
    return message


class Episode:
    def __init__(
        self,
        spec: EpisodeSpec,
        *,
        provider: Provider,
        toolbox: Toolbox,
        perceive: Perceive,
        settings: AgentSettings,
        writer: RunWriter,
        image_url: str,
    ):
        self.spec, self.provider, self.toolbox, self.perceive = spec, provider, toolbox, perceive
        self.settings, self.writer, self.image_url = settings, writer, image_url
        self.recorder = EpisodeRecorder(writer, spec.episode_id, spec.attempt)
        self.tally = _Tally()
        self.tools: EpisodeTools | None = None  # made once perception has found the caption text

    async def run(self) -> EpisodeFinished:
        started = time.monotonic()
        await self.recorder.emit(EpisodeStarted(attempt=self.spec.attempt, started_at=_now()))
        termination, error = "completed", ""
        try:
            with anyio.fail_after(self.settings.timeout_seconds):
                termination = await self._investigate_and_judge()
        except TimeoutError:
            termination, error = "timeout", f"episode exceeded its {self.settings.timeout_seconds:g} s timeout"
        except _JudgmentRefused as exc:
            termination, error = "error", f"judgment failed validation: {exc}"
        except Exception as exc:  # one episode's failure never stops the run
            termination, error = "error", redact(f"{type(exc).__name__}: {exc}")
        finished = EpisodeFinished(
            termination=termination,
            error=error,
            time_taken=round(time.monotonic() - started, 3),
            total_tool_calls=self.tally.tool_calls,
            llm_api_calls=self.tally.model_calls,
            token_usage=self.tally.usage,
        )
        await self.recorder.emit(finished)
        return finished

    async def _investigate_and_judge(self) -> str:
        report = await self.perceive(self.spec.image_file, self.spec.image_sha256)
        await self.recorder.emit(report)
        # Printed captions are masked out of image comparisons.
        self.tools = self.toolbox.episode(self.spec.image_file, text_boxes=[line["box"] for line in report.ocr_lines])
        direct = self.settings.image_access_mode == "direct_multimodal"
        messages = [
            prompts.system_message(self.settings.label_set, self.settings.max_tool_actions),
            prompts.user_message(report, self.image_url if direct else None),
        ]
        termination = "completed"
        while True:
            response = await self._call_model("unified_react", messages, self.toolbox.specs())
            messages.append(assistant_message(response))
            if not response.tool_calls:
                break
            if not await self._run_tools(response, messages):
                termination = "budget_exhausted"
                break
        await self._judge(messages)
        return termination

    async def _run_tools(self, response: ModelResponse, messages: list[dict[str, Any]]) -> bool:
        """Execute the calls in order; False once the tool budget refused one."""
        for call in response.tool_calls:
            if self.tally.tool_calls >= self.settings.max_tool_actions:
                await self.recorder.emit(
                    GateDecided(gate="tool_budget", subject=call.id, passed=False, reasons=["max_tool_actions_reached"])
                )
                # Every call the model made gets an answer, so the transcript stays well formed.
                for unanswered in response.tool_calls[response.tool_calls.index(call):]:
                    messages.append({"role": "tool", "tool_call_id": unanswered.id, "content": "Tool budget exhausted; give your judgment."})
                return False
            self.tally.tool_calls += 1
            await self.recorder.emit(
                ToolCalled(
                    call_id=call.id,
                    tool=call.name,
                    arguments=call.arguments,
                    arguments_sha256=_sha256(canonical_json({"tool": call.name, "arguments": call.arguments})),
                )
            )
            clock = time.monotonic()
            assert self.tools is not None
            outcome = await self.toolbox.call(call.name, call.arguments, self.tools)
            for block in outcome.blocks:
                await self.recorder.emit(block)
            await self.recorder.emit(
                ToolReturned(
                    call_id=call.id,
                    tool=call.name,
                    status=outcome.status,
                    observation=outcome.observation,
                    sources=outcome.sources,
                    data=outcome.data,
                    cache_hit=bool(getattr(outcome, "cache_hit", False)),
                    latency_ms=round((time.monotonic() - clock) * 1000, 3),
                    error=outcome.error,
                )
            )
            messages.append(tool_message(call.id, outcome))
        return True

    async def _judge(self, messages: list[dict[str, Any]]) -> None:
        label_set = self.settings.label_set
        messages.append(prompts.judgment_message(label_set))
        for attempt in range(JUDGMENT_RETRIES + 1):
            response = await self._call_model("unified_judgment", messages, [], judgment_schema(label_set))
            messages.append(assistant_message(response))
            evidence_ids = set(self.tools.evidence) if self.tools is not None else set()
            judgment, reasons = parse_judgment(response.content, label_set, evidence_ids)
            await self.recorder.emit(
                GateDecided(gate="judgment_schema", subject=self.spec.episode_id, passed=judgment is not None, reasons=reasons)
            )
            if judgment is not None:
                await self.recorder.emit(judgment)
                return
            if attempt < JUDGMENT_RETRIES:
                messages.append(prompts.judgment_retry_message(reasons))
        raise _JudgmentRefused("; ".join(reasons))

    async def _call_model(
        self, stage: Stage, messages: list[dict[str, Any]], tools: list[dict[str, Any]], schema: dict | None = None
    ) -> ModelResponse:
        request = ModelRequest(
            stage=stage, messages=messages, tools=tools, sampling_seed=self.spec.sampling_seed, response_schema=schema
        )
        body = canonical_json(request.model_dump(mode="json")).encode("utf-8")
        request_sha256 = await self.writer.put_blob(body, "application/json")
        started_at, clock = _now(), time.monotonic()
        self.tally.model_calls += 1
        try:
            response = await self.provider.complete(request)
        except ProviderError as exc:
            # The failed call and each of its tries stay on the record, not only in the error text.
            await self.recorder.emit(
                ModelCalled(
                    stage=stage, provider=self.provider.name, model=self.provider.model, request_sha256=request_sha256,
                    latency_ms=round((time.monotonic() - clock) * 1000, 3), retries=exc.retries,
                    error=redact(str(exc)), started_at=started_at, finished_at=_now(),
                )
            )
            raise
        usage = response.usage
        self.tally.usage = TokenUsage(
            prompt_tokens=self.tally.usage.prompt_tokens + usage.prompt_tokens,
            completion_tokens=self.tally.usage.completion_tokens + usage.completion_tokens,
            total_tokens=self.tally.usage.total_tokens + usage.total_tokens,
        )
        await self.recorder.emit(
            ModelCalled(
                stage=stage,
                provider=self.provider.name,
                model=self.provider.model,
                request_sha256=request_sha256,
                content=response.content,
                reasoning=response.reasoning,
                tool_calls=response.tool_calls,
                usage=usage,
                latency_ms=round((time.monotonic() - clock) * 1000, 3),
                retries=response.retries,
                started_at=started_at,
                finished_at=_now(),
            )
        )
        return response


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
