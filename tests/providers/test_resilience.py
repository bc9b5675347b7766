"""Faults from a real HTTP server: each ends as a retry that succeeds (recorded as
`{status, error, waited_seconds}`) or as a ProviderError with a clear, redacted reason."""

from __future__ import annotations

import base64
import json
import ssl
import time
from email.utils import formatdate

import anyio
import pytest

from eviscene.agent.provider import CredentialsRefused, ProviderError, ProviderOutage
from eviscene.providers.chat_completions import ChatCompletionsProvider
from eviscene.providers import http
from eviscene.providers.http import RetryPolicy, retry_after

from provider_requests import API_KEY, endpoint, react_request
from provider_servers import FakeServer, Reply, Script, chat_completion

OK = Reply(body=chat_completion("fine"))


def chat(server: FakeServer, images, **endpoint_options) -> ChatCompletionsProvider:
    return ChatCompletionsProvider(name="openai_compatible", model="m", endpoint=endpoint(server.url + "/v1", **endpoint_options), images=images)


async def call(server: FakeServer, images, case_image, **endpoint_options):
    async with chat(server, images, **endpoint_options) as provider:
        return await provider.complete(react_request(images.add(case_image[1], case_image[0])))


@pytest.mark.anyio
async def test_429_with_retry_after_seconds_waits_that_long_then_succeeds(images, case_image):
    limited = Reply(429, {"error": {"message": "Rate limit reached for requests"}}, headers={"Retry-After": "1"})
    with FakeServer(Script(limited, OK)) as server:
        clock = time.monotonic()
        response = await call(server, images, case_image)
        elapsed = time.monotonic() - clock
    assert response.content == "fine" and len(server.received) == 2
    assert response.retries == [{"status": 429, "error": "HTTP 429 Too Many Requests: Rate limit reached for requests", "waited_seconds": 1.0}]
    assert elapsed >= 1.0


@pytest.mark.anyio
async def test_retry_after_as_an_http_date(images, case_image):
    limited = Reply(503, {"error": "overloaded"}, headers={"Retry-After": formatdate(time.time() + 2, usegmt=True)})
    with FakeServer(Script(limited, OK)) as server:
        response = await call(server, images, case_image)
    [retry] = response.retries
    assert retry["status"] == 503 and "overloaded" in retry["error"] and 0.5 <= retry["waited_seconds"] <= 2.0


def test_retry_after_parsing():
    assert retry_after("7") == 7.0 and retry_after("0") == 0.0 and retry_after(None) is None and retry_after("soon") is None
    assert retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # a date in the past: no wait
    assert 58 <= retry_after(formatdate(time.time() + 60, usegmt=True)) <= 60


@pytest.mark.anyio
async def test_500_then_success_backs_off_and_records_the_try(images, case_image):
    with FakeServer(Script(Reply(500, "upstream exploded"), OK)) as server:
        response = await call(server, images, case_image, backoff_seconds=0.2)
    [retry] = response.retries
    assert retry["status"] == 500 and retry["error"] == "HTTP 500 Internal Server Error: upstream exploded"
    assert 0.1 <= retry["waited_seconds"] <= 0.2  # equal jitter: half fixed, half random


def test_backoff_grows_exponentially_with_jitter_and_a_ceiling():
    policy = RetryPolicy(backoff_seconds=1.0, max_backoff_seconds=8.0)
    for failures, ceiling in [(1, 1), (2, 2), (3, 4), (4, 8), (5, 8)]:
        waits = [policy.backoff(failures) for _ in range(200)]
        assert all(ceiling / 2 <= w <= ceiling for w in waits) and len(set(waits)) > 1


@pytest.mark.anyio
async def test_a_slow_answer_past_the_timeout_is_retried(images, case_image):
    with FakeServer(Script(Reply(body=chat_completion("late"), delay=1.5), OK)) as server:
        response = await call(server, images, case_image, timeout_seconds=0.3)
    assert response.content == "fine"
    [retry] = response.retries
    assert retry["status"] is None and retry["error"] == "read timeout: no complete response within 0.3 s"


