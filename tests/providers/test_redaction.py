"""`redact`: keys, auth headers and their scheme words never survive into a text. A model
server that echoes a key in a successful answer (content, reasoning, a tool call's
arguments) gets it masked before the agent reads it, and the log's writer masks what gets
past that: the key is in no event, blob, run-directory file or printed line."""

from __future__ import annotations

import base64
import json
import os
import secrets
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import anyio
import pytest
from provider_requests import endpoint, react_request
from provider_servers import (
    FakeServer,
    Received,
    Reply,
    chat_completion,
    gemini_response,
    responses_response,
)

from eviscene.eval.options import EvalOptions
from eviscene.eval.run import start_run
from eviscene.log import EventLog
from eviscene.providers import (
    ChatCompletionsProvider,
    GeminiProvider,
    ResponsesProvider,
    wire,
)
from eviscene.redaction import (
    MASK,
    KnownSecrets,
    redact,
    redact_data,
    register_secret,
    register_secret_fields,
    register_url_secrets,
)

EVISCENE = str(Path(sys.executable).with_name("eviscene"))
KEY_SHAPED = "sk-proj-" + "A1b2C3d4" * 3  # a key no one registered, in the shape of one


def test_auth_headers_lose_value_and_scheme():
    for text in (
        "Authorization: Bearer abcdefgh12345678",
        '{"Authorization": "Bearer abcdefgh12345678"}',
        "{'authorization': 'Bearer abcdefgh12345678'}",
        "proxy-authorization=Basic dXNlcjpwYXNzd29yZA==",
    ):
        masked = redact(text)
        assert "abcdefgh12345678" not in masked and "dXNlcjpwYXNzd29yZA" not in masked
        assert "Bearer" not in masked and "Basic" not in masked and MASK in masked


def test_key_headers_query_parameters_and_cookies():
    assert redact("x-goog-api-key: AIzaSyA-1234567890abcdefghijklmnopqrstu") == f"x-goog-api-key: {MASK}"
    assert redact("GET /v1beta/models?key=secretvalue123&alt=json") == f"GET /v1beta/models?key={MASK}&alt=json"
    assert redact("Cookie: session=abc123def456; theme=dark") == f"Cookie: {MASK}"
    assert redact('{"set-cookie": "sid=abc123def456; HttpOnly", "x": 1}') == '{"set-cookie": "' + MASK + '", "x": 1}'
    assert redact('{"api_key": "whatever-1234"}') == '{"api_key": "' + MASK + '"}'


def test_bare_bearer_tokens_and_key_shapes():
    assert redact("token was Bearer eyJhbGciOiJIUzI1NiJ9.payload") == f"token was {MASK}"
    assert redact("used sk-proj-ABCDEFGHIJKLMNOPQRST in a log") == f"used {MASK} in a log"
    assert redact("key AIzaSyA-1234567890abcdefghijklmnopqrstu leaked") == f"key {MASK} leaked"


def test_registered_secrets_and_secret_looking_environment(monkeypatch):
    register_secret("plain-looking-credential-42")
    assert redact("the value plain-looking-credential-42 appeared") == f"the value {MASK} appeared"
    monkeypatch.setenv("MY_SERVICE_TOKEN", "zzzz-tttt-9999")
    assert redact("echo zzzz-tttt-9999") == f"echo {MASK}"
    register_secret("short")  # too short to mask safely: ignored
    assert redact("a short story") == "a short story"


def test_the_environment_net_takes_credential_variables_not_words_that_contain_their_names(monkeypatch):
    for name, value in [("GIT_AUTHOR_NAME", "Ada Lovelace"), ("PYTHON_KEYRING_BACKEND", "keyring.backends.null.Keyring"),
                        ("KEYBOARD_LAYOUT", "dvorak-international-9")]:
        monkeypatch.setenv(name, value)
        assert redact(f"said {value}") == f"said {value}", name
    monkeypatch.setenv("SOME_AUTH", "disabled")  # a word, not a credential: masking it would mask the word everywhere
    assert redact("the check is disabled") == "the check is disabled"
    for name, value in [("HF_TOKEN", "hf_abc123def456"), ("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY"),
                        ("SERPAPI_APIKEY", "0123456789abcdef"), ("DB_PASSWORD", "hunter2hunter2"), ("GATEWAY_CREDS", "plain-but-long-value")]:
        monkeypatch.setenv(name, value)
        assert redact(f"said {value}") == f"said {MASK}", name


