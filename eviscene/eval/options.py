"""What a run was asked to do (the seed's flags), resolved once into the options it runs
with, and the manifest recorded in `run.started`.

`EvalOptions` holds the flags as given (each default stated here; `eval run`'s click options
read theirs from these fields). `resolve_options` turns them, once per run, into `RunOptions`:
the flags with every cache setting and path filled in, and the agent's and the VLM's
provider settings (provider defaults < profile < flags < the seed's environment overrides).
Everything after that (the plan, the provider, the manifest, the Ray workers) reads the one
`RunOptions`, so no setting is looked up twice and found different.
"""

from __future__ import annotations

import difflib
import math
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from eviscene.agent.episode import AGENT_DECISION_POLICY_VERSION, MAX_TOOL_ACTIONS
from eviscene.agent.perception import PERCEPTION_BACKEND
from eviscene.errors import EvisceneError, OptionsError
from eviscene.events import FileDescriptor
from eviscene.providers.profiles import ProviderSettings, ToolResults, resolve_settings, unused_settings
from eviscene.redaction import redact_data
from eviscene.release import Release, file_descriptor, sha256_file
from eviscene.release.loader import cases_file
from eviscene.rules.stages import ACTIVE_POLICY_STAGES
from eviscene.rules.tool_families import TOOL_FAMILIES

RUN_SCHEMA_VERSION = "ifv-eval-run-v2"
SAMPLING_SEED_DERIVATION = "sha256(base_seed:case_id:rollout_index)-31bit-v1"
OCR_BACKEND = "rapidocr"
OCR_CACHE_REVISION = "v3"  # v2: boxes wider than their text dropped (ocr.MAX_CHAR_ASPECT); v3: past 2:1 read padded (ocr.MAX_READ_ASPECT), 16-bit grey and transparency read as shown (images._as_rgb)
DEFAULT_OCR_CACHE_VERSION = f"{OCR_BACKEND}-{OCR_CACHE_REVISION}"


