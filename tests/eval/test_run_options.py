"""Run options are stated once and resolved once: `eval run` parses to exactly the
EvalOptions defaults (SLURM's array variables still feed the shard flags), the resolved
`RunOptions` are immutable and hold what the profile said when the run was planned, and the
tool families come from their one definition."""

import ast
import dataclasses
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Literal, get_args, get_origin

import pytest
from pydantic import ValidationError

from eviscene.cli.eval import eval_group
from eviscene.errors import EvisceneError, OptionsError
from eviscene.eval.options import EvalOptions, check_new_run_flags, provider_manifest, resolve_options, tool_families
from eviscene.eval.providers import make_provider
from eviscene.rules.tool_families import TOOL_FAMILIES

ROOT = Path(__file__).resolve().parents[2]
BENCHMARK = ROOT / "examples" / "eviscene-demo-v1" / "runtime_input" / "cases.jsonl"
RUN, RESUME = eval_group.commands["run"], eval_group.commands["resume"]
# `eval run` flags that are not run options: where and how the command reports.
COMMAND_ONLY = {"output_dir", "run_id", "materialize", "progress"}
# Run options only the environment sets when a run starts (recorded resolved).
ENVIRONMENT_ONLY = {"perception_cache_enabled", "perception_cache_version", "ocr_cache_version"}


def parsed(*args: str) -> dict:
    return dict(RUN.make_context("run", ["--benchmark", str(BENCHMARK), *args]).params)


def test_eval_run_parses_to_the_run_option_defaults(monkeypatch):
    monkeypatch.delenv("SLURM_ARRAY_TASK_COUNT", raising=False)
    monkeypatch.delenv("SLURM_ARRAY_TASK_ID", raising=False)
    params = parsed()
    assert set(params) - COMMAND_ONLY == set(EvalOptions.model_fields) - ENVIRONMENT_ONLY
    assert params.pop("case_ids") == ()  # repeatable; none given is the field's None
    defaults = {name: field.default for name, field in EvalOptions.model_fields.items() if not field.is_required()}
    expected = {name: defaults[name] for name in params if name not in COMMAND_ONLY | {"benchmark"}}
    assert {name: params[name] for name in expected} == expected
    # A few spelled out, so a default moved in both places at once is still seen.
    assert (params["concurrency"], params["base_sampling_seed"], params["timeout"], params["shard_count"]) == (1, 1729, 1800.0, 1)
    assert (params["executor"], params["search_backend"], params["tool_cache_enabled"]) == ("local", "corpus", None)


def test_slurm_array_variables_still_feed_the_shard_flags(monkeypatch):
    monkeypatch.setenv("SLURM_ARRAY_TASK_COUNT", "4")
    monkeypatch.setenv("SLURM_ARRAY_TASK_ID", "2")
    params = parsed()
    assert (params["shard_count"], params["shard_index"]) == (4, 2)
    assert parsed("--shard-index", "3")["shard_index"] == 3  # the flag wins


def test_choices_are_the_literal_fields_values():
    for command in (RUN, RESUME):
        for param in command.params:
            field = EvalOptions.model_fields.get(param.name)
            if field is not None and get_origin(field.annotation) is Literal:
                assert list(param.type.choices) == list(get_args(field.annotation)), (command.name, param.name)
    executor = next(p for p in RESUME.params if p.name == "executor")
    assert list(executor.type.choices) == ["local", "ray"] and executor.default is None  # resume: as the run did


def test_every_tool_family_has_its_disable_flag_and_manifest_block():
    flags = {p.name: p.opts for p in RUN.params}
    for family in TOOL_FAMILIES:
        assert flags[f"disable_{family}"] == [f"--disable-{family.replace('_', '-')}"]
    assert tool_families(EvalOptions(benchmark="x", disable_image_retrieval=True)) == {
        "web_search": {"enabled": True, "tools": ["text_search"]},
        "image_retrieval": {"enabled": False, "tools": ["text_image_search", "reverse_image_search"]},
        "evidence_inspection": {"enabled": True, "tools": ["visit", "compare_with_reference"]},
    }