def test_names_of_key_variables_stay_readable():
    text = "environment variable OPENAI_API_KEY is not set; api_key_env names it"
    assert redact(text) == text


def test_redact_data_walks_json():
    data = {"error": "Authorization: Bearer abcdefgh12345678", "nested": [{"k": "sk-abcdefghijklmnopqrstuv"}], "n": 3}
    assert redact_data(data) == {"error": f"Authorization: {MASK}", "nested": [{"k": MASK}], "n": 3}


def test_credentials_inside_urls():
    assert redact("http://user:s3cr3t-value@host:8000/v1") == f"http://{MASK}@host:8000/v1"
    assert redact("POST https://tok3n-only@api.example.com/v1/chat failed") == f"POST https://{MASK}@api.example.com/v1/chat failed"
    assert redact("https://h.example/v1?api_key=abc123xyz") == f"https://h.example/v1?api_key={MASK}"
    assert redact('{"base_url": "http://a:b@10.0.0.1/v1"}') == '{"base_url": "http://' + MASK + '@10.0.0.1/v1"}'
    # The user-info ends at the authority's last `@`; a parameter's name counts decoded.
    assert redact("http://user:p@ss-s3cr3t@host/v1") == f"http://{MASK}@host/v1"
    assert redact("https://h.example/v1?a=1&api%5Fkey=abc123xyz") == f"https://h.example/v1?a=1&api%5Fkey={MASK}"
    # Another parameter's value may hold a key parameter; a doubled `?` starts the name after it.
    assert redact("https://x.example/cb?redirect=https://y.example/?token=SECRET1&b=2") == (
        f"https://x.example/cb?redirect=https://y.example/?token={MASK}&b=2")
    assert redact("https://x.example/p??key=SECRET3 and ?TOKEN=a?b=c") == f"https://x.example/p??key={MASK} and ?TOKEN={MASK}"
    assert redact("?key=&x=1") == "?key=&x=1"
    # An address in the path or a mail address is not a credential.
    assert redact("http://host/path@x and user@example.com") == "http://host/path@x and user@example.com"


def test_a_query_parameter_named_as_a_secret_is_masked_whatever_its_word():
    """Only key, api_key, apikey, access_token and token were masked: `--base-url
    ...?password=...` or a search URL's `client_secret` went into run.started as written. A
    parameter is judged by the words of its name, as an environment variable is."""
    url = ("https://gw.example/v1?password=hunter2x9&client_secret=cs-0001&auth=a1b2c3&X-Amz-Security-Token=FwoGZX1"
           "&client.secret=dotted9&model=m1")
    assert redact(url) == (f"https://gw.example/v1?password={MASK}&client_secret={MASK}&auth={MASK}"
                           f"&X-Amz-Security-Token={MASK}&client.secret={MASK}&model=m1")
    # A signed URL's signature is its credential (Azure SAS `sig`, AWS presigned `X-Amz-Signature`).
    assert redact("https://acct.example/v1?sv=2024-01-01&sig=Q3x%2Fz9&X-Amz-Signature=ab12cd") == (
        f"https://acct.example/v1?sv=2024-01-01&sig={MASK}&X-Amz-Signature={MASK}")
    # A word that merely contains one is no secret's name.
    assert redact("https://s.example/?keyboard=qwerty&monkey=1&author=me&passwords=list&signal=1&design=x") == (
        "https://s.example/?keyboard=qwerty&monkey=1&author=me&passwords=list&signal=1&design=x")


