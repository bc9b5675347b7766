"""What the three wire providers share: the HTTP client, the run's images, per-stage
thinking settings, and reading tool-call arguments.

A wire provider turns the loop's Chat Completions-shaped messages into its wire format,
POSTs it through `JsonClient` and reads the answer back into a `ModelResponse`. The loop's
tool messages carry a `data` key for programmatic policies; no wire format sends it.
"""

from __future__ import annotations

import base64
import json
import uuid
from collections import OrderedDict
from typing import Any, ClassVar

from eviscene.agent.provider import IMAGE_URL_PREFIX, ImageStore, ModelRequest, ModelResponse, ProviderError
from eviscene.events import ToolCallRequest
from eviscene.providers.http import Endpoint, JsonClient

RAW_ARGUMENTS = "_raw"
"""Key holding tool-call arguments that were not a JSON object: the toolbox refuses them as
invalid, so the model is told, and the episode goes on."""

_DATA_URL_CACHE = 16


class WireProvider:
    """Base of the HTTP providers. `name` is the provider id recorded on `model.called`."""

    wire_api: ClassVar[str]

    def __init__(
        self,
        *,
        name: str,
        model: str,
        endpoint: Endpoint,
        thinking: dict[str, str] | None = None,
        extra_body: dict[str, Any] | None = None,
        images: ImageStore | None = None,
    ):
        self.name, self.model = name, model
        self.endpoint = endpoint
        self.thinking = dict(thinking or {})
        self.extra_body = dict(extra_body or {})
        self.images = images or ImageStore()
        self.client = JsonClient(endpoint, label=f"{name} ({self.wire_api}, model {model})")
        self._data_urls: OrderedDict[str, tuple[str, str]] = OrderedDict()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, model={self.model!r}, base_url={self.endpoint.base_url!r})"

    async def complete(self, request: ModelRequest) -> ModelResponse:
        path, body = self.build(request)
        answer, retries = await self.client.post(path, {**body, **self.extra_body})
        try:
            response = self.parse(answer, set(tool_names_by_call_id(request.messages)))
        except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
            raise ProviderError(self.client.redact(f"{self.client.label}: unexpected response shape ({type(exc).__name__}: {exc})")) from None
        return response.model_copy(update={"retries": retries})

    async def aclose(self) -> None:
        await self.client.aclose()

    async def __aenter__(self) -> "WireProvider":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def build(self, request: ModelRequest) -> tuple[str, dict[str, Any]]:
        """The path under the base URL and the JSON body of one request."""
        raise NotImplementedError

    def parse(self, answer: dict[str, Any], taken_ids: set[str]) -> ModelResponse:
        """The answer as a ModelResponse; `taken_ids` are the tool-call ids the conversation
        already holds (new calls must not reuse one)."""
        raise NotImplementedError

    # -- helpers for subclasses ---------------------------------------------------------------

    def image(self, url: str) -> tuple[str, str]:
        """(media type, base64 data) of an image URL: `image://sha256:` from the run's images,
        or a `data:` URL as it is."""
        if url.startswith("data:"):
            header, _, data = url.partition(",")
            return header.removeprefix("data:").split(";")[0] or "application/octet-stream", data
        if not url.startswith(IMAGE_URL_PREFIX):
            raise ProviderError(f"{self.client.label}: cannot send image {url[:80]!r}: only image://sha256: and data: URLs are sent")
        cached = self._data_urls.get(url)
        if cached is None:
            try:
                raw = self.images.read(url)
            except KeyError:
                raise ProviderError(f"{self.client.label}: image {url} is not in the run's image store") from None
            cached = (media_type(raw), base64.b64encode(raw).decode("ascii"))
            self._data_urls[url] = cached
            while len(self._data_urls) > _DATA_URL_CACHE:
                self._data_urls.popitem(last=False)
        else:
            self._data_urls.move_to_end(url)
        return cached

    def data_url(self, url: str) -> str:
        if url.startswith("data:"):
            return url
        mime, data = self.image(url)
        return f"data:{mime};base64,{data}"


def media_type(raw: bytes) -> str:
    """The image's media type from its magic bytes."""
    if raw.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if raw.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if raw[:4] == b"RIFF" and raw[8:12] == b"WEBP":
        return "image/webp"
    if raw.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    return "application/octet-stream"


def tool_arguments(raw: Any) -> dict[str, Any]:
    """Arguments as the model wrote them: a JSON object string (or an object) becomes a dict;
    anything else is kept verbatim under `_raw`, which the toolbox refuses as invalid."""
    if isinstance(raw, dict):
        return raw
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}
    if isinstance(raw, str):
        try:
            parsed = json.loads(raw)
        except ValueError:
            return {RAW_ARGUMENTS: raw}
        return parsed if isinstance(parsed, dict) else {RAW_ARGUMENTS: raw}
    return {RAW_ARGUMENTS: json.dumps(raw, ensure_ascii=False)}


def tool_call(call_id: Any, name: Any, arguments: Any, taken_ids: set[str]) -> ToolCallRequest:
    """A tool call as the loop records it. Ids are unique within an episode: a call without
    one, or reusing one (some servers number calls per turn), gets a fresh id."""
    wanted = str(call_id) if call_id else ""
    unique = wanted if wanted and wanted not in taken_ids else f"call_{uuid.uuid4().hex[:24]}"
    taken_ids.add(unique)
    return ToolCallRequest(id=unique, name=str(name or ""), arguments=tool_arguments(arguments))


def text_of(content: Any) -> str:
    """The text of a Chat Completions message content: a string, or the text parts of a list."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "\n".join(part.get("text", "") for part in content if isinstance(part, dict) and part.get("type") == "text")


def tool_names_by_call_id(messages: list[dict[str, Any]]) -> dict[str, str]:
    """Which function each tool-call id called (wire formats that answer by name need it)."""
    return {
        call["id"]: call["function"]["name"]
        for message in messages
        if message.get("role") == "assistant"
        for call in message.get("tool_calls") or []
    }
