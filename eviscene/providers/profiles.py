"""Provider profiles: named teacher/student configurations (`--profile NAME`).

Built-in profiles ship below as TOML; a user file (`$EVISCENE_PROFILES`, else
`$XDG_CONFIG_HOME/eviscene/profiles.toml`, else `~/.config/eviscene/profiles.toml`) adds
profiles and overrides built-ins field by field. A profile names the environment variable
that holds its API key (`api_key_env`), never the key.

Resolution, weakest first: the provider's defaults (`PROVIDER_KINDS`), the profile, explicit
flags; for thinking, the seed's environment overrides (`QWEN_<STAGE>_ENABLE_THINKING`,
`GEMINI_<STAGE>_THINKING_LEVEL`, `GEMINI_AGENT_THINKING_LEVEL`) stay authoritative, and
`GEMINI_MAX_INFLIGHT_REQUESTS` sets Gemini's in-flight limit as in the seed.
"""

from __future__ import annotations

import difflib
import math
import os
import re
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from eviscene.errors import EvisceneError
from eviscene.redaction import redact, register_secret_fields
from eviscene.rules.paths import not_a_file
from eviscene.rules.stages import ACTIVE_POLICY_STAGES, STAGES

WIRE_APIS = ("chat_completions", "responses", "interactions")
THINKING_VALUES = ("on", "off", "minimal", "low", "medium", "high")
STRUCTURED_OUTPUT_FORMS = ("json_schema", "json_object", "text")
# The role tool results go to the model in: `user` for chat templates that drop `tool` messages.
ToolResults = Literal["tool", "user"]
# Completion budget per call: room for a reasoning model's thinking, but no runaway generation
# filling the context window. A profile's `[profiles.NAME.max_tokens]` overrides by stage.
DEFAULT_MAX_TOKENS = {"unified_react": 4096, "unified_judgment": 2048, "perception": 1024}
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# TOML's integers are 64-bit, and so are those of Arrow (`eviscene profiles`), orjson (a request's
# body, the run manifest) and DuckDB; Python's TOML reader takes larger ones, refused here rather
# than by whichever of those meets them first, with a traceback.
LARGEST_INTEGER = 2**63 - 1


@dataclass(frozen=True)
class ProviderKind:
    """What a `--provider` value means before any profile or flag."""

    wire_apis: tuple[str, ...]  # the first is the default
    base_url: str | None = None
    api_key_env: str | None = None
    thinking: dict[str, str] = field(default_factory=dict)
    only_model: str | None = None  # the one model it runs, calling none (offline: its embedded policy)


PROVIDER_KINDS: dict[str, ProviderKind] = {
    "offline": ProviderKind((), only_model="offline-react-v1"),
    # Any OpenAI-compatible server: vLLM, SGLang, lmdeploy, Ollama, OpenAI itself.
    "openai_compatible": ProviderKind(("chat_completions", "responses")),
    "openai": ProviderKind(("responses", "chat_completions"), "https://api.openai.com/v1", "OPENAI_API_KEY"),
    # The seed accepts only the interactions wire for Gemini; its stage defaults are high/low.
    "gemini": ProviderKind(
        ("interactions",),
        "https://generativelanguage.googleapis.com/v1beta",
        "GEMINI_API_KEY",
        {"unified_react": "high", "unified_judgment": "low"},
    ),
    # The seed's local Qwen providers: visible thinking in both active stages by default.
    "qwen_local": ProviderKind(("chat_completions", "responses"), "http://127.0.0.1:8000/v1", None, {"unified_react": "on", "unified_judgment": "on"}),
    "lmdeploy": ProviderKind(("chat_completions",), "http://127.0.0.1:23333/v1", None, {"unified_react": "on", "unified_judgment": "on"}),
}

