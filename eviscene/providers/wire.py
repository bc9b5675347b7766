"""What the three wire providers share: the HTTP client, the run's images, per-stage
thinking, structured-output and `max_tokens` settings, and reading tool-call arguments.

Structured output negotiates: a stage with a response schema asks for the strongest form
first (`json_schema`, then `json_object` with the schema where the wire takes one, then plain
text with the schema in the prompt, validated by the caller) and steps down when the server
rejects the request naming `response_format` (or the wire's own field); the form that worked
is kept for the provider's later calls, and a stage pinned by the profile never steps down.

A wire provider turns the loop's Chat Completions-shaped messages into its wire format,
POSTs it through `JsonClient` and reads the answer back into a `ModelResponse`. The loop's
tool messages carry a `data` key for programmatic policies; no wire format sends it.
"""

from __future__ import annotations

import base64
import io
import json
import reprlib
import uuid
from collections import OrderedDict
from typing import Any, ClassVar

import anyio
import orjson
from pydantic import ValidationError

from eviscene.agent.provider import IMAGE_URL_PREFIX, ImageStore, ModelRequest, ModelResponse, ProviderError, RequestRejected
from eviscene.events import ToolCallRequest
from eviscene.providers.http import Endpoint, JsonClient
from eviscene.providers.profiles import STRUCTURED_OUTPUT_FORMS
from eviscene.redaction import KnownSecrets, mask_key_shapes
from eviscene.rules.canonical import canonical_json_bytes, readable_json
from eviscene.rules.jsonl import parse_json
from eviscene.tools.specs import RAW_ARGUMENTS

