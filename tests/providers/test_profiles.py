"""Profiles: built-ins, the user's TOML over them, flags over both, keys only from the
environment variable a profile names; `make_provider` builds what they resolve to."""

from __future__ import annotations

import json
import tomllib

import pytest
from click.testing import CliRunner

from eviscene.cli.main import cli
from eviscene.errors import EvisceneError
from eviscene.eval.options import EvalOptions, provider_manifest, resolve_options
from eviscene.eval.providers import RunProvider, make_provider
from eviscene.providers import OfflineProvider
from eviscene.providers.chat_completions import ChatCompletionsProvider
from eviscene.providers.gemini import GeminiProvider
from eviscene.providers.profiles import BUILTIN_PROFILES_TOML, load_profiles, resolve_settings
from eviscene.providers.responses import ResponsesProvider

USER_FILE = """
[profiles.qwen-local]
model = "Qwen/Qwen2.5-VL-7B-Instruct"
max_inflight = 4

[profiles.qwen-local.thinking]
unified_react = "off"

[profiles.teacher-b]
description = "A second teacher on a gateway."
provider = "openai_compatible"
model = "big-model"
base_url = "https://gateway.example/v1"
api_key_env = "GATEWAY_KEY"
extra_body = { temperature = 0.6 }
"""


@pytest.fixture
def user_file(tmp_path, monkeypatch):
    path = tmp_path / "config" / "eviscene" / "profiles.toml"
    path.parent.mkdir(parents=True)
    path.write_text(USER_FILE, encoding="utf-8")
    return path


def test_builtins_ship_teachers_and_students():
    profiles = load_profiles()
    assert {"offline", "qwen-local", "openai-teacher", "gemini-teacher"} <= set(profiles)
    assert profiles["qwen-local"].base_url == "http://127.0.0.1:8000/v1" and profiles["qwen-local"].wire_api == "chat_completions"
    assert profiles["gemini-teacher"].wire_api == "interactions" and profiles["gemini-teacher"].api_key_env == "GEMINI_API_KEY"
    assert all(p.source == "builtin" for p in profiles.values())


def test_the_user_file_overrides_field_by_field_and_adds_profiles(user_file):
    profiles = load_profiles()
    qwen = profiles["qwen-local"]
    assert (qwen.model, qwen.max_inflight, qwen.base_url) == ("Qwen/Qwen2.5-VL-7B-Instruct", 4, "http://127.0.0.1:8000/v1")
    assert qwen.thinking == {"unified_react": "off"} and qwen.source == str(user_file)
    assert profiles["teacher-b"].extra_body == {"temperature": 0.6}
    assert profiles["openai-teacher"].source == "builtin"


def test_eviscene_profiles_names_another_file(tmp_path, monkeypatch):
    other = tmp_path / "team.toml"
    other.write_text('[profiles.team]\nprovider = "gemini"\nmodel = "gemini-x"\n', encoding="utf-8")
    monkeypatch.setenv("EVISCENE_PROFILES", str(other))
    assert load_profiles()["team"].model == "gemini-x"
    monkeypatch.setenv("EVISCENE_PROFILES", str(tmp_path / "missing.toml"))
    with pytest.raises(EvisceneError, match="missing.toml does not exist"):
        load_profiles()


@pytest.mark.parametrize(
    "text, problem",
    [
        ("[profiles.x]\nprovider = 'nope'\n", "unknown provider 'nope'"),
        ("[profiles.x]\nprovider = 'openai'\ncolour = 'red'\n", "colour: Extra inputs are not permitted"),
        ("[profiles.x]\nprovider = 'openai'\n[profiles.x.thinking]\nunified_react = 'max'\n", "'max' is not one of"),
        ("[profiles.x\n", "not valid TOML"),
        ("[teachers.x]\nprovider = 'openai'\n", "unknown top-level key(s) teachers"),
    ],
)
def test_a_broken_file_is_a_clear_error(user_file, text, problem):
    user_file.write_text(text, encoding="utf-8")
    with pytest.raises(EvisceneError) as caught:
        load_profiles()
    assert str(user_file) in str(caught.value) and problem in str(caught.value)


def test_a_key_pasted_as_api_key_env_is_refused_without_echoing_it(user_file):
    user_file.write_text("[profiles.x]\nprovider = 'openai'\napi_key_env = 'sk-live-abcdefghijklmnop'\n", encoding="utf-8")
    with pytest.raises(EvisceneError, match="must be the NAME of an environment variable") as caught:
        load_profiles()
    assert "sk-live-abcdefghijklmnop" not in str(caught.value)