BUILTIN_PROFILES_TOML = """\
# EviScene provider profiles (`eviscene eval run --profile NAME`).
# Save as ~/.config/eviscene/profiles.toml (or point EVISCENE_PROFILES at a file) and edit:
# a profile here overrides the built-in of the same name field by field. Explicit flags
# (--provider, --model, --base-url, --api-key-env, --llm-wire-api) win over the profile.
#
# Fields: provider, model, base_url, wire_api (chat_completions | responses | interactions),
# api_key_env (the NAME of the environment variable holding the key; never the key),
# max_inflight (requests in flight at once; default: --concurrency), timeout (seconds one
# model request may take), connect_timeout, max_retries, backoff_seconds, send_reasoning
# (send earlier turns' reasoning_content back), extra_body (merged into every request, e.g.
# temperature), description, and [profiles.NAME.thinking] with a value per stage
# (unified_react, unified_judgment, perception): on | off | minimal | low | medium | high.
# context_window (the model's window in tokens; else learned from the server's first
# rejection), [profiles.NAME.max_tokens] (completion budget per stage; defaults
# unified_react 4096, unified_judgment 2048, perception 1024), structured_output (pin the
# judgment's form: json_schema | json_object | text, or a table by stage; default: negotiate)
# and tool_results (chat_completions: `user` sends tool results as user messages, for chat
# templates that drop the `tool` role, as llama-cpp-python's chatml-function-calling does).

[profiles.offline]
description = "The embedded deterministic investigation policy: no network, no key."
provider = "offline"

[profiles.qwen-local]
description = "Student: a Qwen VL model served by vLLM or SGLang on this machine."
provider = "openai_compatible"
model = "Qwen/Qwen3-VL-8B-Thinking"
base_url = "http://127.0.0.1:8000/v1"
wire_api = "chat_completions"
max_inflight = 32
timeout = 600

[profiles.qwen-local.thinking]
unified_react = "on"
unified_judgment = "on"

[profiles.openai-teacher]
description = "Teacher: an OpenAI reasoning model through the Responses API."
provider = "openai"
model = "gpt-5"
base_url = "https://api.openai.com/v1"
wire_api = "responses"
api_key_env = "OPENAI_API_KEY"
max_inflight = 8
timeout = 900

[profiles.openai-teacher.thinking]
unified_react = "high"
unified_judgment = "low"

[profiles.gemini-teacher]
description = "Teacher: Gemini through the generateContent API."
provider = "gemini"
model = "gemini-3-pro-preview"  # thinkingLevel needs Gemini 3; on 2.5 set thinking to "on"/"off"
base_url = "https://generativelanguage.googleapis.com/v1beta"
wire_api = "interactions"
api_key_env = "GEMINI_API_KEY"
max_inflight = 8
timeout = 900

[profiles.gemini-teacher.thinking]
unified_react = "high"
unified_judgment = "low"
"""