@pytest.mark.anyio
async def test_always_too_slow_ends_as_a_provider_error(images, case_image):
    with FakeServer(lambda r: Reply(body=chat_completion("late"), delay=1.0)) as server:
        with pytest.raises(ProviderError) as caught:
            await call(server, images, case_image, timeout_seconds=0.2, max_retries=1)
    message = str(caught.value)
    assert "openai_compatible (chat_completions, model m): POST" in message and "/v1/chat/completions failed after 2 tries" in message
    assert message.endswith("last: read timeout: no complete response within 0.2 s")
    assert [r["status"] for r in caught.value.retries] == [None, None]


@pytest.mark.anyio
async def test_a_truncated_json_body_is_retried(images, case_image):
    whole = chat_completion("whole")
    truncated = json.dumps(whole)[:57]
    with FakeServer(Script(Reply(body=truncated), Reply(body=whole))) as server:
        response = await call(server, images, case_image)
    assert response.content == "whole"
    [retry] = response.retries
    assert retry["status"] == 200 and retry["error"].startswith("HTTP 200: body is not valid JSON")


@pytest.mark.anyio
async def test_malformed_json_every_time_ends_as_a_provider_error(images, case_image):
    with FakeServer(lambda r: Reply(body="<html>Bad gateway</html>")) as server:
        with pytest.raises(ProviderError, match=r"failed after 3 tries; last: HTTP 200: body is not valid JSON .*<html>Bad gateway</html>"):
            await call(server, images, case_image)


@pytest.mark.parametrize("status", [403, 500])
@pytest.mark.anyio
async def test_a_key_echoed_where_a_quoted_error_is_cut_is_redacted_whole_first(images, case_image, status):
    """A server quoting the key at the 300th character: cut first, its first characters were
    no key to redaction (too short for the key-shape net as well) and reached the log."""
    message = "a" * 275 + f" you sent {API_KEY} (check the key)"  # the cut at 300 falls inside the key
    with FakeServer(lambda r: Reply(status, {"error": {"message": message}})) as server:
        with pytest.raises((ProviderError, CredentialsRefused)) as refused:
            await call(server, images, case_image)
    reasons = [str(refused.value), *(retry["error"] for retry in getattr(refused.value, "retries", None) or [])]
    assert len(reasons) == (4 if status == 500 else 1)
    for reason in reasons:
        assert "you sent [REDACTED]" in reason and API_KEY[:6] not in reason, reason


@pytest.mark.anyio
async def test_a_key_echoed_escaped_in_a_json_error_body_of_another_shape_is_redacted(images, case_image):
    """A body with no `error` (FastAPI's `{"detail": …}`) was quoted as written: a key in JSON
    escapes (`\\u002d`, PHP's `\\/`) was no key to redaction, and any JSON reader of the log
    read it back whole."""
    escaped = API_KEY.replace("-", "\\u002d").replace("/", "\\/")
    assert escaped != API_KEY
    body = '{"detail": "you sent ' + escaped + '", "code": 7}'
    with FakeServer(lambda r: Reply(500, body, headers={"Content-Type": "application/json"})) as server:
        with pytest.raises(ProviderError) as refused:
            await call(server, images, case_image, max_retries=1)
    reasons = [str(refused.value), *(retry["error"] for retry in refused.value.retries)]
    for reason in reasons:
        assert reason.endswith('HTTP 500 Internal Server Error: {"detail": "you sent [REDACTED]", "code": 7}'), reason


