"""Requests and endpoints for the provider tests (imported by name; pytest's conftest is
not a module to import from): a conversation shaped exactly as the agent loop builds it,
and endpoints with fast retries and a test key."""

from __future__ import annotations

from eviscene.agent import prompts
from eviscene.agent.episode import assistant_message, tool_message
from eviscene.agent.judgment import judgment_schema
from eviscene.agent.provider import ModelRequest, ModelResponse
from eviscene.events import PerceptionReported, ToolCallRequest
from eviscene.providers.http import Endpoint, RetryPolicy
from eviscene.tools.results import ToolOutcome
from eviscene.tools.specs import tool_spec

LABELS = ("authentic", "out_of_context", "manipulated", "unverifiable")
API_KEY = "sk-test-provider-0123456789abcdef"


def endpoint(url: str, **overrides) -> Endpoint:
    retry = RetryPolicy(max_retries=overrides.pop("max_retries", 2), backoff_seconds=overrides.pop("backoff_seconds", 0.01))
    return Endpoint(base_url=url, api_key=overrides.pop("api_key", API_KEY), retry=retry, **overrides)


def loop_conversation(image_url: str) -> list[dict]:
    """System, the case with its image, one tool round trip (tool messages carry `data`,
    assistant messages `reasoning_content`), then the judgment prompt: as `Episode` builds it."""
    report = PerceptionReported(backend="embedded-test", ocr_text="Floodwaters sweep through Porto Alegre 6 May 2024")
    call = ToolCallRequest(id="call-1", name="visit", arguments={"url": "https://example.org/a"})
    outcome = ToolOutcome(status="ok", observation="[ev-1] Example page, 2024-05-06", data={"results": [{"url": "https://example.org/a"}]})
    return [
        prompts.system_message(LABELS, 24),
        prompts.user_message(report, image_url),
        assistant_message(ModelResponse(content="", reasoning="Open the page first.", tool_calls=[call])),
        tool_message("call-1", outcome),
        prompts.judgment_message(LABELS),
    ]


def react_request(image_url: str, seed: int = 4242) -> ModelRequest:
    return ModelRequest(
        stage="unified_react",
        messages=loop_conversation(image_url)[:-1],
        tools=[tool_spec(name) for name in ("text_search", "visit")],
        sampling_seed=seed,
    )


def judgment_request(image_url: str, seed: int = 4242) -> ModelRequest:
    return ModelRequest(
        stage="unified_judgment", messages=loop_conversation(image_url), sampling_seed=seed, response_schema=judgment_schema(LABELS)
    )