class Profile(BaseModel):
    """One named configuration; every field but `provider` may be left to defaults."""

    model_config = ConfigDict(extra="forbid")

    name: str
    source: str = Field("builtin", description="`builtin`, or the file that defined or changed it.")
    description: str = ""
    provider: str
    model: str | None = None
    base_url: str | None = None
    wire_api: str | None = None
    api_key_env: str | None = None
    thinking: dict[str, str] = Field(default_factory=dict)
    max_inflight: int | None = Field(None, ge=1, le=LARGEST_INTEGER)
    # TOML has `inf`; a timer cannot wait forever (an episode failed on "cannot convert float infinity to integer")
    timeout: float | None = Field(None, gt=0, allow_inf_nan=False)
    connect_timeout: float | None = Field(None, gt=0, allow_inf_nan=False)
    max_retries: int | None = Field(None, ge=0, le=LARGEST_INTEGER)
    backoff_seconds: float | None = Field(None, ge=0, allow_inf_nan=False)
    send_reasoning: bool = False
    extra_body: dict[str, Any] = Field(default_factory=dict)
    max_tokens: dict[str, int] = Field(default_factory=dict)
    context_window: int | None = Field(None, ge=256, le=LARGEST_INTEGER)
    structured_output: dict[str, str] = Field(default_factory=dict)
    tool_results: ToolResults | None = None

    @field_validator("max_tokens")
    @classmethod
    def _max_tokens(cls, value: dict[str, int]) -> dict[str, int]:
        for stage, limit in value.items():
            check_stage("max_tokens", stage)
            if limit < 1:
                raise ValueError(f"max_tokens.{stage} must be at least 1")
            if limit > LARGEST_INTEGER:
                raise ValueError(f"max_tokens.{stage} must be at most {LARGEST_INTEGER}")
        return value

    @field_validator("extra_body")
    @classmethod
    def _extra_body(cls, value: dict[str, Any]) -> dict[str, Any]:
        _check_json_numbers("extra_body", value)
        return value

    @field_validator("structured_output", mode="before")
    @classmethod
    def _structured_output(cls, value: Any) -> Any:
        if isinstance(value, str):  # one form for the stage that has a schema
            value = {"unified_judgment": value}
        if isinstance(value, dict):
            for stage, form in value.items():
                check_stage("structured_output", stage)
                if form not in STRUCTURED_OUTPUT_FORMS:
                    raise ValueError(f"structured_output.{stage}: {form!r} is not one of {', '.join(STRUCTURED_OUTPUT_FORMS)}")
        return value

    @field_validator("provider")
    @classmethod
    def _known_provider(cls, value: str) -> str:
        if value not in PROVIDER_KINDS:
            raise ValueError(f"unknown provider {value!r}; known: {', '.join(PROVIDER_KINDS)}")
        return value

    @field_validator("wire_api")
    @classmethod
    def _known_wire(cls, value: str | None) -> str | None:
        if value is not None and value not in WIRE_APIS:
            raise ValueError(f"unknown wire_api {value!r}; known: {', '.join(WIRE_APIS)}")
        return value

    @field_validator("api_key_env")
    @classmethod
    def _env_name(cls, value: str | None) -> str | None:
        return check_env_name(value)

    @field_validator("thinking")
    @classmethod
    def _thinking(cls, value: dict[str, str]) -> dict[str, str]:
        return check_thinking(value)


def check_env_name(value: str | None) -> str | None:
    if value is not None and not _ENV_NAME.match(value):
        # Never echo the value: it may be the key itself, pasted in the wrong place.
        raise ValueError("api_key_env must be the NAME of an environment variable (letters, digits, _), not the key")
    return value


def _check_json_numbers(where: str, value: Any) -> None:
    """Every number in `value` (sent as JSON in each request) is one JSON and orjson hold: finite
    (orjson writes NaN as null) and within 64 bits (orjson refuses, mid-run)."""
    if isinstance(value, dict):
        for key, item in value.items():
            _check_json_numbers(f"{where}.{key}", item)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _check_json_numbers(f"{where}[{index}]", item)
    elif isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{where}: {value} is no JSON number; give a finite one")
    elif isinstance(value, int) and not isinstance(value, bool) and not -LARGEST_INTEGER - 1 <= value <= LARGEST_INTEGER:
        raise ValueError(f"{where}: {value} does not fit in 64 bits")


def check_stage(setting: str, stage: str) -> None:
    """A per-stage setting names a stage the agent has."""
    if stage not in STAGES:
        raise ValueError(f"{setting}: unknown stage {stage!r}; stages: {', '.join(STAGES)}")


def check_thinking(value: dict[str, str]) -> dict[str, str]:
    for stage, setting in value.items():
        check_stage("thinking", stage)
        if setting not in THINKING_VALUES:
            raise ValueError(f"thinking.{stage}: {setting!r} is not one of {', '.join(THINKING_VALUES)}")
    return value


def profiles_path() -> Path:
    configured = os.environ.get("EVISCENE_PROFILES")
    if configured:
        return Path(configured).expanduser()
    config_home = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(config_home) / "eviscene" / "profiles.toml"


def _tables(text: str, origin: str) -> dict[str, dict[str, Any]]:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise EvisceneError(f"{origin}: not valid TOML: {exc}") from None
    unknown = sorted(set(data) - {"profiles"})
    if unknown:
        raise EvisceneError(f"{origin}: unknown top-level key(s) {', '.join(unknown)}; profiles go in [profiles.NAME] tables")
    tables = data.get("profiles", {})
    if not isinstance(tables, dict):
        raise EvisceneError(f"{origin}: profiles must be a table of [profiles.NAME] tables")
    for name, table in tables.items():
        if not isinstance(table, dict):
            raise EvisceneError(f"{origin}: profiles.{name} must be a table")
    return tables


