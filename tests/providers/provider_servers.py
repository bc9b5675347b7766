"""Real HTTP servers on 127.0.0.1 for the provider tests, speaking each wire format.

`FakeServer` runs a `ThreadingHTTPServer` (HTTP/1.1, keep-alive) in a thread. A test gives
it a `respond(received) -> Reply` function; the server records every request, checks its
body against the official SDK types of the wire format (a mismatch is answered with a 400
that names it, so the provider under test fails loudly), and can misbehave on request:
delay, wrong status, Retry-After, a truncated or garbled body, a dropped connection.

Builders make answer bodies and validate them with the SDKs' response models, so what the
fake sends is what the real service sends.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

from google.genai import types as genai
from openai.types.chat import ChatCompletion
from openai.types.chat import completion_create_params as chat_params
from openai.types.responses import Response
from openai.types.responses import response_create_params as responses_params

from wire_types import Mismatch, check

# Fields vLLM and SGLang take beyond the OpenAI schema.
CHAT_SERVER_EXTRAS = {"chat_template_kwargs"}
_GEMINI_BODY = {
    "contents": None,
    "systemInstruction": genai.Content,
    "tools": genai.Tool,
    "toolConfig": genai.ToolConfig,
    "generationConfig": genai.GenerationConfig,
}


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    raw: bytes
    body: Any = None
    status_sent: int | None = None

    def images(self) -> list[bytes]:
        """Every base64 image in the body (data URLs and Gemini inline data), decoded."""
        text = self.raw.decode("utf-8")
        found = [base64.b64decode(m) for m in re.findall(r"data:image/[a-z]+;base64,([A-Za-z0-9+/=]+)", text)]
        found += [base64.b64decode(m) for m in re.findall(r'"data": ?"([A-Za-z0-9+/=]+)"', text)]
        return found

    def image_sha256s(self) -> set[str]:
        return {hashlib.sha256(image).hexdigest() for image in self.images()}


@dataclass
class Reply:
    status: int = 200
    body: Any = None  # a dict is sent as JSON; bytes/str as they are
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    cut_short: bool = False  # announce the full length, send half, close


class Script:
    """Replies in order; the last one repeats."""

    def __init__(self, *replies: Reply):
        self.replies = list(replies)
        self.lock = threading.Lock()

    def __call__(self, received: Received) -> Reply:
        with self.lock:
            return self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]


class FakeServer:
    def __init__(self, respond: Callable[[Received], Reply], *, wire: str = "chat_completions", port: int = 0):
        self.respond, self.wire = respond, wire
        self.received: list[Received] = []
        self.mismatches: list[str] = []
        self.in_flight = self.max_in_flight = 0
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("content-length", 0)))
                received = Received(self.path, {k.lower(): v for k, v in self.headers.items()}, raw)
                with server._lock:
                    server.received.append(received)
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                try:
                    reply = server._answer(received)
                    received.status_sent = reply.status
                    if reply.delay:
                        time.sleep(reply.delay)
                    self._send(reply)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)
                finally:
                    with server._lock:
                        server.in_flight -= 1

            def _send(self, reply: Reply) -> None:
                body = reply.body
                data = json.dumps(body).encode() if isinstance(body, (dict, list)) else (body.encode() if isinstance(body, str) else body or b"")
                self.send_response(reply.status)
                if "content-type" not in {name.lower() for name in reply.headers}:
                    self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                if reply.cut_short:
                    self.send_header("connection", "close")
                self.end_headers()
                self.wfile.write(data[: len(data) // 2] if reply.cut_short else data)
                self.wfile.flush()
                if reply.cut_short:
                    self.close_connection = True

        ThreadingHTTPServer.allow_reuse_address = True  # a restarted server takes its port back at once
        self.httpd = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self) -> "FakeServer":
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def _answer(self, received: Received) -> Reply:
        try:
            received.body = json.loads(received.raw)
            validate_request(self.wire, received.body)
        except (ValueError, Mismatch) as exc:
            self.mismatches.append(str(exc))
            return Reply(400, {"error": {"message": f"request does not follow the {self.wire} wire format: {exc}"}})
        return self.respond(received)


def validate_request(wire: str, body: dict[str, Any]) -> None:
    if wire == "chat_completions":
        standard = {k: v for k, v in body.items() if k not in CHAT_SERVER_EXTRAS}
        response_format = body.get("response_format")
        if isinstance(response_format, dict) and response_format.get("type") == "json_object" and "schema" in response_format:
            # llama.cpp's server (and vLLM) take a schema beside json_object.
            check(response_format["schema"], dict, "$.response_format.schema")
            standard["response_format"] = {"type": "json_object"}
        check(standard, chat_params.CompletionCreateParamsNonStreaming)
        if "chat_template_kwargs" in body:
            check(body["chat_template_kwargs"], dict[str, bool], "$.chat_template_kwargs")
    elif wire == "responses":
        check(body, responses_params.ResponseCreateParamsNonStreaming)
    elif wire == "interactions":
        unknown = sorted(set(body) - set(_GEMINI_BODY))
        if unknown:
            raise Mismatch(f"$: unknown generateContent fields {unknown}")
        try:
            for content in body["contents"]:
                genai.Content.model_validate(content)
            for key, model in _GEMINI_BODY.items():
                if model is None or key not in body:
                    continue
                for item in body[key] if isinstance(body[key], list) else [body[key]]:
                    model.model_validate(item)
        except Exception as exc:  # pydantic's ValidationError
            raise Mismatch(f"$: {exc}") from None
    else:
        raise ValueError(wire)


# -- answer bodies, validated with the SDKs' response models ----------------------------------


def chat_completion(
    content: str | None = "",
    *,
    tool_calls: list[tuple[str, str, str]] = (),
    reasoning_content: str | None = None,
    reasoning: str | None = None,
    usage: tuple[int, int] = (10, 5),
    finish_reason: str | None = None,
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = [{"id": i, "type": "function", "function": {"name": n, "arguments": a}} for i, n, a in tool_calls]
    if reasoning_content is not None:
        message["reasoning_content"] = reasoning_content
    if reasoning is not None:
        message["reasoning"] = reasoning
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason or ("tool_calls" if tool_calls else "stop"), "logprobs": None}],
        "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)},
    }
    ChatCompletion.model_validate(body)
    return body


def responses_response(
    *,
    text: str | None = None,
    calls: list[tuple[str, str, str]] = (),
    summary: str | None = None,
    usage: tuple[int, int] = (10, 5),
    status: str = "completed",
    error: dict | None = None,
    incomplete: str | None = None,
) -> dict[str, Any]:
    output: list[dict[str, Any]] = []
    if summary is not None:
        output.append({"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": summary}]})
    if text is not None:
        output.append(
            {
                "type": "message",
                "id": "msg_1",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        )
    for call_id, name, arguments in calls:
        output.append({"type": "function_call", "id": f"fc_{call_id}", "call_id": call_id, "name": name, "arguments": arguments, "status": "completed"})
    body = {
        "id": "resp_1",
        "object": "response",
        "created_at": 1_700_000_000,
        "model": "m",
        "status": "incomplete" if incomplete else status,
        "error": error,
        "incomplete_details": {"reason": incomplete} if incomplete else None,
        "instructions": None,
        "metadata": {},
        "output": output,
        "parallel_tool_calls": True,
        "temperature": 1.0,
        "tool_choice": "auto",
        "tools": [],
        "top_p": 1.0,
        "usage": {
            "input_tokens": usage[0],
            "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
            "output_tokens": usage[1],
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": sum(usage),
        },
    }
    Response.model_validate(body)
    return body


def gemini_response(
    *,
    text: str | None = None,
    thought: str | None = None,
    calls: list[tuple[str | None, str, dict, str | None]] = (),
    usage: tuple[int, int, int] = (10, 5, 3),
    block_reason: str | None = None,
    finish_reason: str = "STOP",
) -> dict[str, Any]:
    if block_reason:
        body: dict[str, Any] = {"promptFeedback": {"blockReason": block_reason}}
    else:
        parts: list[dict[str, Any]] = []
        if thought is not None:
            parts.append({"text": thought, "thought": True})
        if text is not None:
            parts.append({"text": text})
        for call_id, name, args, signature in calls:
            call: dict[str, Any] = {"name": name, "args": args}
            if call_id:
                call["id"] = call_id
            part: dict[str, Any] = {"functionCall": call}
            if signature:
                part["thoughtSignature"] = signature
            parts.append(part)
        body = {
            "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": finish_reason, "index": 0}],
            "usageMetadata": {
                "promptTokenCount": usage[0],
                "candidatesTokenCount": usage[1],
                "thoughtsTokenCount": usage[2],
                "totalTokenCount": sum(usage),
            },
            "modelVersion": "gemini-test",
        }
    genai.GenerateContentResponse.model_validate(body)
    return body
