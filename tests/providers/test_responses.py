"""OpenAI Responses against a real HTTP server that checks every request with the `openai`
SDK's `ResponseCreateParams` and answers with bodies its `Response` model accepts."""

from __future__ import annotations

import base64

import pytest

from eviscene.agent.provider import ProviderError
from eviscene.providers.responses import ResponsesProvider

from provider_requests import API_KEY, endpoint, judgment_request, react_request
from provider_servers import FakeServer, Reply, responses_response


def provider(server: FakeServer, images, **kwargs) -> ResponsesProvider:
    return ResponsesProvider(name="openai", model="m", endpoint=endpoint(server.url + "/v1"), images=images, **kwargs)


@pytest.mark.anyio
async def test_request_is_the_responses_wire_format(images, case_image):
    with FakeServer(lambda r: Reply(body=responses_response(text="ok")), wire="responses") as server:
        responses = provider(server, images, thinking={"unified_react": "high", "unified_judgment": "on"})
        url = images.add(case_image[1], case_image[0])
        await responses.complete(react_request(url))
        await responses.complete(judgment_request(url))
    assert server.mismatches == []
    react, judgment = (r.body for r in server.received)
    assert server.received[0].path == "/v1/responses"
    assert server.received[0].headers["authorization"] == f"Bearer {API_KEY}"
    assert react["store"] is False and react["reasoning"] == {"effort": "high", "summary": "auto"}
    items = react["input"]
    assert [i["type"] for i in items] == ["message", "message", "function_call", "function_call_output"]
    assert items[0]["role"] == "system" and items[1]["role"] == "user"
    image = items[1]["content"][1]
    assert image["type"] == "input_image" and base64.b64decode(image["image_url"].split(",", 1)[1]) == case_image[0].read_bytes()
    assert items[2] == {"type": "function_call", "call_id": "call-1", "name": "visit", "arguments": '{"url":"https://example.org/a"}'}
    assert items[3] == {"type": "function_call_output", "call_id": "call-1", "output": "[ev-1] Example page, 2024-05-06"}
    assert react["tools"][1] == {
        "type": "function",
        "name": "visit",
        "description": react["tools"][1]["description"],
        "parameters": react["tools"][1]["parameters"],
        "strict": False,
    }
    assert judgment["text"]["format"]["type"] == "json_schema" and judgment["text"]["format"]["name"] == "judgment"
    assert judgment["reasoning"] == {"summary": "auto"} and "tools" not in judgment


@pytest.mark.anyio
async def test_reads_reasoning_summaries_function_calls_text_and_usage(images, case_image):
    answer = responses_response(
        summary="Check the date against the caption.",
        text="Looking.",
        calls=[("call_x", "text_search", '{"query": "flood"}'), ("call_y", "visit", "not json")],
        usage=(200, 40),
    )
    with FakeServer(lambda r: Reply(body=answer), wire="responses") as server:
        response = await provider(server, images).complete(react_request(images.add(case_image[1], case_image[0])))
    assert response.reasoning == "Check the date against the caption." and response.content == "Looking."
    assert [(c.id, c.name, c.arguments) for c in response.tool_calls] == [
        ("call_x", "text_search", {"query": "flood"}),
        ("call_y", "visit", {"_raw": "not json"}),
    ]
    assert (response.usage.prompt_tokens, response.usage.completion_tokens, response.usage.total_tokens) == (200, 40, 240)


@pytest.mark.anyio
@pytest.mark.parametrize("answer, expected", [
    (responses_response(text="Done."), "stop"),
    (responses_response(calls=[("call_x", "text_search", '{"query": "flood"}')]), "tool_calls"),
    (responses_response(text='{"verdict": "auth', incomplete="max_output_tokens"), "length"),
    (responses_response(text="", incomplete="content_filter"), "content_filter"),
])
async def test_reads_why_the_answer_ended_in_chat_completions_words(answer, expected, images, case_image):
    with FakeServer(lambda r: Reply(body=answer), wire="responses") as server:
        response = await provider(server, images).complete(react_request(images.add(case_image[1], case_image[0])))
    assert response.finish_reason == expected


@pytest.mark.anyio
async def test_a_failed_response_is_a_provider_error(images, case_image):
    failed = responses_response(status="failed", error={"code": "server_error", "message": "The model crashed."})
    with FakeServer(lambda r: Reply(body=failed), wire="responses") as server:
        with pytest.raises(ProviderError, match="the response failed: server_error The model crashed"):
            await provider(server, images).complete(react_request(images.add(case_image[1], case_image[0])))