def _profile(name: str, fields: dict[str, Any], origin: str) -> Profile:
    try:
        return Profile.model_validate({**fields, "name": name, "source": origin})
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or name}: {e['msg']}" for e in exc.errors())
        raise EvisceneError(f"{origin}: profile {name!r}: {problems}") from None


def load_profiles(path: Path | None = None) -> dict[str, Profile]:
    """Built-in profiles, then the user's file over them (missing default file: built-ins only;
    a folder or a device in its place is said, not skipped)."""
    merged = {name: dict(table) for name, table in _tables(BUILTIN_PROFILES_TOML, "builtin").items()}
    origins = {name: "builtin" for name in merged}
    named_by_env = path is None and bool(os.environ.get("EVISCENE_PROFILES"))
    explicit = path is not None or named_by_env
    path = path or profiles_path()
    if path.is_file():
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise EvisceneError(f"{path}: not UTF-8 ({exc.reason}); save the profiles file as UTF-8 text") from None
        for name, table in _tables(text, str(path)).items():
            merged[name] = {**merged.get(name, {}), **table}
            origins[name] = str(path)
    elif explicit or path.exists():
        raise EvisceneError(f"profiles file {path} {not_a_file(path)}" + (" (EVISCENE_PROFILES)" if named_by_env else ""))
    return {name: _profile(name, fields, origins[name]) for name, fields in sorted(merged.items())}


def get_profile(name: str) -> Profile:
    profiles = load_profiles()
    if name not in profiles:
        close = difflib.get_close_matches(name, list(profiles), n=1)
        raise EvisceneError(f"unknown profile {name!r}" + (f" (did you mean {close[0]!r}?)" if close else "")
                            + f"; `eviscene profiles` lists them: {', '.join(profiles)}")
    return profiles[name]


@dataclass(frozen=True)
class ProviderSettings:
    """Everything needed to build one provider, after profile and flags are merged. Holds
    the key's variable name, never the key."""

    provider: str
    model: str | None = None
    profile: str | None = None
    base_url: str | None = None
    wire_api: str | None = None
    api_key_env: str | None = None
    thinking: dict[str, str] = field(default_factory=dict)
    max_inflight: int = 1
    timeout: float = 600.0
    connect_timeout: float = 10.0
    max_retries: int = 4
    backoff_seconds: float = 1.0
    send_reasoning: bool = False
    extra_body: dict[str, Any] = field(default_factory=dict)
    max_tokens: dict[str, int] = field(default_factory=lambda: dict(DEFAULT_MAX_TOKENS))
    context_window: int | None = None
    structured_output: dict[str, str] = field(default_factory=dict)  # stage -> pinned form
    tool_results: ToolResults = "tool"  # the role tool results are sent in (chat_completions)
    outage_timeout: float = 600.0

    @property
    def key_header(self) -> str:
        """The header a key goes in: Gemini's own, else `Authorization: Bearer KEY`."""
        return "x-goog-api-key" if self.wire_api == "interactions" else "authorization"

    @property
    def quota(self) -> tuple[str, str, str | None]:
        """What one provider quota is: the provider at one endpoint with one key."""
        return (self.provider, (self.base_url or "").rstrip("/"), self.api_key_env)