def test_a_password_s_short_forms_and_credential_words_run_together_are_secret_names(monkeypatch):
    """`?pwd=`, `?passphrase=`, `?passcode=`, `?pass=` and run-together words (`accesstoken`,
    `clientsecret`, `secretkey`; `apikey` was the only one caught) went into run.started and
    run_manifest.json as written, in a base URL and in a profile's body alike."""
    url = ("https://gw.example/v1?pwd=Hunter2Secret9&passphrase=OpenSesame77x&passcode=pc-8877x&pass=ps-9911"
           "&accesstoken=at-0001&clientsecret=cs-0002&secretkey=sk-0003&idtoken=it-0004&page=2")
    assert redact(url) == (f"https://gw.example/v1?pwd={MASK}&passphrase={MASK}&passcode={MASK}&pass={MASK}"
                           f"&accesstoken={MASK}&clientsecret={MASK}&secretkey={MASK}&idtoken={MASK}&page=2")
    ordinary = ("https://s.example/?passwords=list&bypass=1&compass=n2&passenger=p3&password_hint=h4x&monkey=1&donkeykey=k5"
                "&pass_type=t1&pwd_rule=r2")
    assert redact(ordinary) == ordinary.replace("password_hint=h4x", f"password_hint={MASK}")
    assert redact("https://s.example/?passkey=pk-0005&db_pass=dp-0006") == f"https://s.example/?passkey={MASK}&db_pass={MASK}"
    register_secret_fields({"pwd": "body-pw-41a", "passphrase": "body-pp-41b", "passcode": "body-pc-41c", "pass": "body-ps-41d",
                            "clientsecret": "body-cs-41e", "secretkey": "body-sk-41f", "authtoken": "body-at-41g",
                            "metadata": {"bypass": "body-bp-42a", "compass": "body-cp-42b", "passwords": "body-pl-42c"}})
    for value in ("body-pw-41a", "body-pp-41b", "body-pc-41c", "body-ps-41d", "body-cs-41e", "body-sk-41f", "body-at-41g"):
        assert redact(f"echo {value}") == f"echo {MASK}", value
    for value in ("body-bp-42a", "body-cp-42b", "body-pl-42c"):
        assert redact(f"echo {value}") == f"echo {value}", value
    monkeypatch.setenv("DB_PWD", "db-pass-0042x")
    monkeypatch.setenv("GPG_PASSPHRASE", "gpg-phrase-0043")
    assert redact("said db-pass-0042x, gpg-phrase-0043") == f"said {MASK}, {MASK}"
    monkeypatch.setenv("PWD", "/home/ada/projects/eviscene-2026")  # the shell's working folder: a path, no password
    monkeypatch.setenv("PASS_THROUGH_PORTS", "8080,8443,9090")  # `pass` not as the last word: no password
    assert redact("in /home/ada/projects/eviscene-2026 on 8080,8443,9090") == "in /home/ada/projects/eviscene-2026 on 8080,8443,9090"


def test_a_query_parameter_is_judged_by_its_words_in_camel_case_as_an_array_and_in_the_fragment():
    """`--base-url ...?accessToken=...` went into run.started as written: a name's words are
    parted at a camelCase boundary and at PHP's array brackets too, and a fragment
    (`#access_token=`, OAuth's implicit flow) holds parameters as a query does."""
    url = ("https://gw.example/v1?accessToken=at-0001&clientSecret=cs-0002&authToken=au-0003&api_key[]=ak-0004"
           "&SecretAccessKey=AKIA0005&auth[token]=tk-0006&UpstreamBearer=br-0007&x=bearer#access_token=fr-0008&state=s1")
    assert redact(url) == (f"https://gw.example/v1?accessToken={MASK}&clientSecret={MASK}&authToken={MASK}&api_key[]={MASK}"
                           f"&SecretAccessKey={MASK}&auth[token]={MASK}&UpstreamBearer={MASK}&x=bearer#access_token={MASK}&state=s1")
    # a camelCase name is judged by its last word: its first alone names no secret
    ordinary = ("https://s.example/?tokenizer=bpe-v2&keyword=k1&monkey=1&authors=me2&hotkeys=3&authorId=9&page=2"
                "&keyWord=hi&authMode=none&keyId=k7&tokenCount=12#section=4")
    assert redact(ordinary) == ordinary