SCHEMA_IN_PROMPT = "Answer with one JSON object and nothing else. It must follow this JSON Schema:\n{schema}"

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
        structured_output: dict[str, str] | None = None,
        max_tokens: dict[str, int] | None = None,
        context_window: int | None = None,
    ):
        self.name, self.model = name, model
        self.endpoint = endpoint
        self.thinking = dict(thinking or {})
        self.extra_body = dict(extra_body or {})
        self.pinned_forms = dict(structured_output or {})  # stage -> form the profile pins
        self.max_tokens = dict(max_tokens or {})
        self.context_window = context_window  # tokens; the loop learns it from a rejection when unset
        self._forms: dict[str, str] = {}  # stage -> the form this server took
        self.images = images or ImageStore()
        self.client = JsonClient(endpoint, label=f"{name} ({self.wire_api}, model {model})")
        self.secrets = KnownSecrets(encoded=True)  # after the client registered the key: it is one of them
        self._data_urls: OrderedDict[str, str] = OrderedDict()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, model={self.model!r}, base_url={self.endpoint.base_url!r})"

    async def complete(self, request: ModelRequest) -> ModelResponse:
        await self._prepare_images(request)
        form = self.structured_form(request.stage) if request.response_schema is not None else None
        refused: list[dict[str, Any]] = []  # each form the server rejected, as a retry record
        while True:
            path, body = self.build(request if form != "text" else _schema_in_prompt(request), form)
            try:
                answer, retries = await self.client.post(path, {**body, **self.extra_body})
                break
            except RequestRejected as exc:
                weaker = self._weaker_form(request.stage, form, exc.message)
                if weaker is None:
                    exc.retries = refused + list(getattr(exc, "retries", []))
                    raise
                refused.append({"status": exc.status, "error": str(exc), "waited_seconds": 0.0, "structured_output": form})
                self._forms[request.stage] = form = weaker
        try:
            # A server may echo the key it was sent in any field: none is read unmasked.
            response = self.parse(self.secrets.mask(answer), set(tool_names_by_call_id(request.messages)))
        except ValidationError as exc:  # a field out of its range (a negative token count)
            problems = "; ".join(f"{'.'.join(map(str, e['loc']))} {reprlib.repr(e['input'])}: {e['msg']}" for e in exc.errors())
            raise ProviderError(self.client.redact(f"{self.client.label}: unexpected response shape ({problems})")) from None
        except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
            raise ProviderError(self.client.redact(f"{self.client.label}: unexpected response shape ({type(exc).__name__}: {exc})")) from None
        return response.model_copy(update={
            "content": mask_key_shapes(response.content),
            "reasoning": mask_key_shapes(response.reasoning),
            "tool_calls": [call.model_copy(update={"arguments": mask_key_shapes(call.arguments)}) for call in response.tool_calls],
            "retries": refused + retries,
            "structured_output": form,
        })

    def structured_form(self, stage: str) -> str:
        """The form a schema stage asks for next: pinned, else the strongest not yet refused."""
        return self.pinned_forms.get(stage) or self._forms.get(stage) or STRUCTURED_OUTPUT_FORMS[0]

    def _weaker_form(self, stage: str, form: str | None, message: str) -> str | None:
        if form is None or stage in self.pinned_forms or form == STRUCTURED_OUTPUT_FORMS[-1]:
            return None
        if not any(field in message for field in self.structured_fields):
            return None
        return STRUCTURED_OUTPUT_FORMS[STRUCTURED_OUTPUT_FORMS.index(form) + 1]

    structured_fields: ClassVar[tuple[str, ...]] = ("response_format",)
    """Request fields whose naming in a rejection means the structured-output form was refused."""

    async def aclose(self) -> None:
        await self.client.aclose()

    async def __aenter__(self) -> "WireProvider":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def build(self, request: ModelRequest, form: str | None = None) -> tuple[str, dict[str, Any]]:
        """The path under the base URL and the JSON body of one request; `form` is the
        structured-output form of a schema stage (None without a schema)."""
        raise NotImplementedError

    def parse(self, answer: dict[str, Any], taken_ids: set[str]) -> ModelResponse:
        """The answer as a ModelResponse; `taken_ids` are the tool-call ids the conversation
        already holds (new calls must not reuse one)."""
        raise NotImplementedError

    # -- helpers for subclasses ---------------------------------------------------------------

    def image(self, url: str) -> tuple[str, str]:
        """(media type, base64 data) of an image URL: `image://sha256:` from the run's images,
        or a `data:` URL as it is."""
        header, _, data = self.data_url(url).partition(",")
        return header.removeprefix("data:").split(";")[0] or "application/octet-stream", data

    def data_url(self, url: str) -> str:
        """The image as a `data:` URL. The run's last few are kept whole: every call of an
        episode sends its picture again, and building a ~130 kB string per call cost ~5% of
        the event loop's time at 256 episodes in flight."""
        if url.startswith("data:"):
            return url
        cached = self._data_urls.get(url)
        if cached is None:
            cached = self._keep_data_url(url, self._data_url_of(url, self._read(url)))
        else:
            self._data_urls.move_to_end(url)
        return cached

    async def _prepare_images(self, request: ModelRequest) -> None:
        """The request's pictures that need converting (`sendable_image`: a 12 MP TIFF takes
        ~0.7 s, which would hold every call on the event loop back) made into `data:` URLs in
        a thread, so that `build`, which follows with no wait between, finds them kept. A
        picture sent as it is stays on the loop: a thread for each held calls back more (p90
        +70 -> +250 ms at 256 in flight, bench/providers.py)."""
        for message in request.messages:
            content = message.get("content")
            for part in content if isinstance(content, list) else ():
                url = part.get("image_url", {}).get("url", "") if part.get("type") == "image_url" else ""
                if url.startswith(IMAGE_URL_PREFIX) and url not in self._data_urls:
                    raw = self._read(url)
                    made = (self._data_url_of(url, raw) if media_type(raw) is not None
                            else await anyio.to_thread.run_sync(self._data_url_of, url, raw))
                    self._keep_data_url(url, made)

    def _read(self, url: str) -> bytes:
        if not url.startswith(IMAGE_URL_PREFIX):
            raise ProviderError(f"{self.client.label}: cannot send image {url[:80]!r}: only image://sha256: and data: URLs are sent")
        try:
            return self.images.read(url)
        except KeyError:
            raise ProviderError(f"{self.client.label}: image {url} is not in the run's image store") from None

    def _data_url_of(self, url: str, raw: bytes) -> str:
        """`raw`, `url`'s picture, as a `data:` URL (`sendable_image`); touches nothing shared,
        so a worker thread may make it."""
        try:
            kind, sent = sendable_image(raw)
        except ValueError as exc:  # UndecodableImage, ImageTooLarge: the run's preflight decoded it
            raise ProviderError(f"{self.client.label}: cannot send image {url}: {exc}") from None
        return f"data:{kind};base64,{base64.b64encode(sent).decode('ascii')}"

    def _keep_data_url(self, url: str, data_url: str) -> str:
        self._data_urls[url] = data_url
        while len(self._data_urls) > _DATA_URL_CACHE:
            self._data_urls.popitem(last=False)
        return data_url


def _schema_in_prompt(request: ModelRequest) -> ModelRequest:
    """The request for a server that takes no structured-output field: the schema goes in
    the prompt, and the caller validates the answer against it."""
    schema = readable_json(request.response_schema)
    note = {"role": "user", "content": SCHEMA_IN_PROMPT.format(schema=schema)}
    return request.model_copy(update={"messages": [*request.messages, note]})