class EvalOptions(BaseModel):
    """`eviscene eval run` flags; stored in the run's manifest so `eval resume` can rebuild the
    run. A name it does not know (`case_id` for `case_ids`) or a value of the wrong type is an
    `OptionsError` naming it, never silently the default."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    def __init__(self, **flags: Any) -> None:
        try:
            super().__init__(**flags)
        except ValidationError as exc:
            raise OptionsError(f"EvalOptions: {'; '.join(_problem(e) for e in exc.errors())}") from None

    @classmethod
    def recorded(cls, config: dict[str, Any]) -> EvalOptions:
        """The options a run's manifest recorded (its `config`, which also holds what the run
        resolved, such as the label set); names this version no longer has are left out."""
        return cls(**{name: value for name, value in config.items() if name in cls.model_fields})

    benchmark: str = Field(description="Path to <release>/runtime_input/cases.jsonl, or to the release (its folder, its manifest.json).")
    profile: str | None = None
    provider: str | None = None
    model: str | None = None
    vlm_provider: str | None = None
    vlm_model: str | None = None
    image_access_mode: str = "direct_multimodal"
    llm_wire_api: str | None = None
    vlm_wire_api: str | None = None
    base_url: str | None = None
    api_key_env: str | None = Field(None, description="Name of the environment variable holding the API key; never the key.")
    vlm_base_url: str | None = None
    vlm_api_key_env: str | None = None
    # Model servers: how long calls wait for a down endpoint (or search service) before the run
    # stops; the model's context window in tokens (None: the profile's, else learned from the server).
    provider_outage_timeout: float = 600.0
    context_window: int | None = None
    tool_results: ToolResults | None = None  # None: the profile's, else `tool`
    concurrency: int = 1
    rollouts_per_case: int = 1
    base_sampling_seed: int = 1729
    timeout: float = 1800.0
    limit: int | None = None
    case_ids: list[str] | None = None
    shard_count: int = 1
    shard_index: int = 0
    training_prohibited: bool = False
    source_access_policy: str | None = None
    disable_web_search: bool = False
    disable_image_retrieval: bool = False
    disable_evidence_inspection: bool = False
    # Tool backends: the corpus tools by default; the web backends only when configured.
    search_backend: Literal["corpus", "searxng"] = "corpus"
    searxng_url: str | None = None
    web_visit: bool | None = Field(None, description="Fetch pages over HTTP for `visit` (default: on with searxng).")
    web_timeout: float = 15.0
    web_max_bytes: int = 2_000_000
    web_max_redirects: int = 5
    allow_private_network: bool = Field(False, description="Let the web backend reach loopback, private and link-local addresses.")
    # Caches: None = from the environment when the run starts (then recorded resolved).
    tool_cache_enabled: bool | None = None
    tool_cache_ttl_seconds: float | None = None
    perception_cache_enabled: bool | None = None
    perception_cache_version: str | None = None
    # Where episodes run: in this process, or on Ray actors (the driver stays the single writer).
    executor: Literal["local", "ray"] = "local"
    ray_address: str | None = Field(None, description="Ray cluster to join (`auto`); none starts a local one.")
    workers: int | None = Field(None, description="Ray worker actors (default: one per CPU of the cluster).")

    ocr_cache_version: str | None = None
    agent_decision_policy_version: Literal["unified-react-v1"] = AGENT_DECISION_POLICY_VERSION

    def enabled_tool_families(self) -> dict[str, bool]:
        """Each tool family, on unless its `disable_<family>` flag is set."""
        return {family: not getattr(self, f"disable_{family}") for family in TOOL_FAMILIES}


def _problem(error: Any) -> str:
    name = ".".join(map(str, error["loc"]))
    if error["type"] == "extra_forbidden":
        close = difflib.get_close_matches(name, EvalOptions.model_fields, n=1)
        return f"unknown option {name!r}" + (f" (did you mean {close[0]!r}?)" if close else "")
    if error["type"] == "missing":
        return f"{name} is required"
    return f"{name}: {error['msg']} (got {error['input']!r})"


@dataclass(frozen=True)
class RunOptions:
    """A run's options, resolved once (`resolve_options`): `flags` with every cache setting
    and path filled in (recorded as the manifest's `config`, so a resume rebuilds this), and
    the provider settings of the agent and, under `separate_vlm`, of the describing VLM."""

    flags: EvalOptions
    agent: ProviderSettings
    vision: ProviderSettings | None

    @property
    def provider_name(self) -> str:
        return self.agent.provider


_VLM_FLAGS = ("vlm_provider", "vlm_model", "vlm_base_url", "vlm_wire_api", "vlm_api_key_env")


def check_new_run_flags(run: RunOptions, *, own_provider: bool = False) -> None:
    """Refuse what a new run would record but never use, or cannot use: a model the offline
    provider does not call (unless the caller drives its `own_provider`, which the model names),
    a `--vlm-*` flag outside `separate_vlm`, `--searxng-url` without the searxng backend, a page
    size limit below one byte. A run recorded before these checks still resumes."""
    flags = run.flags
    problems = [] if own_provider else [unused_settings(run.agent)]
    # A VLM of the agent's provider takes its model: the caller's own provider's, with `own_provider`
    if run.vision and not (own_provider and flags.vlm_model is None):
        problems.append(unused_settings(run.vision, vlm=True))
    problems = [problem for problem in problems if problem]
    vlm = [f"--{name.replace('_', '-')}" for name in _VLM_FLAGS if getattr(flags, name) is not None]
    if vlm and flags.image_access_mode != "separate_vlm":
        problems.append(f"{', '.join(vlm)} appl{'ies' if len(vlm) == 1 else 'y'} only with --image-access-mode separate_vlm "
                        f"(a second model describes the picture); this run's mode is {flags.image_access_mode}")
    if flags.searxng_url and flags.search_backend != "searxng":
        problems.append(f"--searxng-url applies only with --search-backend searxng; this run searches the {flags.search_backend}")
    if flags.web_max_bytes < 1:
        problems.append(f"--web-max-bytes must be at least 1, got {flags.web_max_bytes}")
    if problems:
        raise EvisceneError("; ".join(dict.fromkeys(problems)))


def resolve_options(options: EvalOptions) -> RunOptions:
    """`options` resolved for a run: absolute paths (so `eval resume` works from any
    directory), the caches from the environment, the profile and flags into provider settings."""
    flags = resolve_caches(options).model_copy(
        update={
            "benchmark": str(cases_file(options.benchmark)),
            "source_access_policy": (
                str(Path(options.source_access_policy).expanduser().resolve()) if options.source_access_policy else None
            ),
        }
    )
    agent = _agent_settings(flags)
    return RunOptions(flags=flags, agent=agent, vision=_vlm_settings(flags, agent))


def _agent_settings(options: EvalOptions) -> ProviderSettings:
    """The agent model's settings: profile, then flags."""
    return resolve_settings(
        profile=options.profile,
        provider=options.provider,
        model=options.model,
        base_url=options.base_url,
        wire_api=options.llm_wire_api,
        api_key_env=options.api_key_env,
        concurrency=options.concurrency,
        context_window=options.context_window,
        tool_results=options.tool_results,
        outage_timeout=options.provider_outage_timeout,
    )


def _vlm_settings(options: EvalOptions, agent: ProviderSettings) -> ProviderSettings | None:
    """The describing VLM's settings under `separate_vlm`: `--vlm-*` flags over the agent's
    own settings when it is the same provider (or none is named: the agent's model describes
    the image, as a multimodal model can; a text-only one is told to name
    `--vlm-provider offline`), else over that provider's defaults."""
    if options.image_access_mode != "separate_vlm":
        return None
    same = options.vlm_provider in (None, agent.provider)
    return resolve_settings(
        profile=options.profile if same else None,
        provider=agent.provider if same else options.vlm_provider,
        model=options.vlm_model or (agent.model if same else None),
        base_url=options.vlm_base_url or (agent.base_url if same else None),
        wire_api=options.vlm_wire_api or (agent.wire_api if same else None),
        api_key_env=options.vlm_api_key_env or (agent.api_key_env if same else None),
        concurrency=options.concurrency,
        outage_timeout=options.provider_outage_timeout,
    )


def _env_flag(name: str, default: str) -> bool:
    return os.getenv(name, default).strip().lower() in {"1", "true", "yes"}


def resolve_caches(options: EvalOptions) -> EvalOptions:
    """`options` with every cache setting left open filled from the environment
    (TOOL_CACHE_ENABLED, TOOL_CACHE_TTL_SECONDS, PERCEPTION_CACHE_ENABLED,
    PERCEPTION_CACHE_VERSION, OCR_CACHE_VERSION / OCR_BACKEND), so the manifest records what
    runs and a resume repeats it."""
    update: dict[str, Any] = {}
    if options.tool_cache_enabled is None:
        update["tool_cache_enabled"] = _env_flag("TOOL_CACHE_ENABLED", "0")
    if options.tool_cache_ttl_seconds is None:
        raw = os.getenv("TOOL_CACHE_TTL_SECONDS", "3600").strip() or "3600"
        try:
            update["tool_cache_ttl_seconds"] = ttl = float(raw)
        except ValueError:
            ttl = math.nan
        if not math.isfinite(ttl):  # the manifest's JSON would keep nan or inf as null: a resume would read the environment again
            raise EvisceneError(f"TOOL_CACHE_TTL_SECONDS must be a finite number of seconds, got {raw!r}")
    if options.perception_cache_enabled is None:
        update["perception_cache_enabled"] = _env_flag("PERCEPTION_CACHE_ENABLED", "1")
    if options.perception_cache_version is None:
        update["perception_cache_version"] = os.getenv("PERCEPTION_CACHE_VERSION", "").strip() or PERCEPTION_BACKEND
    if options.ocr_cache_version is None:
        update["ocr_cache_version"] = os.getenv("OCR_CACHE_VERSION", "").strip() or f"{ocr_backend()}-{OCR_CACHE_REVISION}"
    return options.model_copy(update=update) if update else options


def ocr_backend() -> str:
    """OCR_BACKEND names the OCR engine as the seed's env does; the embedded perception ships
    one engine (`rapidocr`), so any other name is refused rather than silently ignored."""
    name = os.getenv("OCR_BACKEND", "").strip().lower() or OCR_BACKEND
    if name != OCR_BACKEND:
        raise EvisceneError(f"OCR_BACKEND={name!r}: the embedded perception's OCR engine is {OCR_BACKEND!r}")
    return name


def git_commit() -> str:
    """The runtime checkout's commit (seed semantics: GIT_COMMIT must agree when both exist)."""
    configured = os.getenv("GIT_COMMIT", "").strip()
    try:
        completed = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=Path(__file__).resolve().parent,
            check=True,
            capture_output=True,
            text=True,
            timeout=5,
        )
    except (OSError, subprocess.SubprocessError):
        return configured
    actual = completed.stdout.strip()
    if configured and actual and configured != actual:
        raise EvisceneError(f"GIT_COMMIT does not match the runtime checkout: configured={configured}, actual={actual}")
    return actual or configured