def test_flags_win_over_the_profile(user_file):
    settings = resolve_settings(profile="teacher-b", model="small-model", base_url="http://127.0.0.1:9999/v1", concurrency=3)
    assert (settings.provider, settings.model, settings.base_url, settings.api_key_env) == (
        "openai_compatible", "small-model", "http://127.0.0.1:9999/v1", "GATEWAY_KEY"
    )
    assert settings.max_inflight == 3  # the profile sets none: --concurrency
    assert resolve_settings(profile="qwen-local", concurrency=64).max_inflight == 4
    with pytest.raises(EvisceneError, match="--provider gemini conflicts with profile 'teacher-b'"):
        resolve_settings(profile="teacher-b", provider="gemini")


@pytest.mark.parametrize(
    "kwargs, problem",
    [
        ({"provider": "gemini", "model": "g", "wire_api": "responses"}, "does not speak the responses wire API; it accepts interactions"),
        ({"provider": "openai_compatible", "model": "m"}, "needs a base URL: give --base-url"),
        ({"provider": "openai_compatible", "base_url": "http://x/v1"}, "needs a model"),
        ({"provider": "openai_compatible", "model": "m", "base_url": "localhost:8000"}, "must start with http://"),
        ({"provider": "claude"}, "unknown provider 'claude'"),
        ({"provider": "gemini", "model": "g", "tool_results": "user"}, "tool results as user messages apply to the chat_completions wire API, not interactions"),
        ({"profile": "nobody"}, "unknown profile 'nobody'"),
        ({"provider": "opena"}, r"^unknown provider 'opena' \(did you mean 'openai'\?\); available: offline, openai_compatible, "),
        ({"profile": "qwen-locl"}, r"^unknown profile 'qwen-locl' \(did you mean 'qwen-local'\?\); `eviscene profiles` lists them: "),
    ],
)
def test_unusable_settings_are_clear_errors(kwargs, problem):
    with pytest.raises(EvisceneError, match=problem):
        resolve_settings(**kwargs)


@pytest.mark.parametrize("typed", ["user:Pw0rdSecret99@127.0.0.1:18801/v1", "http//user:Pw0rdSecret99@127.0.0.1:18801/v1",
                                   "http:/user:Pw0rdSecret99@127.0.0.1:18801/v1",
                                   "http:/user:Pw0rdSecret99@127.0.0.1:18801/v1?api_key=Pw0rdSecret99"])
def test_a_base_url_with_a_mistyped_scheme_is_refused_without_its_password(typed):
    """Behind a mistyped scheme the user-info is no URL's to the redaction nets: the refusal
    printed the password."""
    with pytest.raises(EvisceneError) as refused:
        resolve_settings(provider="openai_compatible", model="m", base_url=typed)
    shown = typed.split("user:")[0] + "[REDACTED]@127.0.0.1:18801/v1" + ("?api_key=[REDACTED]" if "?" in typed else "")
    assert str(refused.value) == f"base URL {shown!r} must start with http:// or https://"


def test_a_base_url_carrying_a_password_and_a_key_for_the_same_header_is_refused(monkeypatch):
    """Both go in the Authorization header: every call failed with aiohttp's "Cannot combine
    AUTHORIZATION header with AUTH argument or credentials encoded in URL"."""
    with pytest.raises(EvisceneError) as refused:
        resolve_settings(provider="openai_compatible", model="m", base_url="http://buser:BasePass9876@127.0.0.1:18801/v1",
                         api_key_env="MYKEY")
    assert str(refused.value) == ("base URL 'http://[REDACTED]@127.0.0.1:18801/v1' carries a user and password, sent in the "
                                  "Authorization header, where --api-key-env MYKEY sends its key too: give one of the two")
    # Gemini's key has a header of its own; a password alone, or a key alone, is no conflict
    assert resolve_settings(provider="gemini", model="g", base_url="https://u:p4ssw0rd-long@gw.example/v1beta", api_key_env="K")
    assert resolve_settings(provider="openai_compatible", model="m", base_url="http://buser:BasePass9876@127.0.0.1:18801/v1")
    # a host no URL parser takes is no traceback here (the call says what is wrong with it)
    assert resolve_settings(provider="openai_compatible", model="m", base_url="http://[oops/v1", api_key_env="MYKEY")


