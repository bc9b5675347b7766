"""One episode of `unified-react-v1`: perception, a ReAct loop of model calls and tool calls
(at most `max_tool_actions`), then a schema-validated judgment. Every step is an event.

Every model call that returns, fails or times out is a `model.called` event. When the model's
context window is known (`--context-window`, the profile, or learned from the server's first
rejection), each request is kept inside it: older tool observations, and the model's own
long tool arguments and text, are shortened first (evidence ids, titles and URLs stay); once
the investigation cannot fit any more, a `gate.decided` event (`context_window`) says so and
the episode goes to its judgment. Tokens are estimated per stage from the server's own counts:
a server's chat template may render a request with tools and one without very differently
(llama-cpp-python's function-calling template, which also drops `tool` messages, read the
bundled release's requests as 6-8 characters a token with tools, 2.3-3 without).
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Awaitable, Callable, Protocol

import anyio
from pydantic import BaseModel

from eviscene.agent import prompts
from eviscene.agent.judgment import judgment_schema, parse_judgment
from eviscene.agent.provider import (
    CallModel,
    ContextLengthExceeded,
    ModelRequest,
    ModelResponse,
    Provider,
    ProviderError,
    Stage,
    text_of,
)
from eviscene.errors import BackendOutage
from eviscene.events import (
    EpisodeFinished,
    EpisodeStarted,
    GateDecided,
    ModelCalled,
    PerceptionReported,
    TokenUsage,
    ToolCalled,
    ToolCallRequest,
    ToolReturned,
)
from eviscene.redaction import KnownSecrets, redact
from eviscene.release.case_image import CaseImage, read_case_image
from eviscene.rules.canonical import canonical_json
from eviscene.rules.circuit_breaker import outage_waits_excluded
from eviscene.rules.timestamps import utc_now_millis_iso
from eviscene.store.writer import EventDraft
from eviscene.tools import EpisodeTools, Toolbox, ToolOutcome

AGENT_DECISION_POLICY_VERSION = "unified-react-v1"
MAX_TOOL_ACTIONS = 24
JUDGMENT_RETRIES = 1
# Token estimates before the server's usage calibrates them: 3 characters a token is
# conservative for English, JSON and URLs; an image is counted at a typical VLM's cost.
CHARS_PER_TOKEN = 3.0
IMAGE_TOKENS = 768
MESSAGE_OVERHEAD_TOKENS = 4
CONTEXT_MARGIN_TOKENS = 64
CONTEXT_REJECTIONS_TOLERATED = 2  # a request refused for length again after shortening
SHORTENED = "[shortened to fit the context window]"
_SHORTENED_LIMITS = {1: 200, 2: 100}  # characters a shortened line or value keeps, by level
IMAGE_TOO_LARGE = (
    "the image made the request too long for the model's context window{window}: this model reads the image as "
    "text tokens. Run with --image-access-mode separate_vlm --vlm-provider offline (the agent then sees the "
    "perception report, not the image), or use a multimodal model. Server: {message}"
)
VLM_IMAGE_TOO_LARGE = (
    "the describing model cannot take the image: it made the request too long for its context window{window} "
    "(a text-only model?). Name a vision model with --vlm-provider/--vlm-model, or --vlm-provider offline for "
    "the embedded perception report alone. Server: {message}"
)


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


Perceive = Callable[[CaseImage, CallModel], Awaitable[PerceptionReported]]


class EventSink(Protocol):
    """Where an episode's events and blobs go: the run's `RunWriter`, or a Ray worker's relay
    that hands them to the driver's writer."""

    async def emit(self, draft: EventDraft) -> None: ...

    async def put_blob(self, content: bytes, media_type: str) -> str: ...


class EpisodeRecorder:
    """Emits one episode attempt's events with consecutive step numbers."""

    def __init__(self, writer: EventSink, episode_id: str, attempt: int):
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