def resolve_settings(
    *,
    profile: str | None = None,
    provider: str | None = None,
    model: str | None = None,
    base_url: str | None = None,
    wire_api: str | None = None,
    api_key_env: str | None = None,
    concurrency: int = 1,
    context_window: int | None = None,
    tool_results: ToolResults | None = None,
    outage_timeout: float | None = None,
) -> ProviderSettings:
    """Provider defaults < profile < explicit arguments, checked."""
    chosen = get_profile(profile) if profile else None
    if chosen and provider and provider != chosen.provider:
        raise EvisceneError(f"--provider {provider} conflicts with profile {profile!r} (provider {chosen.provider}); give one of them")
    name = provider or (chosen.provider if chosen else "offline")
    if name not in PROVIDER_KINDS:
        close = difflib.get_close_matches(name, list(PROVIDER_KINDS), n=1)
        raise EvisceneError(f"unknown provider {name!r}" + (f" (did you mean {close[0]!r}?)" if close else "")
                            + f"; available: {', '.join(PROVIDER_KINDS)}")
    try:
        check_env_name(api_key_env)
    except ValueError as exc:
        raise EvisceneError(f"--api-key-env: {exc}") from None
    kind = PROVIDER_KINDS[name]
    settings = ProviderSettings(
        provider=name,
        profile=profile,
        base_url=kind.base_url,
        wire_api=kind.wire_apis[0] if kind.wire_apis else None,
        api_key_env=kind.api_key_env,
        thinking=dict(kind.thinking),
        max_inflight=max(1, concurrency),
    )
    if chosen:
        taken = {
            key: getattr(chosen, key)
            for key in ("model", "base_url", "wire_api", "api_key_env", "max_inflight", "timeout", "connect_timeout", "max_retries",
                        "backoff_seconds", "context_window", "tool_results")
            if getattr(chosen, key) is not None
        }
        settings = replace(
            settings,
            **taken,
            thinking={**settings.thinking, **chosen.thinking},
            send_reasoning=chosen.send_reasoning,
            extra_body=dict(chosen.extra_body),
            max_tokens={**settings.max_tokens, **chosen.max_tokens},
            structured_output=dict(chosen.structured_output),
        )
    flags = {"model": model, "base_url": base_url, "wire_api": wire_api, "api_key_env": api_key_env,
             "context_window": context_window, "tool_results": tool_results, "outage_timeout": outage_timeout}
    settings = replace(settings, **{k: v for k, v in flags.items() if v is not None})
    settings = replace(settings, thinking=_thinking_overrides(settings), max_inflight=_inflight_override(settings))
    _check(settings)
    register_secret_fields(settings.extra_body)
    return settings


def _thinking_overrides(settings: ProviderSettings) -> dict[str, str]:
    thinking = dict(settings.thinking)
    for stage in ACTIVE_POLICY_STAGES:
        if settings.wire_api == "interactions":
            level = os.getenv(f"GEMINI_{stage.upper()}_THINKING_LEVEL") or os.getenv("GEMINI_AGENT_THINKING_LEVEL")
            if level:
                thinking[stage] = level.strip().lower()
        elif settings.wire_api == "chat_completions":
            raw = os.getenv(f"QWEN_{stage.upper()}_ENABLE_THINKING")
            if raw is not None:
                if raw.strip().lower() not in {"true", "false"}:
                    raise EvisceneError(f"QWEN_{stage.upper()}_ENABLE_THINKING must be true or false")
                thinking[stage] = "on" if raw.strip().lower() == "true" else "off"
    try:
        return check_thinking(thinking)
    except ValueError as exc:
        raise EvisceneError(str(exc)) from None


def _inflight_override(settings: ProviderSettings) -> int:
    raw = os.getenv("GEMINI_MAX_INFLIGHT_REQUESTS") if settings.provider == "gemini" else None
    if not raw:
        return settings.max_inflight
    try:
        value = int(raw)
    except ValueError:
        raise EvisceneError("GEMINI_MAX_INFLIGHT_REQUESTS must be an integer") from None
    if value < 1:
        raise EvisceneError("GEMINI_MAX_INFLIGHT_REQUESTS must be at least 1")
    return value