def test_a_camel_case_variable_named_as_a_secret_is_masked(monkeypatch):
    monkeypatch.setenv("upstreamAccessToken", "camel-env-value-0042")
    monkeypatch.setenv("authorName", "Grace Hopper 1906")
    assert redact("said camel-env-value-0042 to Grace Hopper 1906") == f"said {MASK} to Grace Hopper 1906"


def test_a_profiles_body_credential_is_registered_and_its_other_fields_are_not():
    """`extra_body` goes into every request: its credential field's value is masked wherever it
    turns up again; a `prompt_cache_key` (often a model's name) or a token count is no secret."""
    register_secret_fields({"prompt_cache_key": "qwen2.5-vl-72b", "max_tokens": 4096, "note": "tok-body-55aa77",
                            "metadata": {"access_token": "tok-body-55aa77", "user_key_hint": "hint-0099x"}})
    assert redact("qwen2.5-vl-72b said tok-body-55aa77, hint-0099x") == f"qwen2.5-vl-72b said {MASK}, hint-0099x"


def test_a_body_credential_written_with_its_scheme_word_or_spaces_is_registered():
    """`authorization = "Bearer tok-…"` and a pass phrase went unregistered (the value was
    judged whole, scheme word and spaces included), so a server's echo of the token was stored."""
    register_secret_fields({"metadata": {"authorization": "Bearer tok-5e1f0c9a77"}, "password": "correct horse battery staple",
                            "auth": "disabled", "chat_template_kwargs": {"eos_token": "<|im_end|>"}, "api_key": "not-needed"})
    assert redact("echo tok-5e1f0c9a77; correct horse battery staple") == f"echo {MASK}; {MASK}"
    # a word, a template's token, a placeholder: no credential, and masked nowhere
    assert redact("auth disabled; stop at <|im_end|>; key not-needed") == "auth disabled; stop at <|im_end|>; key not-needed"


def test_the_credentials_a_base_url_carries_are_registered_bare_and_as_sent():
    """An HTTP client sends `http://user:KEY@host`'s user-info as a `Basic` header: a server
    echoing the key bare, or the header's base64, outside any URL, must find it masked; so with
    a secret-named query or fragment parameter's value. The user name alone is no secret."""
    register_url_secrets("http://reader:ukey-8f3a1c55@127.0.0.1:1/v1?api_key=qkey-0b9d7e21&model=m#access_token=fkey-6c2e4a90")
    basic = base64.b64encode(b"reader:ukey-8f3a1c55").decode()
    echoed = f"you sent ukey-8f3a1c55 as Authorization {basic}, then qkey-0b9d7e21 and fkey-6c2e4a90 for reader"
    assert redact(echoed) == f"you sent {MASK} as Authorization {MASK}, then {MASK} and {MASK} for reader"
    register_url_secrets("http://tkey-2d4f6a8c0e@127.0.0.1:1/v1")  # a token alone as the user-info
    assert redact("tkey-2d4f6a8c0e") == MASK
    register_url_secrets("http://reader:bkey-5e7a9c1d@[oops/v1")  # a host urlsplit refuses raised instead
    assert redact("bkey-5e7a9c1d") == MASK


