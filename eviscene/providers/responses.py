"""OpenAI Responses (`POST {base_url}/responses`), stateless (`store: false`): the whole
conversation goes as input items every call — messages, `function_call` items for the
model's earlier calls and `function_call_output` items for the observations.

Thinking per stage: an effort level sets `reasoning.effort` with `summary: auto`; `on` asks
for the summary only; `off` sends no reasoning settings. The answer's reasoning items
(summaries, or the reasoning text open models return) become the response's reasoning.
The Responses API has no sampling seed; `extra_body` can add one for servers that take it.
"""

from __future__ import annotations

from typing import Any

from eviscene.agent.provider import ModelRequest, ModelResponse, ProviderError, text_of
from eviscene.events import TokenUsage
from eviscene.providers.wire import WireProvider, finish_reason, tool_call


class ResponsesProvider(WireProvider):
    wire_api = "responses"

    structured_fields = ("response_format", "text.format", "'text'", "json_schema")

    def build(self, request: ModelRequest, form: str | None = None) -> tuple[str, dict[str, Any]]:
        body: dict[str, Any] = {"model": self.model, "input": self._items(request.messages), "store": False}
        if request.tools:
            body["tools"] = [
                {
                    "type": "function",
                    "name": spec["function"]["name"],
                    "description": spec["function"].get("description", ""),
                    "parameters": spec["function"]["parameters"],
                    "strict": False,
                }
                for spec in request.tools
            ]
            body["tool_choice"] = "auto"
        if form == "json_schema":
            body["text"] = {"format": {"type": "json_schema", "name": "judgment", "schema": request.response_schema, "strict": False}}
        elif form == "json_object":
            body["text"] = {"format": {"type": "json_object"}}
        limit = self.max_tokens.get(request.stage)
        if limit:
            body["max_output_tokens"] = limit
        thinking = self.thinking.get(request.stage)
        if thinking and thinking != "off":
            body["reasoning"] = {"summary": "auto"} if thinking == "on" else {"effort": thinking, "summary": "auto"}
        return "responses", body

    def _items(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        for message in messages:
            role = message["role"]
            if role == "tool":
                items.append({"type": "function_call_output", "call_id": message["tool_call_id"], "output": text_of(message.get("content"))})
            elif role == "assistant":
                text = text_of(message.get("content"))
                if text:
                    items.append({"type": "message", "role": "assistant", "content": text})
                for call in message.get("tool_calls") or []:
                    items.append(
                        {"type": "function_call", "call_id": call["id"], "name": call["function"]["name"], "arguments": call["function"]["arguments"]}
                    )
            else:
                items.append({"type": "message", "role": role, "content": self._content(message.get("content"))})
        return items

    def _content(self, content: Any) -> list[dict[str, Any]]:
        if not isinstance(content, list):
            return [{"type": "input_text", "text": text_of(content)}]
        parts = []
        for part in content:
            if part.get("type") == "image_url":
                parts.append({"type": "input_image", "image_url": self.data_url(part["image_url"]["url"]), "detail": "auto"})
            else:
                parts.append({"type": "input_text", "text": part.get("text", "")})
        return parts

    def parse(self, answer: dict[str, Any], taken_ids: set[str]) -> ModelResponse:
        if answer.get("status") == "failed" or answer.get("error"):
            error = answer.get("error") or {}
            raise ProviderError(self.client.redact(f"{self.client.label}: the response failed: {error.get('code', '')} {error.get('message', '')}".rstrip()))
        texts, reasoning, calls = [], [], []
        for item in answer.get("output") or []:
            kind = item.get("type")
            if kind == "message":
                for part in item.get("content") or []:
                    if part.get("type") == "output_text":
                        texts.append(part.get("text", ""))
                    elif part.get("type") == "refusal":
                        texts.append(part.get("refusal", ""))
            elif kind == "reasoning":
                reasoning += [s.get("text", "") for s in item.get("summary") or []]
                reasoning += [c.get("text", "") for c in item.get("content") or [] if c.get("type") == "reasoning_text"]
            elif kind == "function_call":
                calls.append(tool_call(item.get("call_id") or item.get("id"), item.get("name"), item.get("arguments"), taken_ids))
        usage = answer.get("usage") or {}
        # An incomplete answer names why in incomplete_details (the token limit, a filter).
        ended = (answer.get("incomplete_details") or {}).get("reason") if answer.get("status") == "incomplete" else answer.get("status")
        return ModelResponse(
            content="".join(texts),
            reasoning="\n\n".join(r for r in reasoning if r),
            tool_calls=calls,
            finish_reason=finish_reason(ended, calls),
            usage=TokenUsage(
                prompt_tokens=usage.get("input_tokens") or 0,
                completion_tokens=usage.get("output_tokens") or 0,
                total_tokens=usage.get("total_tokens") or 0,
            ),
        )
