"""Gemini `generateContent` against a real HTTP server that checks every request with the
`google-genai` SDK's models (which forbid unknown fields) and answers with bodies its
`GenerateContentResponse` accepts."""

from __future__ import annotations

import base64

import pytest
from google.genai import types as genai

from eviscene.agent.provider import ModelRequest, ProviderError
from eviscene.agent.episode import assistant_message
from eviscene.providers.gemini import GeminiProvider, gemini_schema
from eviscene.tools.specs import tool_spec

from provider_requests import API_KEY, endpoint, judgment_request, loop_conversation, react_request
from provider_servers import FakeServer, Reply, gemini_response


def provider(server: FakeServer, images, **kwargs) -> GeminiProvider:
    return GeminiProvider(
        name="gemini", model="gemini-test", endpoint=endpoint(server.url + "/v1beta", auth_header="x-goog-api-key"), images=images, **kwargs
    )


@pytest.mark.anyio
async def test_request_is_the_generate_content_wire_format(images, case_image):
    with FakeServer(lambda r: Reply(body=gemini_response(text="ok")), wire="interactions") as server:
        gemini = provider(server, images, thinking={"unified_react": "high", "unified_judgment": "off"})
        url = images.add(case_image[1], case_image[0])
        await gemini.complete(react_request(url))
        await gemini.complete(judgment_request(url))
    assert server.mismatches == []
    react, judgment = (r.body for r in server.received)
    request = server.received[0]
    assert request.path == "/v1beta/models/gemini-test:generateContent"
    assert request.headers["x-goog-api-key"] == API_KEY and "authorization" not in request.headers
    assert API_KEY not in request.path
    assert react["systemInstruction"]["parts"][0]["text"].startswith("You are an image fact-verification agent")
    user, model, answers = react["contents"]
    assert user["role"] == "user" and base64.b64decode(user["parts"][1]["inlineData"]["data"]) == case_image[0].read_bytes()
    assert user["parts"][1]["inlineData"]["mimeType"] == "image/jpeg"
    assert model == {"role": "model", "parts": [{"functionCall": {"id": "call-1", "name": "visit", "args": {"url": "https://example.org/a"}}}]}
    assert answers["parts"] == [{"functionResponse": {"id": "call-1", "name": "visit", "response": {"result": "[ev-1] Example page, 2024-05-06"}}}]
    declarations = react["tools"][0]["functionDeclarations"]
    assert [d["name"] for d in declarations] == ["text_search", "visit"]
    assert react["generationConfig"] == {"seed": 4242, "thinkingConfig": {"thinkingLevel": "high", "includeThoughts": True}}
    config = judgment["generationConfig"]
    assert config["responseMimeType"] == "application/json" and config["thinkingConfig"] == {"thinkingBudget": 0}
    genai.Schema.model_validate(config["responseSchema"])
    assert config["responseSchema"]["properties"]["verdict"] == {"type": "STRING", "enum": ["authentic", "out_of_context", "manipulated", "unverifiable"]}


def test_tool_schemas_narrow_to_gemini_schema():
    for name in ("text_search", "text_image_search", "reverse_image_search", "visit", "compare_with_reference"):
        narrowed = gemini_schema(tool_spec(name)["function"]["parameters"])
        genai.Schema.model_validate(narrowed)
        assert "additionalProperties" not in narrowed and narrowed["type"] == "OBJECT"


@pytest.mark.anyio
async def test_thoughts_calls_and_signatures_round_trip(images, case_image):
    first = gemini_response(
        thought="The caption claims a flood; find the original.",
        calls=[("fc-1", "reverse_image_search", {}, "c2lnbmF0dXJlLTE="), (None, "visit", {"url": "https://example.org"}, None)],
        usage=(300, 20, 50),
    )
    replies = iter([first, gemini_response(text="done")])
    with FakeServer(lambda r: Reply(body=next(replies)), wire="interactions") as server:
        gemini = provider(server, images)
        url = images.add(case_image[1], case_image[0])
        response = await gemini.complete(react_request(url))
        assert response.reasoning == "The caption claims a flood; find the original." and response.content == ""
        assert [(c.name, c.arguments) for c in response.tool_calls] == [("reverse_image_search", {}), ("visit", {"url": "https://example.org"})]
        assert response.tool_calls[0].id == "fc-1" and response.tool_calls[1].id  # the server gave no id: one is made
        assert (response.usage.prompt_tokens, response.usage.completion_tokens, response.usage.total_tokens) == (300, 70, 370)
        # The next turn sends the calls back with their signature, answered by name.
        messages = loop_conversation(url)[:2] + [assistant_message(response)] + [
            {"role": "tool", "tool_call_id": c.id, "content": f"result {i}", "data": {}} for i, c in enumerate(response.tool_calls)
        ]
        await gemini.complete(ModelRequest(stage="unified_react", messages=messages, sampling_seed=1))
    assert server.mismatches == []
    model_turn, answers = server.received[1].body["contents"][1:]
    assert model_turn["parts"][0]["thoughtSignature"] == "c2lnbmF0dXJlLTE=" and "thoughtSignature" not in model_turn["parts"][1]
    assert [p["functionResponse"]["name"] for p in answers["parts"]] == ["reverse_image_search", "visit"]


@pytest.mark.anyio
@pytest.mark.parametrize("answer, expected", [
    (gemini_response(text="Done."), "stop"),
    (gemini_response(calls=[("fc-1", "visit", {"url": "https://example.org"}, None)]), "tool_calls"),
    (gemini_response(text='{"verdict": "auth', finish_reason="MAX_TOKENS"), "length"),
    (gemini_response(text="", finish_reason="RECITATION"), "content_filter"),
    (gemini_response(text="", finish_reason="MALFORMED_FUNCTION_CALL"), "malformed_function_call"),
])
async def test_reads_why_the_answer_ended_in_chat_completions_words(answer, expected, images, case_image):
    with FakeServer(lambda r: Reply(body=answer), wire="interactions") as server:
        response = await provider(server, images).complete(react_request(images.add(case_image[1], case_image[0])))
    assert response.finish_reason == expected


@pytest.mark.anyio
async def test_a_blocked_prompt_is_a_provider_error(images, case_image):
    with FakeServer(lambda r: Reply(body=gemini_response(block_reason="SAFETY")), wire="interactions") as server:
        with pytest.raises(ProviderError, match=r"no candidates \(prompt blocked: SAFETY\)"):
            await provider(server, images).complete(react_request(images.add(case_image[1], case_image[0])))
