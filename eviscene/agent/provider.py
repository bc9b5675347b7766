"""The provider interface: every model backend (the offline policy, OpenAI-compatible,
Responses, Gemini) turns a ModelRequest into a ModelResponse. The loop never knows which.

Messages use the Chat Completions shape as the internal lingua franca. The case image
appears in them as an `image://sha256:<hex>` URL; a provider that sends images resolves it
to bytes with `ImageStore` when it builds its wire request, so requests stay small in the log.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Awaitable, Callable, Protocol

import orjson
from pydantic import BaseModel, Field

from eviscene.errors import BackendOutage
from eviscene.events import TokenUsage, ToolCallRequest
from eviscene.release.case_image import read_case_image
from eviscene.rules.canonical import canonical_json_bytes
from eviscene.rules.stages import Stage

IMAGE_URL_PREFIX = "image://sha256:"


class ModelRequest(BaseModel):
    stage: Stage
    messages: list[dict[str, Any]] = Field(description="Chat Completions messages.")
    tools: list[dict[str, Any]] = Field(default_factory=list, description="Function tool schemas; empty in the judgment stage.")
    sampling_seed: int = Field(description="The episode's seed; providers pass it as `seed`.")
    response_schema: dict[str, Any] | None = Field(None, description="JSON Schema the answer must follow (judgment stage).")

    def record(self) -> bytes:
        """The request as the log keeps it (the blob `model.called` cites):
        `canonical_json_bytes(self.model_dump(mode="json"))`. The dump copies every message
        first (~40 us a call on the event loop); orjson reads the fields as they are when they
        hold only plain JSON types, and anything else (a set, bytes, a datetime, a model, a
        subclass: pydantic's JSON form may differ from orjson's) takes the dump."""
        try:
            return orjson.dumps({name: getattr(self, name) for name in type(self).model_fields}, option=_AS_THEY_ARE)
        except TypeError:
            return canonical_json_bytes(self.model_dump(mode="json"))


_AS_THEY_ARE = orjson.OPT_SORT_KEYS | orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_SUBCLASS


class ModelResponse(BaseModel):
    content: str = ""
    reasoning: str = ""
    tool_calls: list[ToolCallRequest] = Field(default_factory=list)
    usage: TokenUsage = Field(default_factory=TokenUsage)
    retries: list[dict[str, Any]] = Field(default_factory=list, description="Failed tries before this answer.")
    structured_output: str | None = Field(None, description="The structured-output form the answer was asked in (schema stages).")
    finish_reason: str = Field("", description="Why the answer ended (`ModelCalled.finish_reason`'s words).")


class ProviderError(Exception):
    """The provider failed for good (after its retries); the episode ends as `error`.
    `retries` lists the failed tries, recorded on the call's `model.called` event."""

    retries: list[dict[str, Any]] = []


class RequestRejected(ProviderError):
    """The server refused this request as it is (400/404/422, or a 500 naming an invalid
    request field): sending it again cannot help, so it is never retried. `message` is the
    server's own words."""

    def __init__(self, reason: str, *, status: int, message: str):
        super().__init__(reason)
        self.status, self.message = status, message


class ContextLengthExceeded(RequestRejected):
    """The prompt and the completion budget do not fit the model's context window;
    `window` is the window the server named (None when it named none)."""

    def __init__(self, reason: str, *, status: int, message: str, window: int | None):
        super().__init__(reason, status=status, message=message)
        self.window = window


class ProviderOutage(BackendOutage):
    """A model endpoint stayed unreachable past the run's outage timeout."""


class CredentialsRefused(BackendOutage):
    """A model endpoint answered 401 or 403: it refuses the run's key (or its lack), so it
    would refuse every call of the run alike; failing each episode in turn would only fill
    the log with errors that `--retry-errors` must run again."""

    resume_when = "with a key the server takes"


class Provider(Protocol):
    name: str
    model: str

    async def complete(self, request: ModelRequest) -> ModelResponse: ...


def text_of(content: Any) -> str:
    """The text of a Chat Completions message content: a string, or the text parts of a list."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "\n".join(part.get("text", "") for part in content if isinstance(part, dict) and part.get("type") == "text")


CallModel = Callable[[Provider, ModelRequest], Awaitable[ModelResponse]]
"""Make one model call and record it as a `model.called` event of the calling episode."""


class ImageStore:
    """Case images by sha256, for providers that send the image itself. It keeps paths, not
    bytes (a run may hold thousands of images), and reads each as a checked case image (the
    one its episode holds: read_case_image): the model is sent only bytes that hash to the
    URL's sha256 (CaseImageChanged otherwise, which ends the episode)."""

    def __init__(self) -> None:
        self._paths: dict[str, Path] = {}

    def add(self, sha256: str, path: Path) -> str:
        self._paths[sha256] = path
        return IMAGE_URL_PREFIX + sha256

    def read(self, url: str) -> bytes:
        sha256 = url.removeprefix(IMAGE_URL_PREFIX)
        return read_case_image(self._paths[sha256], sha256).data