def test_a_body_credential_named_in_camel_case_or_nested_under_its_scheme_is_registered():
    """`clientSecret`, `authToken`, `subscriptionKey` and `auth = {bearer = ...}` went into
    run.started and run_manifest.json unmasked: a field's name is judged by its words, parted
    at camelCase boundaries as at `_`, and `bearer` and `auth` are credential words."""
    credentials = {"clientSecret": "body-cs-31a", "authToken": "body-at-31b", "subscriptionKey": "body-sk-31c",
                   "Ocp-Apim-Subscription-Key": "body-ok-31d", "auth": {"bearer": "body-br-31e"}, "APIKey": "body-ak-31f",
                   "secretAccessKey": "body-sa-31g", "refreshToken": "body-rt-31h", "auth_header": {"auth": "body-au-31i"},
                   "accesstoken": "body-at-31j", "refreshtoken": "body-rt-31k"}
    ordinary = {"max_tokens": "body-mt-32a", "maxTokens": "body-mt-32b", "tokenizer": "body-tz-32c", "keyword": "body-kw-32d",
                "monkey": "body-mk-32e", "authors": "body-au-32f", "api_key_env": "PROFILE_KEY_VAR_32", "prompt_cache_key": "body-pc-32h",
                "tokenCount": "body-tc-32i", "authorName": "body-an-32j", "keyPoints": "body-kp-32k"}
    register_secret_fields({**credentials, "metadata": ordinary})
    for value in ("body-cs-31a", "body-at-31b", "body-sk-31c", "body-ok-31d", "body-br-31e", "body-ak-31f",
                  "body-sa-31g", "body-rt-31h", "body-au-31i", "body-at-31j", "body-rt-31k"):
        assert redact(f"echo {value}") == f"echo {MASK}", value
    for value in ("body-mt-32a", "body-mt-32b", "body-tz-32c", "body-kw-32d", "body-mk-32e", "body-au-32f",
                  "PROFILE_KEY_VAR_32", "body-pc-32h", "body-tc-32i", "body-an-32j", "body-kp-32k"):
        assert redact(f"echo {value}") == f"echo {value}", value


def test_known_secrets_mask_json_raw_and_escaped_and_leave_clean_bytes_alone(monkeypatch):
    monkeypatch.setenv("QUOTED_PASSWORD", 'pa"ss\\word-77')
    known = KnownSecrets()
    clean = b'{"a":"nothing to see","n":12345678}'
    assert known.mask_json(clean) is clean  # not even parsed
    data = json.dumps({"text": 'said pa"ss\\word-77 twice: pa"ss\\word-77', 'pa"ss\\word-77': [2**70, "x"]}).encode()
    assert json.loads(known.mask_json(data)) == {"text": f"said {MASK} twice: {MASK}", MASK: [2**70, "x"]}


def test_a_registered_key_is_masked_percent_encoded_and_inside_base64_at_any_alignment():
    """A server may echo a key as HTTP carried it: in a query string, or in a `Basic`
    credential (`user:KEY`, encoded whole). Each alignment of the key within the base64 text
    is masked, in both alphabets; what is left holds none of its bits."""
    key = "creds+/x9-" + secrets.token_hex(6)
    register_secret(key)
    assert redact(f"GET /v1?x={key.replace('+', '%2B').replace('/', '%2F')}&y=2") == f"GET /v1?x={MASK}&y=2"
    for before in ("", "u", "us", "user:"):
        for after in ("", "!", "!!"):
            for encode in (base64.b64encode, base64.urlsafe_b64encode):
                encoded = encode(f"{before}{key}{after}".encode()).decode()
                head, tail = redact(f"echoed {encoded}.").removeprefix("echoed ").removesuffix(".").split(MASK)
                # Left: the characters of the bytes around the key, and of a group it shares with them.
                assert len(head) <= len(before) * 4 // 3 + 2 and len(tail) <= len(after) * 4 // 3 + 4, (before, after, head, tail)
    assert redact("an ordinary sentence with base64 aGVsbG8gd29ybGQ= in it") == "an ordinary sentence with base64 aGVsbG8gd29ybGQ= in it"


# -- a model server that echoes the keys in a successful answer ----------------------------


@pytest.fixture
def keys(monkeypatch) -> tuple[str, str]:
    """The API key, in a variable whose name says nothing (only its registration masks it),
    and another secret in a variable whose name says it holds one."""
    api_key, other = f"creds-{secrets.token_hex(12)}", f"tok-{secrets.token_hex(12)}"
    monkeypatch.setenv("MODEL_SERVER_CREDS", api_key)
    monkeypatch.setenv("UPSTREAM_TOKEN", other)
    return api_key, other


def said(keys: tuple[str, ...]) -> str:
    return f"Authorization: Bearer {keys[0]}; also {' '.join(keys[1:])}"


