"""The JSON Schemas of the files EviScene reads and writes (`schema/formats/`, DESIGN §1): each
is a valid draft 2020-12 schema; the bundled release, a real run's run directory and its
dataset export validate, every file they hold named by a schema; and each schema refuses what
DESIGN §2 and seed 002's readers refuse (hand-written counterexamples, not the code's output)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

sys.path.insert(0, str(Path(__file__).resolve().parent / "dataset"))
from dataset_builders import write_accepted_release, write_case_split

from eviscene.cli.main import cli

REPO = Path(__file__).resolve().parent.parent
FORMATS = REPO / "schema" / "formats"
RELEASE = REPO / "examples" / "eviscene-demo-v1"
# The release's files, by the schema each is checked against.
RELEASE_FILES = {
    "manifest.json": "release/manifest.json",
    "runtime_input/cases.jsonl": "release/cases.jsonl",
    "private/evaluation_gold.jsonl": "release/evaluation_gold.jsonl",
    "private/source_access_policy.json": "release/source_access_policy.json",
    "private/classification_protocol.json": "release/classification_protocol.json",
    "private/process_reference_protocol.json": "release/process_reference_protocol.json",
    "corpus/pages.jsonl": "release/corpus_pages.jsonl",
}


def validator(name: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(json.loads((FORMATS / f"{name}.schema.json").read_text(encoding="utf-8")))


def documents(path: Path) -> list[object]:
    text = path.read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()] if path.suffix == ".jsonl" else [json.loads(text)]


def run_dir_schema(relative: str) -> str:
    return "run_dir/trace.json" if relative.startswith("traces/") else f"run_dir/{relative}"


def dataset_schema(name: str) -> str:
    if name.startswith("perception."):
        return "dataset/perception.jsonl"
    if name.split(".")[0] in ("train", "validation", "test", "long_holdout"):
        return "dataset/sft.jsonl"
    return f"dataset/{name}"


def errors(schema: str, path: Path) -> list[str]:
    check = validator(schema)
    return [f"{path.name} row {i}: {'/'.join(map(str, e.path))}: {e.message}"
            for i, document in enumerate(documents(path), 1) for e in check.iter_errors(document)]


def test_every_schema_is_a_valid_draft_2020_12_schema_that_says_what_it_describes():
    schemas = sorted(FORMATS.rglob("*.schema.json"))
    assert len(schemas) == 32
    for path in schemas:
        schema = json.loads(path.read_text(encoding="utf-8"))
        jsonschema.Draft202012Validator.check_schema(schema)
        assert schema["title"] and schema["description"] and schema["$id"] == f"eviscene:formats/{path.relative_to(FORMATS).as_posix()[:-len('.schema.json')]}"


def test_the_bundled_release_validates():
    for relative, schema in RELEASE_FILES.items():
        assert errors(schema, RELEASE / relative) == [], relative


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """Real runs of the bundled release, their run directories and a dataset export: three
    cases of two rollouts, and two cases of one (a group of one has no reward std)."""
    root = tmp_path_factory.mktemp("formats")
    db = str(root / "log.duckdb")
    for name, rollouts, cases in (("run", "2", "3"), ("single", "1", "2")):
        run = CliRunner().invoke(cli, ["--db", db, "eval", "run", "--benchmark", str(RELEASE / "runtime_input" / "cases.jsonl"),
                                       "--limit", cases, "--rollouts-per-case", rollouts, "--output-dir", str(root / name)])
        assert run.exit_code == 0, run.output
    export = CliRunner().invoke(cli, ["--db", db, "dataset", "export", "--run", "run", "--out", str(root / "dataset"),
                                      "--allow-training-prohibited"])
    assert export.exit_code == 0, export.output
    return root / "run", root / "dataset", root / "single"


@pytest.mark.parametrize(("folder", "episodes"), [(0, 6), (2, 2)])
def test_every_file_of_a_run_directory_validates(written, folder, episodes):
    run_dir = written[folder]
    files = sorted(p.relative_to(run_dir).as_posix() for p in run_dir.rglob("*") if p.is_file())
    assert len(files) == 12 + episodes  # the seed's twelve files and one trace an episode
    for relative in files:
        assert (FORMATS / f"{run_dir_schema(relative)}.schema.json").is_file(), f"no schema for {relative}"
        assert errors(run_dir_schema(relative), run_dir / relative) == [], relative


def test_every_file_of_a_dataset_export_validates(written):
    _, dataset, _ = written
    manifest = json.loads((dataset / "manifest.json").read_text(encoding="utf-8"))
    files = sorted(p.name for p in dataset.iterdir())
    assert files == sorted(["manifest.json", *manifest["artifacts"].values()])
    assert sum(len(documents(dataset / name)) for name in files if name.endswith(".jsonl")) > 0
    for name in files:
        assert (FORMATS / f"{dataset_schema(name)}.schema.json").is_file(), f"no schema for {name}"
        assert errors(dataset_schema(name), dataset / name) == [], name


def test_the_seed_import_formats_validate(tmp_path):
    """An accepted teacher release (its manifest, selected episodes, eligibility artifacts) and
    a fixed case split as tests/dataset's builders write them for seed 002's loaders."""
    episodes = [{"episode_id": f"c{i}--r000", "case_id": f"c{i}", "families": ["content:a"]} for i in range(2)]
    release = write_accepted_release(tmp_path / "release", episodes)
    split = write_case_split(tmp_path / "split.jsonl", {"c0": ("train", "g0"), "c1": ("validation", "g1")})
    checked = {
        release / "accepted_release_manifest.json": "imports/accepted_release_manifest.json",
        release / "selected_episodes.jsonl": "imports/selected_episodes.jsonl",
        split: "imports/case_split.jsonl",
        **{path: "imports/sft_eligibility.json" for path in (release / "eligibility").glob("*.sft_eligibility.json")},
    }
    assert len(checked) == 5
    for path, schema in checked.items():
        assert errors(schema, path) == [], path


CASE = {"case_id": "c1", "image_path": "runtime_input/images/c1.jpg", "image_sha256": "ab" * 32}
MESSAGES = [{"role": "system", "content": "You verify images."}, {"role": "user", "content": [{"type": "image"}]}]


@pytest.mark.parametrize(("schema", "document", "why"), [
    ("release/cases.jsonl", CASE, None),
    ("release/cases.jsonl", {k: v for k, v in CASE.items() if k != "image_sha256"}, "'image_sha256' is a required property"),
    ("release/cases.jsonl", {**CASE, "image_sha256": "ab" * 31}, "does not match"),
    ("release/cases.jsonl", {**CASE, "case_id": ""}, "should be non-empty"),
    ("release/evaluation_gold.jsonl", {"case_id": "c1"}, "'label' is a required property"),
    ("release/evaluation_gold.jsonl", {"case_id": "c1", "label": "authentic",
                                       "reference_chain": {"sources": [{"source_id": "S1", "url": "u", "role": "witness"}]}}, "is not one of"),
    ("release/corpus_pages.jsonl", {"page_id": "p1", "url": "https://a.example/", "domain": "a.example", "text": "t",
                                    "content_sha256": "ab" * 32, "published": "18 July 2023"}, "does not match"),
    ("release/manifest.json", {"schema_version": "ifv-runtime-release-v0.2"}, "is not one of"),
    ("run_dir/run_results.jsonl", {"case_id": "c1", "episode_id": "e", "prompt_group_id": "g", "rollout_index": -1, "sampling_seed": 1,
                                   "verdict": None, "confidence": None, "termination": "error", "time_taken": 0.1,
                                   "total_tool_calls": 0, "llm_api_calls": 0, "trace_path": "traces/e.json"}, "less than the minimum"),
    # seed 000's stand-in rows of an episode that did not finish (its keys alone, nulls where it has none)
    ("run_dir/run_results.jsonl", {"case_id": "c1", "episode_id": "e", "prompt_group_id": "g", "rollout_index": 0, "sampling_seed": 1,
                                   "verdict": "error", "confidence": 0.0, "termination": None, "error": "not finished",
                                   "time_taken": None, "total_tool_calls": None, "llm_api_calls": None, "token_usage": None,
                                   "trace_path": None, "verdict_basis": None}, None),
    ("run_dir/post_rollout_rewards.jsonl", {"schema_version": "ifv-post-rollout-deterministic-v1", "prompt_group_id": "g",
                                            "case_id": "c1", "episode_id": "e", "classification_correct": False,
                                            "fatal_engineering_error": True, "strict_trace_audit_pass": False,
                                            "training_prohibited": False, "step_ids": [], "process_components": {}}, None),
    ("run_dir/reference_chain_metrics.jsonl", {"schema_version": "v", "case_id": "c1", "engineering_error": True,
                                               "error": "canonical trace is missing", "metrics": None}, None),
    ("run_dir/rollout_groups.jsonl", {"schema_version": "v", "prompt_group_id": "g", "case_id": "c1", "episode_id": "e",
                                      "rollout_index": 0, "trace_path": None}, None),
    # seed 000's row for an episode whose trace went missing: no episode_id, no training fields
    ("run_dir/trajectory_scores.jsonl", {"schema_version": "ifv-trajectory-score-v2", "case_id": "c1",
                                         "components": {"result_reward": 0.0}, "total": 0.0}, None),
    ("run_dir/trajectory_scores.jsonl", {"schema_version": "ifv-trajectory-score-v2", "case_id": "c1", "components": {}}, "'total' is a required property"),
    ("dataset/sft.jsonl", {"schema_version": "v", "dataset_version": "v", "case_id": "c1", "episode_id": "e", "images": [],
                           "messages": MESSAGES, "split": "train", "split_group_id": "g", "token_count_estimate": 1,
                           "tool_call_count": 0}, None),
    ("dataset/sft.jsonl", {"schema_version": "v", "dataset_version": "v", "case_id": "c1", "episode_id": "e", "images": [],
                           "messages": [*MESSAGES, {"role": "robot", "content": "hi"}], "split": "holdout", "split_group_id": "g",
                           "token_count_estimate": 1, "tool_call_count": 0}, "is not one of"),
    ("dataset/manifest.json", {"schema_version": "ifv-trajectory-sft-dataset-manifest-v1", "split_mode": "random"}, "is not one of"),
    ("imports/case_split.jsonl", {"case_id": "c1", "split": "test", "split_group_id": "g"}, "is not one of"),
    ("imports/selected_episodes.jsonl", {"episode_id": "e", "case_id": "c1", "source_trace_sha256": "ab" * 32,
                                         "deterministic_hard_gate_pass": False}, "True was expected"),
    ("imports/accepted_release_manifest.json", {"schema_version": "ifv-accepted-teacher-release-v1", "accepted_case_count": 1}, "is not one of"),
    ("imports/semantic_reward.json", {"rollout": {"episode_id": "e"}, "case_id": "c1"}, None),
    ("imports/semantic_reward.json", {"rollout": {}, "case_id": "c1"}, "is not valid under any of the given schemas"),
])
def test_each_schema_refuses_what_the_formats_refuse(schema, document, why):
    found = [e.message for e in validator(schema).iter_errors(document)]
    if why is None:
        assert found == []
    else:
        assert any(why in message for message in found), found