@pytest.mark.parametrize("body, quoted", [
    ('{"detail": "bad \\ud800 input"}', '{"detail": "bad \ufffd input"}'),  # half a character, which no UTF-8 holds
    ('{"error": {"message": "bad \\udfff input"}}', "bad \ufffd input"),
    ('"the server is \\u002dtired"', "the server is -tired"),  # a JSON string, quoted as the text it is
])
@pytest.mark.anyio
async def test_a_json_error_body_is_quoted_as_text_the_log_can_hold(images, case_image, body, quoted):
    """Decoding a body like `{"detail": "\\ud800"}` gave a string UTF-8 cannot hold: the log's
    writer (pydantic, orjson) fails on it."""
    with FakeServer(lambda r: Reply(400, body, headers={"Content-Type": "application/json"})) as server:
        with pytest.raises(ProviderError) as refused:
            await call(server, images, case_image)
    message = str(refused.value)
    assert message.endswith(f"HTTP 400 Bad Request: {quoted}"), message
    message.encode("utf-8")


@pytest.mark.anyio
async def test_an_answer_nested_past_pythons_recursion_limit_is_read(images, case_image):
    """orjson reads 1,024 levels; masking the answer recursed, and a 600-level field of an
    otherwise good answer ended the episode in a bare RecursionError."""
    deep: list = []
    for _ in range(600):
        deep = [deep]
    with FakeServer(lambda r: Reply(body={**chat_completion(f"fine, {API_KEY}"), "x_debug": deep})) as server:
        response = await call(server, images, case_image)
    assert response.content == "fine, [REDACTED]"


@pytest.mark.anyio
async def test_a_base_url_with_a_query_gets_the_path_before_its_query(images, case_image):
    """Azure's `…/deployments/NAME?api-version=…`: the path went after the query
    (`?api-version=2024-02-01/chat/completions`), a credential in it too."""
    with FakeServer(lambda r: OK) as server:
        async with ChatCompletionsProvider(name="openai_compatible", model="m", images=images,
                                           endpoint=endpoint(server.url + "/openai/deployments/gpt?api-version=2024-02-01")) as provider:
            await provider.complete(react_request(images.add(case_image[1], case_image[0])))
    assert [r.path for r in server.received] == ["/openai/deployments/gpt/chat/completions?api-version=2024-02-01"]


@pytest.mark.anyio
async def test_a_proxy_password_the_environment_names_is_masked_in_what_comes_back(images, case_image, monkeypatch):
    """HTTP_PROXY=http://user:PASS@proxy: nothing registered its password, and a proxy (or the
    server behind it) echoing it, bare or as the `Basic` credential, put it in the log."""
    password = "ProxyPass4567-long"
    credential = base64.b64encode(f"puser:{password}".encode()).decode()
    with FakeServer(lambda r: Reply(502, f"bad gateway for puser:{password} ({credential})")) as proxy:
        monkeypatch.setenv("HTTP_PROXY", proxy.url.replace("http://", f"http://puser:{password}@"))
        monkeypatch.setenv("NO_PROXY", "")
        with pytest.raises(ProviderError) as refused:
            async with ChatCompletionsProvider(name="openai_compatible", model="m", images=images,
                                               endpoint=endpoint("http://model.internal/v1", max_retries=0)) as provider:
                await provider.complete(react_request(images.add(case_image[1], case_image[0])))
    assert proxy.received, "the call went through the proxy"
    message = str(refused.value)
    assert "HTTP 502" in message and password not in message and credential not in message, message
    # An answer echoing them is masked too: the provider's snapshot of the secrets has them.
    with FakeServer(lambda r: Reply(body=chat_completion(f"via puser:{password} and {credential}"))) as proxy:
        monkeypatch.setenv("HTTP_PROXY", proxy.url.replace("http://", f"http://puser:{password}@"))
        async with ChatCompletionsProvider(name="openai_compatible", model="m", images=images,
                                           endpoint=endpoint("http://model.internal/v1", max_retries=0)) as provider:
            answer = await provider.complete(react_request(images.add(case_image[1], case_image[0])))
    assert answer.content == "via [REDACTED] and [REDACTED]", answer.content  # user-info whole, and its Basic credential