def media_type(raw: bytes) -> str | None:
    """The image's media type from its magic bytes, where it is one model APIs take (OpenAI's,
    Anthropic's and Gemini's all take these four); None for any other."""
    if raw.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if raw.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if raw[:4] == b"RIFF" and raw[8:12] == b"WEBP":
        return "image/webp"
    if raw.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    return None


CONVERTED_SIDE = 2048  # model APIs look at no more of a picture (OpenAI fits it in 2048 x 2048)


def sendable_image(raw: bytes) -> tuple[str, bytes]:
    """(media type, bytes) of a picture as a model API takes it: a JPEG, PNG, WebP or GIF as it
    is; one in another format the run reads (TIFF, BMP), which servers refuse (HTTP 400), as a
    PNG of it as the tools see it. The log keeps the release file's own sha256 (the request
    names `image://sha256:`): only what crosses the wire is converted."""
    kind = media_type(raw)
    if kind is not None:
        return kind, raw
    from eviscene.tools.images import open_image  # the image tools' imports (NumPy, imagehash), for a picture to convert only

    picture, _ = open_image(io.BytesIO(raw), max_side=CONVERTED_SIDE)
    png = io.BytesIO()
    picture.save(png, "PNG")
    return "image/png", png.getvalue()


def tool_arguments(raw: Any) -> dict[str, Any]:
    """Arguments as the model wrote them: a JSON object string (or an object) becomes a dict;
    anything else is kept verbatim under `_raw`, which the toolbox refuses as "the arguments
    are not valid JSON", so the model is told and the episode goes on. Strict JSON only (no
    NaN or Infinity, no repeated key), and only what the log's canonical JSON keeps exactly:
    an integer past 64 bits, an infinite float or nesting past 254 levels is kept as text."""
    if isinstance(raw, dict):
        return raw if _kept_exactly(raw) else {RAW_ARGUMENTS: _as_text(raw)}
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}
    if isinstance(raw, str):
        try:
            parsed = parse_json(raw)
        except ValueError:
            return {RAW_ARGUMENTS: raw}
        return parsed if isinstance(parsed, dict) and _kept_exactly(parsed) else {RAW_ARGUMENTS: raw}
    return {RAW_ARGUMENTS: _as_text(raw)}


def _kept_exactly(value: dict[str, Any]) -> bool:
    """Whether `canonical_json` writes `value` and reads back the same: orjson refuses
    integers past 64 bits and nesting past 254 levels, and writes an infinite float as null."""
    try:
        return orjson.loads(canonical_json_bytes(value)) == value
    except TypeError:  # orjson.JSONEncodeError is one
        return False


def _as_text(raw: Any) -> str:
    try:
        return json.dumps(raw, ensure_ascii=False)
    except (RecursionError, TypeError, ValueError):
        return reprlib.repr(raw)


def tool_call(call_id: Any, name: Any, arguments: Any, taken_ids: set[str]) -> ToolCallRequest:
    """A tool call as the loop records it. Ids are unique within an episode: a call without
    one, or reusing one (some servers number calls per turn), gets a fresh id."""
    wanted = str(call_id) if call_id else ""
    unique = wanted if wanted and wanted not in taken_ids else f"call_{uuid.uuid4().hex[:24]}"
    taken_ids.add(unique)
    return ToolCallRequest(id=unique, name=str(name or ""), arguments=tool_arguments(arguments))


# A wire's own word for why an answer ended, in the Chat Completions words `model.called` keeps.
_FINISH_WORDS = {
    "max_tokens": "length", "max_output_tokens": "length",
    "safety": "content_filter", "recitation": "content_filter", "blocklist": "content_filter",
    "prohibited_content": "content_filter", "spii": "content_filter", "image_safety": "content_filter",
    "finish_reason_unspecified": "",
}


def finish_reason(word: Any, tool_calls: list[ToolCallRequest]) -> str:
    """`word` in the Chat Completions words: a natural end is `tool_calls` when the answer
    asks for tools, `stop` otherwise; the token limit is `length`; a safety or recitation
    block is `content_filter`; any other word is kept, lower case."""
    word = str(word or "").strip().lower()
    if word in ("stop", "completed"):
        return "tool_calls" if tool_calls else "stop"
    return _FINISH_WORDS.get(word, word)


def tool_names_by_call_id(messages: list[dict[str, Any]]) -> dict[str, str]:
    """Which function each tool-call id called (wire formats that answer by name need it)."""
    return {
        call["id"]: call["function"]["name"]
        for message in messages
        if message.get("role") == "assistant"
        for call in message.get("tool_calls") or []
    }