def running_code_commit() -> str:
    """The commit of the code running, to hold a resumed run to its own: GIT_COMMIT where set
    (`git_commit` holds it to the checkout's), else the checkout's HEAD when this package's files
    are tracked there, else "" (an installed copy, perhaps in a venv inside another project,
    whose HEAD says nothing of this code)."""
    if os.getenv("GIT_COMMIT", "").strip():
        return git_commit()
    try:
        tracked = subprocess.run(["git", "ls-files", "--error-unmatch", "__init__.py"], cwd=Path(__file__).resolve().parents[1],
                                 capture_output=True, timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return ""
    return git_commit() if tracked.returncode == 0 else ""


def tool_families(options: EvalOptions) -> dict[str, Any]:
    """The manifest's `agent.tool_families` block: each family, whether its `--disable-*`
    flag left it on, and its tools."""
    enabled = options.enabled_tool_families()
    return {family: {"enabled": enabled[family], "tools": list(tools)} for family, tools in TOOL_FAMILIES.items()}


def manifest_blocks(
    run: RunOptions,
    release: Release,
    *,
    model: str,
    sample_count: int,
    episode_count: int,
    policy: Any,
    scoring_files: dict[str, FileDescriptor],
    tool_backend: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The seed run_manifest.json's `benchmark`, `agent` and `source_access_policy` blocks;
    `scoring_files`: what the run read of its gold, protocols and policy, by kind."""
    options = run.flags
    benchmark_path = Path(options.benchmark)
    concurrency = max(1, options.concurrency)
    return {
        "benchmark": {
            "path": str(benchmark_path),
            "sha256": sha256_file(benchmark_path),
            "sample_count": sample_count,
            "episode_count": episode_count,
            "limit": options.limit,
            "shard_count": options.shard_count,
            "shard_index": options.shard_index,
            "training_prohibited": options.training_prohibited,
            "runtime_release": True,
            "release_id": release.release_id,
            "release_stage": release.release_stage,
            "release_manifest": file_descriptor(release.manifest_path),
            "runtime_contract_version": release.runtime_contract_version,
            # seed 000 writes it into each SFT row's source_metadata (trajectories.py)
            "process_reference_protocol_version": release.manifest.get("process_reference_protocol_version", ""),
            "input_mode": release.input_mode,
            "decision_policy_version": release.decision_policy_version,
            "classification_protocol": _seed_descriptor(scoring_files.get("classification_protocol")),
            "process_reference_protocol": _seed_descriptor(scoring_files.get("process_reference_protocol")),
            "evaluation_gold": None,  # as the seed: filled in from the imported gold when the run directory is written
        },
        "agent": {
            "profile_id": options.profile,
            "decision_policy_version": options.agent_decision_policy_version,
            "provider": run.provider_name,
            "model": model,
            "vlm_provider": options.vlm_provider,
            "vlm_model": options.vlm_model,
            "image_access_mode": options.image_access_mode,
            **provider_manifest(run),
            "timeout_seconds": options.timeout,
            "max_tool_actions": MAX_TOOL_ACTIONS,
            "concurrency": concurrency,
            "perception_cache_enabled": options.perception_cache_enabled,
            "web_cache_enabled": options.tool_cache_enabled,
            "tool_cache_ttl_seconds": _seconds(options.tool_cache_ttl_seconds),
            "perception_cache_version": options.perception_cache_version,
            "ocr_cache_version": options.ocr_cache_version,
            "tool_backend": tool_backend or {"kind": "corpus", "search_backend": "corpus", "web_visit": False},
            "allow_private_network": options.allow_private_network,
            "rollouts_per_case": options.rollouts_per_case,
            "base_sampling_seed": options.base_sampling_seed,
            "tool_families": tool_families(options),
            "sampling_seed_derivation": SAMPLING_SEED_DERIVATION,
        },
        "source_access_policy": {
            "active": bool(policy is not None and policy.active),
            "policy_id": policy.policy_id if policy is not None else None,
            "cache_partition": policy.cache_partition if policy is not None else None,
        },
    }


def _seed_descriptor(file: FileDescriptor | None) -> dict[str, str] | None:
    """The seed manifest's `{path, sha256}` of a file the run read."""
    return file.model_dump(include={"path", "sha256"}) if file is not None else None


def provider_manifest(run: RunOptions) -> dict[str, Any]:
    """The run manifest's provider fields (seed `run_manifest.json` `agent` block)."""
    options, agent, vision = run.flags, run.agent, run.vision
    gemini = agent.provider == "gemini"
    concurrency = max(1, options.concurrency)
    wire = agent.provider != "offline"
    return {
        # separate_vlm without --vlm-provider: the agent's provider describes the images.
        "vlm_provider": vision.provider if vision else options.vlm_provider,
        "vlm_model": vision.model if vision else options.vlm_model,
        "structured_output": {"unified_judgment": agent.structured_output.get("unified_judgment", "negotiated")} if wire else None,
        "max_tokens": dict(agent.max_tokens) if wire else None,
        "context_window": agent.context_window,
        "tool_results": agent.tool_results if wire else None,
        "provider_outage_timeout_seconds": options.provider_outage_timeout,
        "base_url": agent.base_url,
        "vlm_base_url": vision.base_url if vision else None,
        "llm_wire_api": agent.wire_api,
        "vlm_wire_api": vision.wire_api if vision else None,
        "api_key_env": agent.api_key_env,
        "request_options": redact_data(agent.extra_body),
        "stage_thinking_levels": {stage: agent.thinking.get(stage) for stage in ACTIVE_POLICY_STAGES},
        "qwen_stage_enable_thinking": {stage: "true" if agent.thinking.get(stage) == "on" else "false" for stage in ACTIVE_POLICY_STAGES},
        "max_inflight_requests": agent.max_inflight,
        "gemini_max_inflight_requests": agent.max_inflight if gemini else None,
        "gemini_eval_max_concurrency": int(os.getenv("GEMINI_EVAL_MAX_CONCURRENCY", str(concurrency))) if gemini else None,
    }


def _seconds(value: float | None) -> float | int | None:
    return int(value) if value is not None and float(value).is_integer() else value
