"""Chat Completions against a real HTTP server that checks every request with the `openai`
SDK's request types and answers with bodies the SDK's `ChatCompletion` accepts."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import threading

import pytest
from PIL import Image

from eviscene.agent.judgment import judgment_schema
from eviscene.providers.chat_completions import ChatCompletionsProvider
from eviscene.providers import wire
from eviscene.providers.wire import RAW_ARGUMENTS

from provider_requests import API_KEY, LABELS, endpoint, judgment_request, react_request
from provider_servers import FakeServer, Reply, chat_completion


def provider(server: FakeServer, images, **kwargs) -> ChatCompletionsProvider:
    return ChatCompletionsProvider(name="openai_compatible", model="m", endpoint=endpoint(server.url + "/v1"), images=images, **kwargs)


@pytest.mark.anyio
async def test_request_is_the_chat_completions_wire_format(images, case_image):
    with FakeServer(lambda r: Reply(body=chat_completion("ok"))) as server:
        chat = provider(server, images, thinking={"unified_react": "on", "unified_judgment": "high"})
        url = images.add(case_image[1], case_image[0])
        await chat.complete(react_request(url))
        await chat.complete(judgment_request(url))
        await chat.aclose()
    assert server.mismatches == []
    react, judgment = (r.body for r in server.received)
    assert server.received[0].path == "/v1/chat/completions"
    assert server.received[0].headers["authorization"] == f"Bearer {API_KEY}"
    assert react["model"] == "m" and react["seed"] == 4242
    assert [t["function"]["name"] for t in react["tools"]] == ["text_search", "visit"] and react["tool_choice"] == "auto"
    assert react["chat_template_kwargs"] == {"enable_thinking": True} and "response_format" not in react
    # The image travels as a data URL holding the case image's own bytes.
    image_part = react["messages"][1]["content"][1]
    assert image_part["type"] == "image_url"
    header, data = image_part["image_url"]["url"].split(",", 1)
    assert header == "data:image/jpeg;base64" and base64.b64decode(data) == case_image[0].read_bytes()
    # Loop-only keys stay home: no `data` on tool messages, no reasoning sent back.
    assert react["messages"][3] == {"role": "tool", "tool_call_id": "call-1", "content": "[ev-1] Example page, 2024-05-06"}
    assert "reasoning_content" not in react["messages"][2]
    assert react["messages"][2]["tool_calls"][0]["function"] == {"name": "visit", "arguments": '{"url":"https://example.org/a"}'}
    assert judgment["response_format"]["type"] == "json_schema"
    assert judgment["response_format"]["json_schema"]["schema"]["properties"]["verdict"]["enum"][0] == "authentic"
    assert "tools" not in judgment and judgment["reasoning_effort"] == "high"


@pytest.mark.anyio
async def test_tool_results_go_as_user_messages_naming_their_call_when_asked(images, case_image):
    """For chat templates that drop `tool` messages (llama-cpp-python's chatml-function-calling)."""
    with FakeServer(lambda r: Reply(body=chat_completion("ok"))) as server:
        chat = provider(server, images, tool_results="user")
        await chat.complete(react_request(images.add(case_image[1], case_image[0])))
        await chat.aclose()
    assert server.mismatches == []
    messages = server.received[0].body["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[2]["tool_calls"][0]["id"] == "call-1"  # the call itself goes as it is
    assert messages[3] == {"role": "user", "content": "Result of visit (call call-1):\n[ev-1] Example page, 2024-05-06"}


@pytest.mark.anyio
async def test_the_judgment_request_carries_the_generated_schema(images, case_image):
    with FakeServer(lambda r: Reply(body=chat_completion("{}"))) as server:
        chat = provider(server, images)
        await chat.complete(judgment_request(images.add(case_image[1], case_image[0])))
        await chat.aclose()
    assert server.mismatches == []
    sent = server.received[0].body["response_format"]["json_schema"]["schema"]
    assert sent == judgment_schema(LABELS)
    assert sent["required"] == ["verdict", "confidence", "verdict_basis", "rationale"] and sent["additionalProperties"] is False
    assert sent["properties"]["verdict"]["enum"] == list(LABELS)
    assert sent["properties"]["verdict_basis"]["items"]["required"] == ["evidence_id", "finding"]
    assert "$defs" not in json.dumps(sent) and "$ref" not in json.dumps(sent) and "title" not in json.dumps(sent)


@pytest.mark.anyio
async def test_reads_content_reasoning_tool_calls_and_usage(images, case_image):
    answer = chat_completion(
        None,
        reasoning_content="The caption names a city; search it.",
        tool_calls=[
            ("call_a", "text_search", '{"query": "Porto Alegre flood"}'),
            ("call_b", "visit", '{"url": "https://example.org/a"'),  # cut-off JSON
            ("call_c", "open_browser", '{"url": "https://example.org"}'),  # a tool that does not exist
            ("call_d", "visit", '["https://example.org"]'),  # JSON, but not an object
        ],
        usage=(120, 30),
    )
    with FakeServer(lambda r: Reply(body=answer)) as server:
        chat = provider(server, images)
        response = await chat.complete(react_request(images.add(case_image[1], case_image[0])))
    assert response.content == "" and response.reasoning == "The caption names a city; search it."
    calls = {c.id: (c.name, c.arguments) for c in response.tool_calls}
    assert calls["call_a"] == ("text_search", {"query": "Porto Alegre flood"})
    assert calls["call_b"] == ("visit", {RAW_ARGUMENTS: '{"url": "https://example.org/a"'})
    assert calls["call_c"] == ("open_browser", {"url": "https://example.org"})
    assert calls["call_d"] == ("visit", {RAW_ARGUMENTS: '["https://example.org"]'})
    assert (response.usage.prompt_tokens, response.usage.completion_tokens, response.usage.total_tokens) == (120, 30, 150)
    assert response.retries == []


@pytest.mark.anyio
async def test_reasoning_from_the_reasoning_field_or_an_inline_think_block(images, case_image):
    replies = iter([chat_completion("answer one", reasoning="ollama style"), chat_completion("<think>\nweigh the dates\n</think>\n\n{\"verdict\": 1}")])
    with FakeServer(lambda r: Reply(body=next(replies))) as server:
        chat = provider(server, images)
        url = images.add(case_image[1], case_image[0])
        first, second = await chat.complete(react_request(url)), await chat.complete(react_request(url))
    assert (first.content, first.reasoning) == ("answer one", "ollama style")
    assert (second.content, second.reasoning) == ('{"verdict": 1}', "weigh the dates")


def test_reasoning_goes_back_only_when_asked(images, case_image):
    url = images.add(case_image[1], case_image[0])
    plain = ChatCompletionsProvider(name="x", model="m", endpoint=endpoint("http://127.0.0.1:9/v1"), images=images)
    eager = ChatCompletionsProvider(name="x", model="m", endpoint=endpoint("http://127.0.0.1:9/v1"), images=images, send_reasoning=True)
    assert "reasoning_content" not in plain.build(react_request(url))[1]["messages"][2]
    assert eager.build(react_request(url))[1]["messages"][2]["reasoning_content"] == "Open the page first."


@pytest.mark.anyio
@pytest.mark.parametrize("answer, expected", [
    (chat_completion("Done."), "stop"),
    (chat_completion(None, tool_calls=[("call_a", "text_search", '{"query": "flood"}')]), "tool_calls"),
    (chat_completion('{"verdict": "auth', finish_reason="length"), "length"),
    (chat_completion("", finish_reason="content_filter"), "content_filter"),
])
async def test_reads_why_the_answer_ended(answer, expected, images, case_image):
    with FakeServer(lambda r: Reply(body=answer)) as server:
        response = await provider(server, images).complete(react_request(images.add(case_image[1], case_image[0])))
    assert response.finish_reason == expected


@pytest.mark.anyio
async def test_an_answer_without_choices_is_a_clear_provider_error(images, case_image):
    from eviscene.agent.provider import ProviderError

    with FakeServer(lambda r: Reply(body={"id": "x", "object": "chat.completion", "choices": []})) as server:
        chat = provider(server, images)
        with pytest.raises(ProviderError, match="unexpected response shape.*no choices"):
            await chat.complete(react_request(images.add(case_image[1], case_image[0])))


@pytest.mark.anyio
@pytest.mark.parametrize("usage, named", [((-1000, 5), "prompt_tokens -1000: Input should be greater than or equal to 0"),
                                          ((2**63 + 5, 5), f"prompt_tokens {2**63 + 5}: Input should be less than or equal to {2**63 - 1}")])
async def test_a_token_count_that_is_no_count_is_a_clear_provider_error(usage, named, images, case_image):
    """A negative count was summed into the run's usage and read as context left; one past a
    BIGINT was NULL in the views while the run directory carried it."""
    from eviscene.agent.provider import ProviderError

    with FakeServer(lambda r: Reply(body=chat_completion("Done.", usage=usage))) as server, pytest.raises(ProviderError) as refused:
        await provider(server, images).complete(react_request(images.add(case_image[1], case_image[0])))
    assert f"unexpected response shape ({named}" in str(refused.value)  # then total_tokens, the two summed


@pytest.mark.anyio
async def test_an_answer_over_the_size_limit_is_refused_unread(images, case_image):
    """A 60 MB answer was read whole (and then stored): ~860 MB for one call."""
    from eviscene.agent.provider import ProviderError
    from eviscene.providers.http import MAX_ANSWER_BYTES

    with (FakeServer(lambda r: Reply(body=chat_completion("x" * (MAX_ANSWER_BYTES + 1)))) as server,
          pytest.raises(ProviderError, match=r"HTTP 200: the answer is over 32 MiB; not read$")):
        await provider(server, images).complete(react_request(images.add(case_image[1], case_image[0])))
    assert len(server.received) == 1  # not asked again: the next answer would be as large


@pytest.mark.anyio
async def test_a_reused_or_missing_call_id_gets_a_fresh_one(images, case_image):
    """Some servers number calls per turn: ids stay unique within the episode."""
    answer = chat_completion(None, tool_calls=[("call-1", "visit", '{"url": "https://example.org/b"}'), ("", "text_search", '{"query": "q"}')])
    with FakeServer(lambda r: Reply(body=answer)) as server:
        response = await provider(server, images).complete(react_request(images.add(case_image[1], case_image[0])))
    ids = [c.id for c in response.tool_calls]
    assert "call-1" not in ids and len(set(ids)) == 2 and all(i.startswith("call_") for i in ids)


@pytest.mark.anyio
@pytest.mark.parametrize("kind", ["TIFF", "BMP"])
async def test_a_picture_in_a_format_model_apis_refuse_goes_as_a_png_of_it(images, tmp_path, kind, monkeypatch):
    """It went as `data:application/octet-stream`, which OpenAI-style servers answer with HTTP 400.
    Converted off the event loop: a 12 MP TIFF takes ~0.7 s, which would hold every call back."""
    picture = Image.new("RGB", (40, 30), (200, 30, 10))
    path = tmp_path / f"case.{kind.lower()}"
    picture.save(path, kind)
    sha256 = hashlib.sha256(path.read_bytes()).hexdigest()
    converted_in = []
    convert = wire.sendable_image
    monkeypatch.setattr(wire, "sendable_image", lambda raw: converted_in.append(threading.current_thread()) or convert(raw))
    with FakeServer(lambda r: Reply(body=chat_completion("ok"))) as server:
        chat = provider(server, images)
        await chat.complete(react_request(images.add(sha256, path)))
        await chat.aclose()
    header, data = server.received[0].body["messages"][1]["content"][1]["image_url"]["url"].split(",", 1)
    sent = Image.open(io.BytesIO(base64.b64decode(data)))
    assert header == "data:image/png;base64" and sent.format == "PNG" and sent.size == (40, 30)
    assert sent.convert("RGB").getpixel((20, 15)) == (200, 30, 10)
    assert converted_in and threading.main_thread() not in converted_in
