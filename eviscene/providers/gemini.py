"""Gemini (`interactions` wire): the public `generateContent` REST API,
`POST {base_url}/models/{model}:generateContent` with the key in `x-goog-api-key` (never in
the URL, so it cannot leak through a logged URL).

Messages become `contents` (role `model` for the assistant; the system prompt becomes
`systemInstruction`), the image an `inlineData` part, tool calls `functionCall` parts and
observations `functionResponse` parts; tools go as `functionDeclarations` with their JSON
Schemas narrowed to Gemini's OpenAPI subset. Thinking per stage: a level sets
`thinkingConfig.thinkingLevel`, `on` only asks for thoughts, `off` sets a zero budget; thought
parts come back as reasoning. Gemini signs its function calls (`thoughtSignature`); the
signature is kept per call id and sent back with the call, as multi-turn tool use requires.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from eviscene.agent.provider import ModelRequest, ModelResponse, ProviderError, text_of
from eviscene.events import TokenUsage
from eviscene.providers.wire import WireProvider, finish_reason, tool_arguments, tool_call, tool_names_by_call_id

_SIGNATURES_KEPT = 4096
_SCHEMA_KEYS = {
    "type", "format", "title", "description", "nullable", "enum", "items", "properties", "required",
    "minItems", "maxItems", "minLength", "maxLength", "minProperties", "maxProperties",
    "minimum", "maximum", "pattern", "anyOf", "propertyOrdering", "default", "example",
}


def gemini_schema(schema: Any) -> Any:
    """A JSON Schema narrowed to Gemini's `Schema` (OpenAPI subset, upper-case type names);
    keys it does not know, such as `additionalProperties`, are dropped."""
    if not isinstance(schema, dict):
        return schema
    narrowed: dict[str, Any] = {}
    for key, value in schema.items():
        if key not in _SCHEMA_KEYS:
            continue
        if key == "type":
            narrowed[key] = value.upper() if isinstance(value, str) else value
        elif key == "properties":
            narrowed[key] = {name: gemini_schema(sub) for name, sub in value.items()}
        elif key == "items":
            narrowed[key] = gemini_schema(value)
        elif key == "anyOf":
            narrowed[key] = [gemini_schema(sub) for sub in value]
        else:
            narrowed[key] = value
    return narrowed


class GeminiProvider(WireProvider):
    wire_api = "interactions"

    def __init__(self, **kwargs: Any):
        super().__init__(**kwargs)
        self._signatures: OrderedDict[str, str] = OrderedDict()

    structured_fields = ("response_format", "responseSchema", "response_schema", "responseMimeType", "response_mime_type")

    def build(self, request: ModelRequest, form: str | None = None) -> tuple[str, dict[str, Any]]:
        system = [text_of(m.get("content")) for m in request.messages if m["role"] == "system"]
        body: dict[str, Any] = {"contents": self._contents(request.messages)}
        if system:
            body["systemInstruction"] = {"parts": [{"text": "\n\n".join(system)}]}
        if request.tools:
            body["tools"] = [
                {
                    "functionDeclarations": [
                        {
                            "name": spec["function"]["name"],
                            "description": spec["function"].get("description", ""),
                            "parameters": gemini_schema(spec["function"]["parameters"]),
                        }
                        for spec in request.tools
                    ]
                }
            ]
            body["toolConfig"] = {"functionCallingConfig": {"mode": "AUTO"}}
        config: dict[str, Any] = {"seed": request.sampling_seed}
        if form in ("json_schema", "json_object"):
            config["responseMimeType"] = "application/json"
        if form == "json_schema":
            config["responseSchema"] = gemini_schema(request.response_schema)
        limit = self.max_tokens.get(request.stage)
        if limit:
            config["maxOutputTokens"] = limit
        thinking = self.thinking.get(request.stage)
        if thinking == "off":
            config["thinkingConfig"] = {"thinkingBudget": 0}
        elif thinking == "on":
            config["thinkingConfig"] = {"includeThoughts": True}
        elif thinking:
            config["thinkingConfig"] = {"thinkingLevel": thinking, "includeThoughts": True}
        body["generationConfig"] = config
        return f"models/{self.model.removeprefix('models/')}:generateContent", body

    def _contents(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        names = tool_names_by_call_id(messages)
        contents: list[dict[str, Any]] = []
        for message in messages:
            role = message["role"]
            if role == "system":
                continue
            if role == "tool":
                part = {
                    "functionResponse": {
                        "id": message["tool_call_id"],
                        "name": names.get(message["tool_call_id"], ""),
                        "response": {"result": text_of(message.get("content"))},
                    }
                }
                # All observations of one model turn answer it together, in one content.
                if contents and contents[-1]["role"] == "user" and "functionResponse" in contents[-1]["parts"][0]:
                    contents[-1]["parts"].append(part)
                else:
                    contents.append({"role": "user", "parts": [part]})
            elif role == "assistant":
                parts: list[dict[str, Any]] = []
                if text_of(message.get("content")):
                    parts.append({"text": text_of(message.get("content"))})
                for call in message.get("tool_calls") or []:
                    part = {"functionCall": {"id": call["id"], "name": call["function"]["name"], "args": tool_arguments(call["function"]["arguments"])}}
                    signature = self._signatures.get(call["id"])
                    if signature:
                        part["thoughtSignature"] = signature
                    parts.append(part)
                contents.append({"role": "model", "parts": parts or [{"text": ""}]})
            else:
                contents.append({"role": "user", "parts": self._parts(message.get("content"))})
        return contents

    def _parts(self, content: Any) -> list[dict[str, Any]]:
        if not isinstance(content, list):
            return [{"text": text_of(content)}]
        parts = []
        for part in content:
            if part.get("type") == "image_url":
                mime, data = self.image(part["image_url"]["url"])
                parts.append({"inlineData": {"mimeType": mime, "data": data}})
            else:
                parts.append({"text": part.get("text", "")})
        return parts

    def parse(self, answer: dict[str, Any], taken_ids: set[str]) -> ModelResponse:
        candidates = answer.get("candidates") or []
        if not candidates:
            blocked = (answer.get("promptFeedback") or {}).get("blockReason")
            raise ProviderError(f"{self.client.label}: no candidates" + (f" (prompt blocked: {blocked})" if blocked else ""))
        texts, thoughts, calls = [], [], []
        for part in (candidates[0].get("content") or {}).get("parts") or []:
            if "functionCall" in part:
                call = part["functionCall"]
                request = tool_call(call.get("id"), call.get("name"), call.get("args"), taken_ids)
                calls.append(request)
                if part.get("thoughtSignature"):
                    self._remember(request.id, part["thoughtSignature"])
            elif part.get("thought"):
                thoughts.append(part.get("text", ""))
            elif "text" in part:
                texts.append(part["text"])
        usage = answer.get("usageMetadata") or {}
        return ModelResponse(
            content="".join(texts),
            reasoning="\n\n".join(t for t in thoughts if t),
            tool_calls=calls,
            finish_reason=finish_reason(candidates[0].get("finishReason"), calls),
            usage=TokenUsage(
                prompt_tokens=usage.get("promptTokenCount") or 0,
                completion_tokens=(usage.get("candidatesTokenCount") or 0) + (usage.get("thoughtsTokenCount") or 0),
                total_tokens=usage.get("totalTokenCount") or 0,
            ),
        )

    def _remember(self, call_id: str, signature: str) -> None:
        self._signatures[call_id] = signature
        while len(self._signatures) > _SIGNATURES_KEPT:
            self._signatures.popitem(last=False)