@pytest.mark.parametrize("wire_api", ["chat_completions", "responses", "interactions"])
@pytest.mark.anyio
async def test_every_wire_masks_echoed_keys_in_content_reasoning_and_tool_arguments(wire_api, keys, images, case_image):
    api_key, other = keys
    text, arguments = said((api_key, other, KEY_SHAPED)), {"query": f"{api_key} {other}"}
    answers = {
        "chat_completions": lambda: chat_completion(text, reasoning_content=text, tool_calls=[("call_1", "text_search", json.dumps(arguments))]),
        "responses": lambda: responses_response(text=text, summary=text, calls=[("call_1", "text_search", json.dumps(arguments))]),
        "interactions": lambda: gemini_response(text=text, thought=text, calls=[("call_1", "text_search", arguments, None)]),
    }
    with FakeServer(lambda r: Reply(body=answers[wire_api]()), wire=wire_api) as server:
        if wire_api == "interactions":
            provider = GeminiProvider(name="gemini", model="g", endpoint=endpoint(server.url + "/v1beta", api_key=api_key, auth_header="x-goog-api-key"), images=images)
        else:
            kind = ChatCompletionsProvider if wire_api == "chat_completions" else ResponsesProvider
            provider = kind(name="openai_compatible", model="m", endpoint=endpoint(server.url + "/v1", api_key=api_key), images=images)
        async with provider:
            response = await provider.complete(react_request(images.add(case_image[1], case_image[0])))
    assert server.mismatches == [] and api_key in json.dumps(server.received[0].headers)
    masked = f"Authorization: Bearer {MASK}; also {MASK} {MASK}"
    assert response.content == response.reasoning == masked
    [call] = response.tool_calls
    assert (call.name, call.arguments) == ("text_search", {"query": f"{MASK} {MASK}"})


class EchoingModel:
    """Answers 200 with the keys in all it writes: a first turn that says them and searches
    for them, a second that says them again, and a judgment whose rationale quotes them."""

    def __init__(self, *keys: str):
        self.keys = keys

    def __call__(self, received: Received) -> Reply:
        text, body = said(self.keys), received.body
        if "response_format" in body:
            verdict = {"verdict": "unverifiable", "confidence": 0.4, "verdict_basis": [], "rationale": text}
            return Reply(body=chat_completion(json.dumps(verdict), reasoning_content=text))
        if not any(m["role"] == "tool" for m in body["messages"]):
            search = json.dumps({"query": " ".join(self.keys)})
            return Reply(body=chat_completion(text, reasoning_content=text, tool_calls=[("call_1", "text_search", search)]))
        return Reply(body=chat_completion(text, reasoning_content=text))


def stored_texts(log: EventLog) -> list[str]:
    """Every event and blob, decoded (the files may hold them compressed)."""
    texts = log.sql("SELECT payload::VARCHAR AS t FROM events")["t"].to_pylist()
    return texts + [bytes(b).decode("utf-8", "replace") for b in log.sql("SELECT content FROM blobs")["content"].to_pylist()]


def run_against_an_echoing_server(release_dir: Path, tmp_path: Path, api_key: str, *echoes: str) -> tuple[subprocess.CompletedProcess, EventLog]:
    """`eviscene eval run` of one case against a server that echoes `echoes` in all it writes,
    the key read from MODEL_SERVER_CREDS: the run completes and sends the key as it is."""
    log_path = tmp_path / "log.duckdb"
    with FakeServer(EchoingModel(*echoes)) as server:
        result = subprocess.run(
            [EVISCENE, "--db", str(log_path), "eval", "run", "--benchmark", str(release_dir / "runtime_input" / "cases.jsonl"),
             "--limit", "1", "--provider", "openai_compatible", "--base-url", f"{server.url}/v1", "--model", "m",
             "--api-key-env", "MODEL_SERVER_CREDS", "--output-dir", "run", "--timeout", "30"],
            capture_output=True, text=True, env=dict(os.environ), cwd=tmp_path, timeout=600, check=False,
        )
    assert result.returncode == 0, result.stdout + result.stderr
    assert server.mismatches == [] and all(r.headers["authorization"] == f"Bearer {api_key}" for r in server.received)
    return result, EventLog(log_path)


