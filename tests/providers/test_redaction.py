"""`redact`: keys, auth headers and their scheme words never survive into a text."""

from eviscene.redaction import MASK, redact, redact_data, register_secret


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
    # An address in the path or a mail address is not a credential.
    assert redact("http://host/path@x and user@example.com") == "http://host/path@x and user@example.com"