def _check(settings: ProviderSettings) -> None:
    kind = PROVIDER_KINDS[settings.provider]
    if kind.only_model:
        return
    if settings.wire_api not in kind.wire_apis:
        raise EvisceneError(
            f"provider {settings.provider} does not speak the {settings.wire_api} wire API; it accepts {', '.join(kind.wire_apis)}"
        )
    if settings.tool_results != "tool" and settings.wire_api != "chat_completions":
        raise EvisceneError(f"tool results as {settings.tool_results} messages apply to the chat_completions wire API, not {settings.wire_api}")
    if not settings.model:
        raise EvisceneError(f"provider {settings.provider} needs a model: give --model or a profile with one")
    if not settings.base_url:
        raise EvisceneError(f"provider {settings.provider} needs a base URL: give --base-url (e.g. http://127.0.0.1:8000/v1) or a profile with one")
    if not re.match(r"^https?://", settings.base_url):
        # user-info behind a mistyped scheme (`http//user:KEY@host`) is no URL's to the redaction nets: masked here
        shown = re.sub(r"^((?:[a-z][a-z0-9+.-]*:?/+)?).*@", r"\1[REDACTED]@", settings.base_url, flags=re.IGNORECASE)
        raise EvisceneError(f"base URL {redact(shown)!r} must start with http:// or https://")
    authority = settings.base_url.partition("//")[2].partition("/")[0]  # not urlsplit: `http://[oops` raises
    if settings.api_key_env and settings.key_header == "authorization" and "@" in authority:
        raise EvisceneError(
            f"base URL {redact(settings.base_url)!r} carries a user and password, sent in the Authorization header, where "
            f"--api-key-env {settings.api_key_env} sends its key too: give one of the two"
        )


def unused_settings(settings: ProviderSettings, *, vlm: bool = False) -> str | None:
    """What the settings name that their provider never uses, as a sentence naming the flags
    (`--vlm-*` for the describing `vlm`), else None: a model, server or key named for the
    offline provider would be recorded as the run's and never called (`--model gpt-4o` alone
    ran the offline policy under gpt-4o's name)."""
    kind = PROVIDER_KINDS[settings.provider]
    flag = "--vlm-" if vlm else "--"
    named = [f"{flag}{what} {value}" for what, value in (("model", settings.model), ("base-url", settings.base_url),
                                                          ("api-key-env", settings.api_key_env))
             if kind.only_model and value and value != kind.only_model]
    if not named:
        return None
    others = ", ".join(name for name, other in PROVIDER_KINDS.items() if not other.only_model)
    embedded = "describes the picture with its embedded perception" if vlm else f"runs its embedded policy ({kind.only_model})"
    return (f"the {settings.provider} provider {embedded} and calls no model, so {' and '.join(named)} would be recorded "
            f"but never used; name the provider that serves it ({flag}provider {others})"
            + ("" if vlm else " or a --profile (`eviscene profiles` lists them)"))


def api_key(settings: ProviderSettings) -> str | None:
    """The key from the environment variable the settings name (None when none is named)."""
    if not settings.api_key_env:
        return None
    value = os.environ.get(settings.api_key_env, "").strip()
    if not value:
        origin = f"profile {settings.profile!r}" if settings.profile else "--api-key-env or the provider's default"
        raise EvisceneError(f"environment variable {settings.api_key_env} is not set; {origin} names it as holding the API key for {settings.provider}")
    return value


def profile_rows(profiles: dict[str, Profile] | None = None) -> list[dict[str, Any]]:
    """One row per profile for listing: where it comes from and whether its key is set."""
    rows = []
    for profile in (profiles or load_profiles()).values():
        kind = PROVIDER_KINDS[profile.provider]
        key_env = profile.api_key_env or kind.api_key_env
        rows.append(
            {
                "name": profile.name,
                "provider": profile.provider,
                "model": profile.model,
                "wire_api": profile.wire_api or (kind.wire_apis[0] if kind.wire_apis else None),
                "base_url": redact(profile.base_url or kind.base_url),  # a URL may carry a key
                "api_key_env": key_env,
                "key_set": None if key_env is None else bool(os.environ.get(key_env, "").strip()),
                "thinking": ", ".join(f"{stage}={value}" for stage, value in {**kind.thinking, **profile.thinking}.items()) or None,
                "max_inflight": profile.max_inflight,
                "timeout": profile.timeout,
                "source": profile.source,
                "description": profile.description,
            }
        )
    return rows