@pytest.mark.parametrize("charset", ["rot13", "base64", "no-such-codec"])
@pytest.mark.anyio
async def test_a_charset_that_is_no_text_encoding_is_read_as_utf8(images, case_image, charset):
    """The server names the charset; one of Python's codecs that decodes no text (`rot13`)
    crashed the call: not retried, no `model.called`."""
    headers = {"Content-Type": f"application/json; charset={charset}"}
    with FakeServer(Script(Reply(500, "upstream exploded \u00e9", headers=headers), OK)) as server:
        response = await call(server, images, case_image)
    assert response.content == "fine" and len(server.received) == 2
    assert [retry["error"] for retry in response.retries] == ["HTTP 500 Internal Server Error: upstream exploded \u00e9"]


@pytest.mark.anyio
async def test_a_redirect_ends_the_call_at_once_naming_where_it_points(images, case_image):
    moved = Reply(307, b"", headers={"Location": f"http://127.0.0.1:9/v1/chat/completions?key={API_KEY}"})
    with FakeServer(lambda r: moved) as server:
        with pytest.raises(ProviderError) as refused:
            await call(server, images, case_image)
    assert len(server.received) == 1 and not getattr(refused.value, "retries", None)
    assert str(refused.value) == (
        "openai_compatible (chat_completions, model m): HTTP 307: a redirect, not followed, so a request and its key reach the "
        "base URL only; set the base URL to where it points: http://127.0.0.1:9/v1/chat/completions?key=[REDACTED]"
    )


@pytest.mark.anyio
async def test_a_connection_cut_mid_body_is_retried(images, case_image):
    with FakeServer(Script(Reply(body=chat_completion("cut"), cut_short=True), OK)) as server:
        response = await call(server, images, case_image)
    assert response.content == "fine"
    [retry] = response.retries
    assert retry["status"] is None and retry["error"].startswith("connection failed: ClientPayloadError")


@pytest.mark.anyio
async def test_nobody_listening_spends_no_retries_and_ends_as_an_outage(images, case_image):
    """Refused connections feed the endpoint's circuit breaker, not the call's retries: the
    call waits for the endpoint until the outage timeout, then raises ProviderOutage (the
    run stops; no episode fails)."""
    with FakeServer(lambda r: OK) as server:
        url = server.url
    provider = ChatCompletionsProvider(name="openai_compatible", model="m",
                                       endpoint=endpoint(url + "/v1", max_retries=1, outage_timeout_seconds=0.5), images=images)
    async with provider:
        with pytest.raises(ProviderOutage, match=r"/v1 unreachable for 0.5 s \(connection refused\), the provider outage timeout$"):
            await provider.complete(react_request(images.add(case_image[1], case_image[0])))
    assert provider.client.breaker.failures >= 3


@pytest.mark.anyio
async def test_a_client_error_is_not_retried(images, case_image):
    bad = Reply(400, {"error": {"message": "model 'm' does not support images", "type": "invalid_request_error"}})
    with FakeServer(lambda r: bad) as server:
        with pytest.raises(ProviderError, match=r"HTTP 400 Bad Request: model 'm' does not support images$"):
            await call(server, images, case_image)
    assert len(server.received) == 1


@pytest.mark.anyio
async def test_a_retry_after_beyond_the_limit_gives_up_at_once(images, case_image):
    limited = Reply(429, {"error": {"message": "daily quota exhausted"}}, headers={"Retry-After": "86400"})
    with FakeServer(lambda r: limited) as server:
        with pytest.raises(ProviderError, match=r"failed after 1 try; the server asked to wait 86400 s, more than the 300 s limit"):
            await call(server, images, case_image)
    assert len(server.received) == 1