def test_seed_environment_overrides_for_thinking_and_gemini_inflight(monkeypatch):
    monkeypatch.setenv("QWEN_UNIFIED_JUDGMENT_ENABLE_THINKING", "false")
    assert resolve_settings(profile="qwen-local").thinking == {"unified_react": "on", "unified_judgment": "off"}
    monkeypatch.setenv("GEMINI_AGENT_THINKING_LEVEL", "medium")
    monkeypatch.setenv("GEMINI_UNIFIED_JUDGMENT_THINKING_LEVEL", "minimal")
    monkeypatch.setenv("GEMINI_MAX_INFLIGHT_REQUESTS", "3")
    gemini = resolve_settings(profile="gemini-teacher")
    assert gemini.thinking == {"unified_react": "medium", "unified_judgment": "minimal"} and gemini.max_inflight == 3
    monkeypatch.setenv("QWEN_UNIFIED_REACT_ENABLE_THINKING", "maybe")
    with pytest.raises(EvisceneError, match="must be true or false"):
        resolve_settings(profile="qwen-local")


def test_make_provider_builds_the_wire_the_settings_name(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-openai-abcdefghijkl")
    monkeypatch.setenv("GEMINI_API_KEY", "gemini-test-key-abcdefgh")
    built = {}
    for name, options in {
        "offline": EvalOptions(benchmark="x"),
        "qwen": EvalOptions(benchmark="x", profile="qwen-local"),
        "openai": EvalOptions(benchmark="x", profile="openai-teacher"),
        "openai-chat": EvalOptions(benchmark="x", profile="openai-teacher", llm_wire_api="chat_completions", base_url="http://127.0.0.1:1/v1"),
        "gemini": EvalOptions(benchmark="x", profile="gemini-teacher"),
    }.items():
        provider = make_provider(resolve_options(options))
        built[name] = provider.agent if isinstance(provider, RunProvider) else provider
        if isinstance(provider, RunProvider):
            for guard in provider.guards:
                guard.release()
    assert isinstance(built["offline"], OfflineProvider)
    assert isinstance(built["qwen"], ChatCompletionsProvider) and built["qwen"].endpoint.api_key is None
    assert isinstance(built["openai"], ResponsesProvider) and built["openai"].endpoint.api_key == "sk-test-openai-abcdefghijkl"
    assert isinstance(built["openai-chat"], ChatCompletionsProvider) and built["openai-chat"].endpoint.base_url == "http://127.0.0.1:1/v1"
    assert isinstance(built["gemini"], GeminiProvider) and built["gemini"].endpoint.auth_header == "x-goog-api-key"
    assert "sk-test-openai" not in repr(built["openai"]) and "sk-test-openai" not in repr(built["openai"].endpoint)


def test_the_key_comes_only_from_the_named_variable(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(EvisceneError, match="environment variable OPENAI_API_KEY is not set; profile 'openai-teacher' names it"):
        make_provider(resolve_options(EvalOptions(benchmark="x", profile="openai-teacher")))
    monkeypatch.setenv("MY_TEAM_KEY", "team-key-0123456789")
    provider = make_provider(resolve_options(EvalOptions(benchmark="x", profile="openai-teacher", api_key_env="MY_TEAM_KEY")))
    assert provider.agent.endpoint.api_key == "team-key-0123456789"
    for guard in provider.guards:
        guard.release()


def test_options_and_manifest_follow_the_profile(monkeypatch):
    options = resolve_options(EvalOptions(benchmark="x", profile="gemini-teacher", concurrency=6))
    assert options.provider_name == "gemini"
    manifest = provider_manifest(options)
    assert manifest["base_url"] == "https://generativelanguage.googleapis.com/v1beta" and manifest["llm_wire_api"] == "interactions"
    assert manifest["gemini_max_inflight_requests"] == 8 and manifest["stage_thinking_levels"] == {"unified_react": "high", "unified_judgment": "low"}
    assert manifest["api_key_env"] == "GEMINI_API_KEY"
    qwen = provider_manifest(resolve_options(EvalOptions(benchmark="x", profile="qwen-local")))
    assert qwen["qwen_stage_enable_thinking"] == {"unified_react": "true", "unified_judgment": "true"} and qwen["gemini_max_inflight_requests"] is None


def test_eviscene_profiles_lists_them_and_prints_the_template(user_file, monkeypatch):
    monkeypatch.setenv("GATEWAY_KEY", "gateway-secret-value-123")
    result = CliRunner().invoke(cli, ["profiles", "--format", "json"])
    assert result.exit_code == 0, result.output
    rows = {row["name"]: row for row in json.loads(result.output)}
    assert rows["teacher-b"]["key_set"] is True and rows["teacher-b"]["source"] == str(user_file)
    assert rows["qwen-local"]["key_set"] is None and rows["openai-teacher"]["api_key_env"] == "OPENAI_API_KEY"
    assert "gateway-secret-value-123" not in result.output
    template = CliRunner().invoke(cli, ["profiles", "--template"])
    assert template.exit_code == 0 and tomllib.loads(template.output) == tomllib.loads(BUILTIN_PROFILES_TOML)
    table = CliRunner().invoke(cli, ["profiles"])
    assert table.exit_code == 0 and table.output.splitlines()[0].split()[:3] == ["name", "provider", "model"]


def test_eviscene_profiles_masks_the_credentials_a_base_url_carries(user_file):
    """A profile's `base_url` may hold a key (`user:KEY@host`, `?api_key=`): listed masked."""
    user_file.write_text(USER_FILE + '''
[profiles.keyed]
provider = "openai_compatible"
model = "m"
base_url = "http://reader:ukey-31e2a9@127.0.0.1:1/v1?api_key=qkey-77c0d4"
''', encoding="utf-8")
    for args in (["profiles", "--format", "json"], ["profiles"]):
        result = CliRunner().invoke(cli, args)
        assert result.exit_code == 0, result.output
        assert "http://[REDACTED]@127.0.0.1:1/v1?api_key=[REDACTED]" in result.output
        assert "ukey-31e2a9" not in result.output and "qkey-77c0d4" not in result.output


LIMITS_FILE = """
[profiles.small-server]
provider = "openai_compatible"
model = "smollm2"
base_url = "http://127.0.0.1:8765/v1"
context_window = 8192
structured_output = "json_object"
tool_results = "user"

[profiles.small-server.max_tokens]
unified_react = 256
"""


def test_limits_and_a_pinned_structured_output_reach_the_provider_and_the_manifest(tmp_path, monkeypatch):
    path = tmp_path / "profiles.toml"
    path.write_text(LIMITS_FILE, encoding="utf-8")
    monkeypatch.setenv("EVISCENE_PROFILES", str(path))
    settings = resolve_settings(profile="small-server")
    # Every profile gets the stage defaults; the profile's own value wins for its stage.
    assert settings.max_tokens == {"unified_react": 256, "unified_judgment": 2048, "perception": 1024}
    assert settings.context_window == 8192 and settings.structured_output == {"unified_judgment": "json_object"}
    assert resolve_settings(profile="small-server", context_window=4096).context_window == 4096  # the flag wins
    options = resolve_options(EvalOptions(benchmark="x", profile="small-server", provider_outage_timeout=30))
    provider = make_provider(options)
    assert isinstance(provider, RunProvider)
    assert provider.max_tokens["unified_react"] == 256 and provider.context_window == 8192
    assert provider.agent.pinned_forms == {"unified_judgment": "json_object"}
    assert provider.agent.client.breaker.outage_timeout == 30
    manifest = provider_manifest(options)
    assert manifest["structured_output"] == {"unified_judgment": "json_object"} and manifest["context_window"] == 8192
    assert manifest["max_tokens"]["unified_react"] == 256 and manifest["provider_outage_timeout_seconds"] == 30
    assert provider.agent.tool_results == "user" and manifest["tool_results"] == "user"
    assert resolve_settings(profile="small-server", tool_results="tool").tool_results == "tool"  # the flag wins
    provider.guards[0].release()


@pytest.mark.parametrize(
    "table, problem",
    [
        ('structured_output = "xml"', "structured_output.unified_judgment: 'xml' is not one of json_schema, json_object, text"),
        ("max_tokens = { judge = 10 }", "max_tokens: unknown stage 'judge'"),
        ("max_tokens = { unified_react = 0 }", "max_tokens.unified_react must be at least 1"),
        ('tool_results = "system"', "profile 'bad': tool_results: Input should be 'tool' or 'user'"),
    ],
)
def test_bad_limits_are_refused_with_the_field(table, problem, tmp_path, monkeypatch):
    path = tmp_path / "profiles.toml"
    path.write_text(f'[profiles.bad]\nprovider = "openai_compatible"\n{table}\n', encoding="utf-8")
    monkeypatch.setenv("EVISCENE_PROFILES", str(path))
    with pytest.raises(EvisceneError, match=problem.replace("(", r"\(").replace(")", r"\)")):
        load_profiles()


LARGEST = "9223372036854775807"


@pytest.mark.parametrize(
    "content, problem",
    [
        (b"profiles = 1\n", "profiles must be a table of [profiles.NAME] tables"),
        (b"[[profiles]]\nprovider = 'openai'\n", "profiles must be a table of [profiles.NAME] tables"),
        (b"\xff\xfe[\x00p\x00]\x00", "not UTF-8 (invalid start byte); save the profiles file as UTF-8 text"),
        (b"[profiles.x]\nprovider = 'openai'\nmax_inflight = 99999999999999999999\n",
         f"profile 'x': max_inflight: Input should be less than or equal to {LARGEST}"),
        (b"[profiles.x]\nprovider = 'openai'\ntimeout = inf\nbackoff_seconds = inf\n",
         "profile 'x': timeout: Input should be a finite number; backoff_seconds: Input should be a finite number"),
        (b"[profiles.x]\nprovider = 'openai'\nmax_tokens = { perception = 9223372036854775808 }\n",
         f"profile 'x': max_tokens: Value error, max_tokens.perception must be at most {LARGEST}"),
        (b"[profiles.x]\nprovider = 'openai'\nextra_body = { stop = [1, { n = -9223372036854775809 }] }\n",
         "profile 'x': extra_body: Value error, extra_body.stop[1].n: -9223372036854775809 does not fit in 64 bits"),
        (b"[profiles.x]\nprovider = 'openai'\nextra_body = { temperature = -inf }\n",
         "profile 'x': extra_body: Value error, extra_body.temperature: -inf is no JSON number; give a finite one"),
    ],
    ids=["profiles-not-a-table", "profiles-an-array", "utf-16", "max_inflight-past-64-bits", "infinite-timeout",
         "max_tokens-past-64-bits", "extra_body-past-64-bits", "extra_body-infinite"],
)
def test_a_misshapen_profiles_file_is_one_line_exit_2_in_every_command_reading_it(tmp_path, monkeypatch, release_dir, content, problem):
    """`profiles = 1` and a UTF-16 file crashed `_tables` and `read_text`, a `max_inflight` past
    64 bits pyarrow's listing, an extra_body number past 64 bits orjson mid-run, an infinite
    timeout every episode: tracebacks, exit 1, in `eviscene profiles` and in `eval run --profile`
    naming any profile, `offline` too."""
    path = tmp_path / "profiles.toml"
    path.write_bytes(content)
    monkeypatch.setenv("EVISCENE_PROFILES", str(path))
    log = tmp_path / "log.duckdb"
    for args in (["profiles"], ["--db", str(log), "eval", "run", "--profile", "offline", "--benchmark",
                                str(release_dir / "runtime_input" / "cases.jsonl"), "--limit", "1", "--no-progress"]):
        result = CliRunner().invoke(cli, args)
        assert (result.exit_code, result.stdout, result.stderr) == (2, "", f"Error: {path}: {problem}\n"), args
    assert not log.exists()


def test_a_profiles_file_that_is_no_regular_file_is_said_to_be_what_it_is(tmp_path, monkeypatch):
    """A folder or /dev/null as EVISCENE_PROFILES was said not to exist; a folder at the default
    place was skipped without a word."""
    folder = tmp_path / "profiles.d"
    folder.mkdir()
    for named, what in ((folder, "is a folder, not a file"), ("/dev/null", "is a character device, not a regular file"),
                        (tmp_path / "missing.toml", "does not exist")):
        monkeypatch.setenv("EVISCENE_PROFILES", str(named))
        result = CliRunner().invoke(cli, ["profiles"])
        assert (result.exit_code, result.stderr) == (2, f"Error: profiles file {named} {what} (EVISCENE_PROFILES)\n")
    monkeypatch.delenv("EVISCENE_PROFILES")
    default = tmp_path / "config" / "eviscene" / "profiles.toml"  # the isolated XDG_CONFIG_HOME's
    default.mkdir(parents=True)
    result = CliRunner().invoke(cli, ["profiles"])
    assert (result.exit_code, result.stderr) == (2, f"Error: profiles file {default} is a folder, not a file\n")
    default.rmdir()
    assert CliRunner().invoke(cli, ["profiles"]).exit_code == 0  # no file there: the built-ins alone