def test_resolved_options_are_complete_and_immutable(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TOOL_CACHE_ENABLED", "yes")
    monkeypatch.setenv("TOOL_CACHE_TTL_SECONDS", "60")
    monkeypatch.delenv("PERCEPTION_CACHE_ENABLED", raising=False)
    flags = EvalOptions(benchmark="release/cases.jsonl", source_access_policy="policy.json")
    run = resolve_options(flags)
    assert run.flags.benchmark == str(tmp_path / "release" / "cases.jsonl")
    assert run.flags.source_access_policy == str(tmp_path / "policy.json")
    assert (run.flags.tool_cache_enabled, run.flags.tool_cache_ttl_seconds, run.flags.perception_cache_enabled) == (True, 60.0, True)
    assert run.provider_name == "offline" and run.agent.provider == "offline" and run.vision is None
    assert flags.tool_cache_enabled is None  # the flags as given stay as given
    with pytest.raises(ValidationError):
        run.flags.concurrency = 8
    with pytest.raises(dataclasses.FrozenInstanceError):
        run.agent = run.agent
    assert pickle.loads(pickle.dumps(run)) == run  # what a Ray worker receives


def test_a_misspelled_or_mistyped_option_is_named_not_run_with_its_default():
    """`case_id` for `case_ids` was dropped without a word, and the run went over every case."""
    with pytest.raises(OptionsError) as unknown:
        EvalOptions(benchmark="cases.jsonl", case_id=["demo-0004"], rollout_per_case=2)
    assert str(unknown.value) == ("EvalOptions: unknown option 'case_id' (did you mean 'case_ids'?); "
                                  "unknown option 'rollout_per_case' (did you mean 'rollouts_per_case'?)")
    with pytest.raises(OptionsError, match=r"^EvalOptions: concurrency: Input should be a valid integer.*\(got 'many'\)$"):
        EvalOptions(benchmark="cases.jsonl", concurrency="many")
    with pytest.raises(OptionsError, match="^EvalOptions: benchmark is required$"):
        EvalOptions()
    # What a run's manifest recorded beside its flags (the label set) and names an older
    # version had are not options to refuse: a resume rebuilds the run from the rest.
    recorded = EvalOptions.recorded({"benchmark": "cases.jsonl", "limit": 2, "label_set": ["a"], "release_schema_version": "v"})
    assert recorded == EvalOptions(benchmark="cases.jsonl", limit=2)


PROFILE = """
[profiles.lab]
provider = "openai_compatible"
model = "{model}"
base_url = "http://127.0.0.1:{port}/v1"
"""


def test_a_run_reads_its_profile_once(monkeypatch, tmp_path):
    """The provider and the manifest come from one resolution: a profile file edited after the
    run was planned changes neither."""
    path = tmp_path / "profiles.toml"
    path.write_text(PROFILE.format(model="first", port=8001), encoding="utf-8")
    monkeypatch.setenv("EVISCENE_PROFILES", str(path))
    run = resolve_options(EvalOptions(benchmark="x", profile="lab", image_access_mode="separate_vlm"))
    path.write_text(PROFILE.format(model="second", port=8002), encoding="utf-8")
    provider = make_provider(run, guarded=False)
    assert (provider.agent.model, provider.vision.model) == ("first", "first")
    assert provider.agent.endpoint.base_url == "http://127.0.0.1:8001/v1"
    manifest = provider_manifest(run)
    assert (manifest["base_url"], manifest["vlm_base_url"], manifest["vlm_model"]) == (
        "http://127.0.0.1:8001/v1", "http://127.0.0.1:8001/v1", "first",
    )


def imported_modules(path: Path) -> set[str]:
    """Every module a file imports, function-level and TYPE_CHECKING imports included."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def test_options_do_not_import_the_providers_and_the_rules_import_nothing():
    assert not any(m.startswith("eviscene.eval.providers") for m in imported_modules(ROOT / "eviscene" / "eval" / "options.py"))
    assert not any(m.startswith("eviscene") for m in imported_modules(ROOT / "eviscene" / "rules" / "tool_families.py"))


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "soon"])
def test_a_tool_cache_ttl_from_the_environment_the_manifest_cannot_keep_is_refused(monkeypatch, tmp_path, value):
    """--tool-cache-ttl refuses nan and inf; the variable behind its default let them through, and
    the manifest kept null, so a resume read the environment again."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TOOL_CACHE_TTL_SECONDS", value)
    with pytest.raises(EvisceneError, match=f"^TOOL_CACHE_TTL_SECONDS must be a finite number of seconds, got '{value}'$"):
        resolve_options(EvalOptions(benchmark="release/cases.jsonl"))