@pytest.mark.anyio
async def test_errors_and_retry_records_never_carry_the_key(images, case_image):
    """A server that echoes the request's headers in its errors: the key and the auth scheme
    are masked in every retry record and in the final reason."""

    def echo(received):
        return Reply(500, {"error": {"message": f"bad upstream; you sent Authorization: {received.headers['authorization']}"}})

    with FakeServer(echo) as server:
        with pytest.raises(ProviderError) as caught:
            await call(server, images, case_image)
    assert server.received[0].headers["authorization"] == f"Bearer {API_KEY}"
    texts = [str(caught.value)] + [str(r) for r in caught.value.retries]
    assert all(API_KEY not in t and "Bearer" not in t for t in texts)
    assert "Authorization: [REDACTED]" in str(caught.value)


@pytest.mark.anyio
async def test_401_stops_the_run_naming_the_key_variable_without_the_key(images, case_image):
    denied = Reply(401, {"error": {"message": f"Incorrect API key provided: {API_KEY}"}})
    with FakeServer(lambda r: denied) as server:
        with pytest.raises(CredentialsRefused) as caught:
            await call(server, images, case_image)
    assert len(server.received) == 1  # never sent again: the same key would be refused again
    assert API_KEY not in str(caught.value) and "Incorrect API key provided: [REDACTED]" in str(caught.value)
    assert "check the API key in the environment variable" in str(caught.value)


@pytest.mark.anyio
async def test_in_flight_requests_stay_within_the_limit(images, case_image):
    with FakeServer(lambda r: Reply(body=chat_completion("ok"), delay=0.2)) as server:
        async with chat(server, images, max_inflight=2) as provider:
            request = react_request(images.add(case_image[1], case_image[0]))
            async with anyio.create_task_group() as group:
                for _ in range(6):
                    group.start_soon(provider.complete, request)
    assert len(server.received) == 6 and server.max_in_flight == 2


@pytest.mark.anyio
@pytest.mark.parametrize("bypassed", [False, True])
async def test_the_proxy_the_environment_names_carries_the_calls_unless_no_proxy_names_the_host(images, case_image, monkeypatch, bypassed):
    """HTTP_PROXY sends a call to the proxy, in absolute form; NO_PROXY naming the endpoint's
    host sends it straight there (the proxy, nothing listening, would refuse it)."""
    for name in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    with FakeServer(lambda r: OK) as server:
        if bypassed:
            monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:1")
            monkeypatch.setenv("NO_PROXY", "127.0.0.1")
            base_url = server.url + "/v1"
        else:
            monkeypatch.setenv("HTTP_PROXY", server.url)
            base_url = "http://model.example/v1"
        provider = ChatCompletionsProvider(name="openai_compatible", model="m", endpoint=endpoint(base_url), images=images)
        async with provider:
            response = await provider.complete(react_request(images.add(case_image[1], case_image[0])))
    assert response.content == "fine" and response.retries == []
    assert server.received[0].path == ("/v1/chat/completions" if bypassed else "http://model.example/v1/chat/completions")


@pytest.mark.parametrize(
    ("base_url", "proxy", "loads_ca_bundle"),
    [
        ("http://127.0.0.1:8000/v1", None, False),
        ("https://api.example/v1", None, True),
        ("HTTPS://api.example/v1", None, True),
        ("http://model.example/v1", "https://proxy.example:3128", True),
        ("http://model.example/v1", "http://proxy.example:3128", False),
    ],
)
@pytest.mark.anyio
async def test_the_ca_bundle_is_loaded_only_for_a_session_that_speaks_tls(monkeypatch, base_url, proxy, loads_ca_bundle):
    """Plain HTTP to the endpoint and its proxy never reads a TLS context: the session skips
    loading the CA bundle; TLS to either loads it."""
    for name in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    if proxy:
        monkeypatch.setenv("ALL_PROXY", proxy)
    loaded = []
    monkeypatch.setattr(http, "_tls_context", lambda: loaded.append(base_url) or ssl.create_default_context())
    client = http.JsonClient(endpoint(base_url), label="test")
    client._open_session()
    await client.aclose()
    assert loaded == ([base_url] if loads_ca_bundle else [])