def assert_nowhere(texts: list[str], tmp_path: Path, result: subprocess.CompletedProcess, *secret_texts: str) -> None:
    """None of `secret_texts` in the log's events and blobs, a file the run wrote, or its output."""
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.parent.name == "traces" for p in files)
    for secret in secret_texts:
        assert not any(secret in t for t in texts), secret
        assert not any(secret.encode() in p.read_bytes() for p in files), secret
        assert secret not in result.stdout + result.stderr, secret


def test_a_run_stores_and_prints_no_key_a_server_echoes(keys, release_dir, tmp_path):
    """The hostile tester's run: `eviscene eval run` against a server that echoes the keys."""
    api_key, other = keys
    result, log = run_against_an_echoing_server(release_dir, tmp_path, api_key, api_key, other)
    [called] = [json.loads(p) for p in log.sql("SELECT payload::VARCHAR AS p FROM events WHERE type = 'tool.called'")["p"].to_pylist()]
    assert called["arguments"] == {"query": f"{MASK} {MASK}"}  # the agent went on with the keys masked
    assert_nowhere(stored_texts(log), tmp_path, result, api_key, other)


def test_a_run_stores_no_key_a_server_echoes_encoded(release_dir, tmp_path, monkeypatch):
    """The echoing server says the key percent-encoded (as `quote` writes it, in lower-case hex,
    every byte escaped) and inside a `Basic` credential."""
    api_key = "creds+/" + secrets.token_hex(12)
    monkeypatch.setenv("MODEL_SERVER_CREDS", api_key)
    every_byte = "".join(f"%{byte:02x}" for byte in api_key.encode())  # lower-case hex, no character left as it is
    echoes = (quote(api_key, safe=""), quote(api_key, safe="").replace("%2B", "%2b").replace("%2F", "%2f"), every_byte,
              base64.b64encode(f"user:{api_key}".encode()).decode())
    result, log = run_against_an_echoing_server(release_dir, tmp_path, api_key, *echoes)
    texts = stored_texts(log)
    assert any(MASK in t for t in texts)
    assert_nowhere(texts, tmp_path, result, api_key, *echoes, echoes[-1][8:])  # past `user:`, the key's bits alone


def test_a_key_too_short_to_mask_is_warned_about_as_the_run_starts(release_dir, tmp_path, monkeypatch):
    """Masking a 7-character key wherever it turns up would mask words like it everywhere
    (`register_secret` ignores it): the run says so before its first call, not after a
    server echoed the key into the log."""
    monkeypatch.setenv("MODEL_SERVER_CREDS", "hunter2")
    result, _ = run_against_an_echoing_server(release_dir, tmp_path, "hunter2", "nothing")
    assert result.stderr.startswith(
        "Warning: the agent's API key ($MODEL_SERVER_CREDS) is 7 characters: too short to be found and masked in what its "
        "server writes back (words like it would be masked everywhere), so a server that echoes it puts it in the log\n")


class Unmasked:
    """A provider boundary that masks nothing."""

    def __init__(self, **_):
        pass

    def mask(self, value):
        return value


def test_with_the_provider_boundary_off_the_writer_and_the_episode_still_keep_keys_out(keys, release_dir, tmp_path, monkeypatch):
    """The second line alone: events are masked by the writer, request blobs (which carry
    the model's earlier turns) by the episode that stores them."""
    api_key, other = keys
    monkeypatch.setattr(wire, "KnownSecrets", Unmasked)
    with FakeServer(EchoingModel(api_key, other)) as server:
        log = EventLog(tmp_path / "log.duckdb")
        summary = anyio.run(start_run, log, EvalOptions(
            benchmark=str(release_dir / "runtime_input" / "cases.jsonl"), provider="openai_compatible", model="m",
            base_url=server.url + "/v1", api_key_env="MODEL_SERVER_CREDS", limit=1, timeout=30))
    assert summary.terminations == {"completed": 1}
    later = server.received[-1].body["messages"]
    assert api_key in json.dumps(later)  # the model's earlier turns went back to it unmasked
    texts = stored_texts(log)
    assert texts and not any(key in t for t in texts for key in (api_key, other))
    assert any(MASK in t for t in texts)