@pytest.mark.parametrize(("flags", "problem"), [
    # `--model gpt-4o` alone ran the offline policy, recorded as gpt-4o's run
    ({"model": "gpt-4o"}, "the offline provider runs its embedded policy (offline-react-v1) and calls no model, so --model gpt-4o "
                          "would be recorded but never used; name the provider that serves it (--provider openai_compatible, openai, "
                          "gemini, qwen_local, lmdeploy) or a --profile (`eviscene profiles` lists them)"),
    ({"base_url": "http://x/v1", "api_key_env": "MY_KEY"}, "so --base-url http://x/v1 and --api-key-env MY_KEY would be recorded"),
    # the describing model's flags for a VLM of the offline provider
    ({"provider": "openai", "model": "gpt-4o", "image_access_mode": "separate_vlm", "vlm_provider": "offline", "vlm_model": "mini"},
     "the offline provider describes the picture with its embedded perception and calls no model, so --vlm-model mini would be "
     "recorded but never used; name the provider that serves it (--vlm-provider openai_compatible, "),
    ({"vlm_model": "foo", "vlm_provider": "openai"},
     "--vlm-provider, --vlm-model apply only with --image-access-mode separate_vlm (a second model describes the picture); "
     "this run's mode is direct_multimodal"),
    ({"searxng_url": "http://127.0.0.1:9"}, "--searxng-url applies only with --search-backend searxng; this run searches the corpus"),
    ({"web_max_bytes": -5}, "--web-max-bytes must be at least 1, got -5"),
])
def test_a_new_run_refuses_flags_it_would_record_and_never_use(flags, problem, tmp_path):
    """Each was recorded in run.started and ignored: the runs list showed an offline run as
    gpt-4o's, a VLM or search service named that nothing called, every visit refused."""
    with pytest.raises(EvisceneError) as refused:
        check_new_run_flags(resolve_options(EvalOptions(benchmark=str(BENCHMARK), **flags)))
    assert problem in str(refused.value)
    check_new_run_flags(resolve_options(EvalOptions(benchmark=str(BENCHMARK), model="offline-react-v1")))  # its own name


def test_a_caller_s_own_provider_is_named_by_the_model_flag_for_the_agent_and_its_vlm():
    """From Python, `start_run(provider=…)` drives the caller's own provider, which `model`
    names; under separate_vlm the VLM takes that model too (none of theirs was refused)."""
    for flags in ({"model": "my-model"}, {"model": "my-model", "image_access_mode": "separate_vlm"}):
        check_new_run_flags(resolve_options(EvalOptions(benchmark=str(BENCHMARK), **flags)), own_provider=True)


def test_a_run_refused_for_an_unused_flag_leaves_no_log(tmp_path):
    done = subprocess.run([str(Path(sys.executable).with_name("eviscene")), "--db", str(tmp_path / "log.duckdb"), "eval", "run",
                           "--benchmark", str(BENCHMARK), "--model", "gpt-4o", "--limit", "1", "--output-dir", str(tmp_path / "run")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and done.stderr.startswith("Error: the offline provider runs its embedded policy"), done.stderr
    assert not (tmp_path / "log.duckdb").exists() and not (tmp_path / "run").exists()