def _cut_off(response: ModelResponse) -> str:
    """The judgment gate's reason for an answer the token limit cut before its JSON ended."""
    spent = f" ({response.usage.completion_tokens} tokens)" if response.usage.completion_tokens else ""
    return f"cut_off: the answer reached its completion token limit{spent} before its JSON ended; answer more briefly"


def _has_image(messages: list[dict[str, Any]]) -> bool:
    return any(
        isinstance(m.get("content"), list) and any(part.get("type") == "image_url" for part in m["content"]) for m in messages
    )


def _text_chars(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> int:
    """Characters the model reads as text: contents, reasoning, tool calls and tool specs."""
    chars = len(canonical_json(tools)) if tools else 0
    for message in messages:
        content = message.get("content")
        if isinstance(content, list):
            chars += sum(len(part.get("text", "")) for part in content if isinstance(part, dict))
        elif content:
            chars += len(str(content))
        chars += len(message.get("reasoning_content") or "")
        chars += sum(len(call["function"]["arguments"]) + len(call["function"]["name"]) for call in message.get("tool_calls") or [])
    return chars


def shorten_message(message: dict[str, Any], level: int) -> dict[str, Any]:
    """An older message cut down for the context window, or the message itself when that
    would not make it shorter: a tool observation (`shorten_observation`), or the model's
    own long text, reasoning and tool-call arguments (a small model may write pages of them)."""
    if message["role"] == "tool":
        shorter = {**message, "content": shorten_observation(text_of(message.get("content")), level)}
    elif message["role"] == "assistant":
        limit = _SHORTENED_LIMITS[level]
        shorter = {**message, "content": _cut(text_of(message.get("content")), limit)}
        if message.get("reasoning_content"):
            shorter["reasoning_content"] = _cut(message["reasoning_content"], limit)
        if message.get("tool_calls"):
            shorter["tool_calls"] = [
                {**call, "function": {**call["function"], "arguments": shorten_arguments(call["function"]["arguments"], limit)}}
                for call in message["tool_calls"]
            ]
    else:
        return message
    if _text_chars([shorter], []) >= _text_chars([message], []):
        return message
    return {**shorter, "shortened": level}


def shorten_arguments(arguments: str, limit: int) -> str:
    """A tool call's arguments (canonical JSON of an object) with each string value cut to
    `limit` characters: still an object, so every wire format can send it."""
    values = json.loads(arguments)
    return canonical_json({key: _cut(value, limit) if isinstance(value, str) else value for key, value in values.items()})


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else f"{text[:limit]}… {SHORTENED}"


def shorten_observation(text: str, level: int) -> str:
    """A tool observation cut down for the context window. Level 1 keeps the heading, each
    evidence line (`[ev-N] title, date`) and the URLs; level 2 only the evidence lines, cut
    to 100 characters. The evidence ids always stay, so the judgment can still cite them."""
    lines = text.replace(SHORTENED, "").rstrip().splitlines()
    if not lines:
        return text
    evidence = [line.strip() for line in lines[1:] if line.lstrip().startswith("[ev-")]
    if level == 1:
        kept = [lines[0][:200]] + [
            line.strip()[:200] for line in lines[1:] if line.lstrip().startswith(("[ev-", "http://", "https://"))
        ]
    else:
        kept = [lines[0][:100]] + [line[:100] for line in evidence]
    return "\n".join(kept) + "\n" + SHORTENED


def tool_message(call_id: str, outcome: ToolOutcome) -> dict[str, Any]:
    """The observation text, with its structured form beside it: wire providers send the
    text, a programmatic policy (the offline provider) reads the data."""
    return {"role": "tool", "tool_call_id": call_id, "content": outcome.observation, "data": outcome.data}


def _declined(calls: list[ToolCallRequest], answer: str) -> list[dict[str, Any]]:
    """An answer to each call that no tool ran: every call the model made gets one, so the
    transcript stays well formed (servers refuse tool calls left unanswered)."""
    return [{"role": "tool", "tool_call_id": call.id, "content": answer} for call in calls]


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
        writer: EventSink,
        image_url: str,
    ):
        self.spec, self.provider, self.toolbox, self.perceive = spec, provider, toolbox, perceive
        self.settings, self.writer, self.image_url = settings, writer, image_url
        self.recorder = EpisodeRecorder(writer, spec.episode_id, spec.attempt)
        self.tally = _Tally()
        self.tools: EpisodeTools | None = None  # made once perception has found the caption text
        self._deadline: anyio.CancelScope | None = None  # its deadline moves on while a backend is down
        self.chars_per_token: dict[Stage, float] = {}  # by stage, from the server's prompt token counts
        self.secrets = KnownSecrets()

    async def run(self) -> EpisodeFinished:
        started = time.monotonic()
        await self.recorder.emit(EpisodeStarted(attempt=self.spec.attempt, started_at=utc_now_millis_iso()))
        termination, error = "completed", ""
        try:
            with anyio.fail_after(self.settings.timeout_seconds) as scope, outage_waits_excluded(scope):
                self._deadline = scope
                termination = await self._investigate_and_judge()
        except BackendOutage:
            raise  # not this episode's failure: the run stops and the episode stays unfinished
        except TimeoutError:
            termination, error = "timeout", f"episode exceeded its {self.settings.timeout_seconds:g} s timeout"
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
        # Read once and checked against the hash the run recorded: perception and the tools use
        # these bytes, so a file swapped since preflight ends the episode as an error instead of
        # being analysed (and its report cached) under the old hash. The reads in threads are
        # left behind at the episode's deadline (their results unused), so the timeout covers them.
        case_image = await anyio.to_thread.run_sync(read_case_image, self.spec.image_file, self.spec.image_sha256, abandon_on_cancel=True)
        report = await self.perceive(case_image, self.call_model)
        await self.recorder.emit(report)
        # Printed captions are masked out of image comparisons.
        self.tools = self.toolbox.episode(case_image, text_boxes=[line["box"] for line in report.ocr_lines])
        direct = self.settings.image_access_mode == "direct_multimodal"
        messages = [
            prompts.system_message(self.settings.label_set, self.settings.max_tool_actions),
            prompts.user_message(report, self.image_url if direct else None),
        ]
        termination = "completed"
        while True:
            response = await self._call_within_window("unified_react", messages, self.toolbox.specs())
            if response is None:
                await self.recorder.emit(
                    GateDecided(
                        gate="context_window", subject=self.spec.episode_id, passed=False,
                        reasons=[f"investigation_no_longer_fits: ~{self._estimate('unified_react', messages, self.toolbox.specs())} tokens, "
                                 f"window {self._window()}"],
                    )
                )
                termination = "budget_exhausted"
                break
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
                messages.extend(_declined(response.tool_calls[response.tool_calls.index(call):], "Tool budget exhausted; give your judgment."))
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
                    cache_hit=outcome.cache_hit,
                    latency_ms=round((time.monotonic() - clock) * 1000, 3),
                    error=outcome.error,
                )
            )
            messages.append(tool_message(call.id, outcome))
        return True

    async def _judge(self, messages: list[dict[str, Any]]) -> None:
        """Ask for the judgment, and again after a refusal. A judgment refused every time is
        the policy's failure, not the run's: the episode ends as it stands, without a
        verdict (the audit's missing_judgment), each refusal on the record."""
        label_set = self.settings.label_set
        messages.append(prompts.judgment_message(label_set))
        for attempt in range(JUDGMENT_RETRIES + 1):
            response = await self._call_within_window("unified_judgment", messages, [], judgment_schema(label_set))
            if response is None:  # shortened as far as it goes: send it anyway, the estimate is conservative
                response = await self._call_model("unified_judgment", messages, [], judgment_schema(label_set))
            messages.append(assistant_message(response))
            evidence_ids = set(self.tools.evidence) if self.tools is not None else set()
            judgment, reasons = parse_judgment(response.content, label_set, evidence_ids)
            if judgment is None and response.finish_reason == "length" and reasons[0].startswith("not_json"):
                reasons = [_cut_off(response)]  # the cause, not its symptom; the retry asks for a shorter answer
            elif judgment is None and response.tool_calls:  # the call is the cause; text beside it, if any, another
                names = ", ".join(sorted({call.name for call in response.tool_calls}))
                called = f"tool_call_not_judgment: the judgment runs no tools ({names}); answer with the JSON judgment"
                reasons = [called, *(reasons if response.content.strip() else [])]
            await self.recorder.emit(
                GateDecided(gate="judgment_schema", subject=self.spec.episode_id, passed=judgment is not None, reasons=reasons)
            )
            if judgment is not None:
                await self.recorder.emit(judgment)
                return
            if attempt < JUDGMENT_RETRIES:
                messages.extend(_declined(response.tool_calls, "No tool runs at the judgment."))
                messages.append(prompts.judgment_retry_message(reasons))

    # -- the context window -----------------------------------------------------------------

    def _window(self) -> int | None:
        return getattr(self.provider, "context_window", None)

    def _chars_per_token(self, stage: Stage) -> float:
        """The stage's measured ratio; before its first count, the lowest known (the
        cautious guess: another stage's requests may read as fewer tokens)."""
        return self.chars_per_token.get(stage) or min([CHARS_PER_TOKEN, *self.chars_per_token.values()])

    def _estimate(self, stage: Stage, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> int:
        images = sum(
            1 for m in messages if isinstance(m.get("content"), list) for part in m["content"] if part.get("type") == "image_url"
        )
        text_tokens = round(_text_chars(messages, tools) / self._chars_per_token(stage))
        return text_tokens + MESSAGE_OVERHEAD_TOKENS * len(messages) + IMAGE_TOKENS * images

    def _fit(self, stage: Stage, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> bool:
        """Shorten the oldest messages until the request and its completion budget fit the
        window; False when even every message at its shortest does not fit."""
        window = self._window()
        if not window:
            return True
        budget = window - ((getattr(self.provider, "max_tokens", None) or {}).get(stage) or 0) - CONTEXT_MARGIN_TOKENS
        for level in (1, 2):
            for index, message in enumerate(messages):
                if self._estimate(stage, messages, tools) <= budget:
                    return True
                if message.get("shortened", 0) < level:
                    messages[index] = shorten_message(message, level)
        return self._estimate(stage, messages, tools) <= budget

    async def _call_within_window(
        self, stage: Stage, messages: list[dict[str, Any]], tools: list[dict[str, Any]], schema: dict | None = None
    ) -> ModelResponse | None:
        """The model's answer, or None when the conversation no longer fits the window. A
        rejection for length teaches the window (or a better token estimate) and the
        request is shortened and sent again."""
        for _ in range(CONTEXT_REJECTIONS_TOLERATED + 1):
            if not self._fit(stage, messages, tools):
                return None
            try:
                return await self._call_model(stage, messages, tools, schema)
            except ContextLengthExceeded as exc:
                known = self._window()
                if exc.window and (known is None or exc.window < known):
                    self.provider.context_window = exc.window  # type: ignore[attr-defined]
                elif known:
                    self.chars_per_token[stage] = 0.75 * self._chars_per_token(stage)  # the window was right; the estimate was not
                else:
                    raise  # no window to fit into: the server's message says what to change
        return None

    # -- model calls --------------------------------------------------------------------------

    async def _call_model(
        self, stage: Stage, messages: list[dict[str, Any]], tools: list[dict[str, Any]], schema: dict | None = None
    ) -> ModelResponse:
        request = ModelRequest(
            stage=stage, messages=messages, tools=tools, sampling_seed=self.spec.sampling_seed, response_schema=schema
        )
        response = await self.call_model(self.provider, request)
        if response.usage.prompt_tokens and not _has_image(messages):
            # The server counted this prompt: estimate the next ones from it, 10% on the safe side.
            measured = _text_chars(messages, tools) / max(1, response.usage.prompt_tokens - MESSAGE_OVERHEAD_TOKENS * len(messages))
            self.chars_per_token[stage] = max(1.0, 0.9 * measured)
        return response

    async def call_model(self, provider: Provider, request: ModelRequest) -> ModelResponse:
        """One call, on the record whatever happens: answered, failed (with each try), or cut
        off by the episode's timeout (`error = "timeout"`)."""
        # Masked here, not in the writer: the digest is taken where the blob is put (on a Ray
        # worker, by its relay), and imports' blobs, the writer's other ones, stay exact.
        body = self.secrets.mask_json(request.record())
        request_sha256 = await self.writer.put_blob(body, "application/json")
        started_at, clock = utc_now_millis_iso(), time.monotonic()
        self.tally.model_calls += 1

        def failed(error: str, retries: list[dict[str, Any]]) -> ModelCalled:
            return ModelCalled(
                stage=request.stage, provider=provider.name, model=provider.model, request_sha256=request_sha256,
                latency_ms=round((time.monotonic() - clock) * 1000, 3), retries=retries,
                error=redact(error), started_at=started_at, finished_at=utc_now_millis_iso(),
            )

        try:
            response = await provider.complete(request)
        except ContextLengthExceeded as exc:
            hinted = self._image_hint(request, exc)
            await self.recorder.emit(failed(str(hinted or exc), exc.retries))
            if hinted is not None:
                raise hinted from None
            raise
        except ProviderError as exc:
            # The failed call and each of its tries stay on the record, not only in the error text.
            await self.recorder.emit(failed(str(exc), exc.retries))
            raise
        except anyio.get_cancelled_exc_class():
            if self._deadline is not None and anyio.current_time() >= self._deadline.deadline:
                with anyio.CancelScope(shield=True):
                    await self.recorder.emit(failed("timeout", []))
            raise
        usage, most = response.usage, 2**63 - 1  # each count is within a BIGINT; their sum is kept there
        self.tally.usage = TokenUsage(
            prompt_tokens=min(most, self.tally.usage.prompt_tokens + usage.prompt_tokens),
            completion_tokens=min(most, self.tally.usage.completion_tokens + usage.completion_tokens),
            total_tokens=min(most, self.tally.usage.total_tokens + usage.total_tokens),
        )
        await self.recorder.emit(
            ModelCalled(
                stage=request.stage,
                provider=provider.name,
                model=provider.model,
                request_sha256=request_sha256,
                content=response.content,
                reasoning=response.reasoning,
                tool_calls=response.tool_calls,
                usage=usage,
                latency_ms=round((time.monotonic() - clock) * 1000, 3),
                retries=response.retries,
                structured_output=response.structured_output,
                finish_reason=response.finish_reason,
                started_at=started_at,
                finished_at=utc_now_millis_iso(),
            )
        )
        return response

    def _image_hint(self, request: ModelRequest, exc: ContextLengthExceeded) -> ProviderError | None:
        """A length rejection the image caused (the text alone fits): an error that says so
        and what to run instead."""
        if not _has_image(request.messages):
            return None
        text_tokens = round(_text_chars(request.messages, request.tools) / CHARS_PER_TOKEN)
        if exc.window is not None and text_tokens > exc.window // 2:
            return None  # the text alone is most of the window: shortening is the remedy
        template = VLM_IMAGE_TOO_LARGE if request.stage == "perception" else IMAGE_TOO_LARGE
        hinted = ProviderError(template.format(window=f" ({exc.window} tokens)" if exc.window else "", message=exc.message))
        hinted.retries = exc.retries
        return hinted


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
