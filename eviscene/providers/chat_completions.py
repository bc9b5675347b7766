"""OpenAI-compatible Chat Completions (`POST {base_url}/chat/completions`): OpenAI, vLLM,
SGLang, lmdeploy, Ollama.

Thinking per stage: `on`/`off` sets `chat_template_kwargs.enable_thinking` (Qwen on vLLM,
SGLang, lmdeploy); an effort level (`minimal`…`high`) sets `reasoning_effort` (OpenAI).
Reasoning comes back as `reasoning_content` (vLLM, SGLang) or `reasoning` (Ollama, newer
vLLM), or inline as a leading `<think>…</think>` block when the server parses none.
"""

from __future__ import annotations

import re
from typing import Any

from eviscene.agent.provider import ModelRequest, ModelResponse, text_of
from eviscene.events import TokenUsage
from eviscene.providers.wire import (
    WireProvider,
    finish_reason,
    tool_call,
    tool_names_by_call_id,
)

ON_OFF = ("on", "off")
_THINK = re.compile(r"^\s*(?:<think>)?(.*?)</think>\s*", re.DOTALL)


class ChatCompletionsProvider(WireProvider):
    wire_api = "chat_completions"

    def __init__(self, *, send_reasoning: bool = False, tool_results: str = "tool", **kwargs: Any):
        super().__init__(**kwargs)
        # Most chat templates drop earlier turns' reasoning and some servers refuse the field.
        self.send_reasoning = send_reasoning
        # Some drop `tool` messages whole (llama-cpp-python's chatml-function-calling): "user"
        # sends each result as a user message naming its call, which every template shows.
        self.tool_results = tool_results

    def build(self, request: ModelRequest, form: str | None = None) -> tuple[str, dict[str, Any]]:
        names = tool_names_by_call_id(request.messages) if self.tool_results == "user" else {}
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [self._message(m, names) for m in request.messages],
            "seed": request.sampling_seed,
        }
        if request.tools:
            body["tools"] = request.tools
            body["tool_choice"] = "auto"
        if form == "json_schema":
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "judgment", "schema": request.response_schema, "strict": False},
            }
        elif form == "json_object":
            # llama.cpp's server constrains the output to `schema`; OpenAI's ignores it.
            body["response_format"] = {"type": "json_object", "schema": request.response_schema}
        limit = self.max_tokens.get(request.stage)
        if limit:
            # OpenAI's reasoning models refuse `max_tokens`; the servers that copy the API take both.
            body["max_completion_tokens" if self.name == "openai" else "max_tokens"] = limit
        thinking = self.thinking.get(request.stage)
        if thinking in ON_OFF:
            body["chat_template_kwargs"] = {"enable_thinking": thinking == "on"}
        elif thinking:
            body["reasoning_effort"] = thinking
        return "chat/completions", body

    def _message(self, message: dict[str, Any], names: dict[str, str]) -> dict[str, Any]:
        role = message["role"]
        if role == "tool" and self.tool_results == "user":
            call_id = message["tool_call_id"]
            return {"role": "user", "content": f"Result of {names.get(call_id, 'the tool')} (call {call_id}):\n{text_of(message.get('content'))}"}
        if role == "tool":
            return {"role": "tool", "tool_call_id": message["tool_call_id"], "content": text_of(message.get("content"))}
        if role == "assistant":
            wire: dict[str, Any] = {"role": "assistant", "content": text_of(message.get("content"))}
            if message.get("tool_calls"):
                wire["tool_calls"] = [
                    {"id": c["id"], "type": "function", "function": {"name": c["function"]["name"], "arguments": c["function"]["arguments"]}}
                    for c in message["tool_calls"]
                ]
            if self.send_reasoning and message.get("reasoning_content"):
                wire["reasoning_content"] = message["reasoning_content"]
            return wire
        content = message.get("content")
        if isinstance(content, list):
            content = [self._part(part) for part in content]
        return {"role": role, "content": content if content is not None else ""}

    def _part(self, part: dict[str, Any]) -> dict[str, Any]:
        if part.get("type") == "image_url":
            image = part["image_url"]
            wire = {"url": self.data_url(image["url"])}
            if image.get("detail"):
                wire["detail"] = image["detail"]
            return {"type": "image_url", "image_url": wire}
        return {"type": "text", "text": part.get("text", "")}

    def parse(self, answer: dict[str, Any], taken_ids: set[str]) -> ModelResponse:
        choices = answer.get("choices") or []
        if not choices:
            raise ValueError("the answer has no choices")
        message = choices[0]["message"]
        content = text_of(message.get("content"))
        reasoning = message.get("reasoning_content") or message.get("reasoning") or ""
        if not reasoning and "</think>" in content:
            match = _THINK.match(content)
            if match:
                reasoning, content = match.group(1).strip(), content[match.end():]
        calls = [
            tool_call(call.get("id"), call["function"].get("name"), call["function"].get("arguments"), taken_ids)
            for call in message.get("tool_calls") or []
        ]
        usage = answer.get("usage") or {}
        return ModelResponse(
            content=content,
            reasoning=str(reasoning),
            tool_calls=calls,
            finish_reason=finish_reason(choices[0].get("finish_reason"), calls),
            usage=TokenUsage(
                prompt_tokens=usage.get("prompt_tokens") or 0,
                completion_tokens=usage.get("completion_tokens") or 0,
                total_tokens=usage.get("total_tokens") or 0,
            ),
        )
