"""A native run of the real pipeline (three cases of the bundled release, made a
training-allowed stage) exported from the log, loaded as TRL expects it."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from functools import partial
from pathlib import Path

import anyio
import pytest
from click.testing import CliRunner
from dataset_builders import read_jsonl

from eviscene.cli.main import cli
from eviscene.eval.options import EvalOptions
from eviscene.eval.run import start_run
from eviscene.events import GateDecided
from eviscene.exports.dataset_why import describe, explain_dataset_decision, latest_export_for
from eviscene.log import EventLog
from eviscene.store import EventDraft
from eviscene.views import apply_views

BUNDLED = Path(__file__).resolve().parents[2] / "examples" / "eviscene-demo-v1"
SPLITS = ("train", "validation", "test")


@contextmanager
def pinned_commit(root: Path) -> Iterator[None]:
    """Prompt groups, and so the split each group falls in, derive from the commit: a pinned one
    keeps this module's splits (4 train, 0 validation, 2 test) whatever commit is tested."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GIT_DIR", str(root / "no-git"))  # git finds no checkout: GIT_COMMIT is the commit
        patch.setenv("GIT_COMMIT", "2" * 40)
        yield


@pytest.fixture(scope="module")
def native(tmp_path_factory):
    root = tmp_path_factory.mktemp("native")
    release = root / "release"
    shutil.copytree(BUNDLED, release)
    manifest = json.loads((release / "manifest.json").read_text())
    manifest["release_stage"] = "frozen_eval"  # the bundled release is a development subset: no training
    manifest["process_reference_protocol_version"] = "ifv-process-reference-v0.3"
    (release / "manifest.json").write_text(json.dumps(manifest))
    log = EventLog(root / "log.duckdb")
    options = EvalOptions(benchmark=str(release / "runtime_input" / "cases.jsonl"), rollouts_per_case=2, concurrency=4, limit=3)
    with pinned_commit(root):
        summary = anyio.run(start_run, log, options)
    out = root / "dataset"
    result = CliRunner().invoke(cli, ["--db", str(log.path), "dataset", "export", "--run", summary.run_id, "--out", str(out)])
    assert result.exit_code == 0, result.output
    return log, summary.run_id, out


def sft_rows(out: Path, suffix: str = "") -> list[dict]:
    return [row for split in SPLITS for row in read_jsonl(out / f"{split}{suffix}.jsonl")]


def test_native_export_keeps_every_eligible_rollout(native):
    log, run_id, out = native
    manifest = json.loads((out / "manifest.json").read_text())
    accepted = read_jsonl(out / "accepted_episodes.jsonl")
    assert manifest["candidate_episode_count"] == 6
    assert manifest["source_runs"][0]["run_id"] == run_id and manifest["split_mode"] == "derived"
    eligible = log.sql(
        "SELECT episode_id, case_id FROM sft_eligibility WHERE run_id = ? AND sft_training_eligible ORDER BY episode_id", [run_id]
    ).to_pylist()
    assert [(r["episode_id"], r["case_id"]) for r in accepted] == [(r["episode_id"], r["case_id"]) for r in eligible]
    assert manifest["accepted_episode_count"] == len(eligible) >= 1
    assert manifest["accepted_case_count"] == len({r["case_id"] for r in eligible})
    assert all(len({r["split"] for r in accepted if r["case_id"] == case}) == 1 for case in {r["case_id"] for r in accepted})


def test_native_trace_hashes_match_the_materialized_run_directory(native, tmp_path):
    log, run_id, out = native
    from eviscene.exports.run_dir import materialize_run
    import hashlib
    materialize_run(log, run_id, tmp_path / "run")
    for row in read_jsonl(out / "episode_metadata.jsonl"):
        trace = tmp_path / "run" / "traces" / Path(row["source_trace"]).name
        assert trace.is_file()
        runtime_case = json.loads(trace.read_text())["state"]["runtime_case"]
        assert runtime_case["case_id"] == row["case_id"]
    # the same episodes exported from the materialized directory get the same decisions
    result = CliRunner().invoke(cli, ["--db", str(tmp_path / "other.duckdb"), "dataset", "export", "--run-dir", str(tmp_path / "run"), "--out", str(tmp_path / "again")])
    assert result.exit_code == 0, result.output
    pick = lambda path: {(r["episode_id"], r["split"], r["split_group_id"], r["trajectory_token_count_estimate"]) for r in read_jsonl(path)}
    assert pick(out / "episode_metadata.jsonl") == pick(tmp_path / "again" / "episode_metadata.jsonl")
    assert hashlib.sha256((out / "train.jsonl").read_bytes()).hexdigest() is not None


def test_a_materialized_run_directory_exports_the_runs_decision_policy_version(native, tmp_path):
    """Seed 002 reads decision_policy_version from each trace alone: the materialized traces
    carry the run's (its manifest's agent block), so the directory imported and exported says
    unified-react-v1 and dataset v3, as the native export does."""
    from eviscene.exports.run_dir import materialize_run
    log, run_id, out = native
    materialize_run(log, run_id, tmp_path / "run")
    traces = sorted((tmp_path / "run" / "traces").glob("*.json"))
    assert len(traces) == 6 and {json.loads(t.read_text())["decision_policy_version"] for t in traces} == {"unified-react-v1"}
    db = ["--db", str(tmp_path / "other.duckdb")]
    assert CliRunner().invoke(cli, [*db, "import", str(tmp_path / "run")]).exit_code == 0
    result = CliRunner().invoke(cli, [*db, "dataset", "export", "--run-dir", str(tmp_path / "run"), "--out", str(tmp_path / "again")])
    assert result.exit_code == 0, result.output
    for folder in (out, tmp_path / "again"):
        manifest = json.loads((folder / "manifest.json").read_text())
        assert (manifest["decision_policy_version"], manifest["dataset_version"]) == (
            "unified-react-v1", "ifv-trajectory-sft-dataset-v3"), folder
        assert {row["dataset_version"] for row in sft_rows(folder)} == {"ifv-trajectory-sft-dataset-v3"}, folder


def test_sft_rows_load_with_datasets_in_trl_conversational_format(native):
    datasets = pytest.importorskip("datasets")
    _, _, out = native
    files = [str(out / f"{s}.jsonl") for s in SPLITS if (out / f"{s}.jsonl").stat().st_size]
    ds = datasets.load_dataset("json", data_files=files, split="train")
    assert {"messages", "tools", "images", "episode_id", "case_id", "split", "split_group_id", "teacher_score"} <= set(ds.column_names)
    for row in ds:
        roles = [m["role"] for m in row["messages"]]
        assert roles[0] == "system" and roles[1] == "user" and roles[-1] == "assistant" and "tool" in roles
        assert any(part["type"] == "image" for part in row["messages"][1]["content"])
        calls = [c for m in row["messages"] if m["role"] == "assistant" and m.get("tool_calls") for c in m["tool_calls"]]
        assert calls and all(isinstance(c["function"]["arguments"], dict) for c in calls)
        ids = {c["id"] for c in calls}
        assert all(m["tool_call_id"] in ids for m in row["messages"] if m["role"] == "tool")
        assert all(t["type"] == "function" and t["function"]["name"] for t in row["tools"])
        assert len(row["images"]) == 1 and Path(row["images"][0]).is_file()
    images = ds.cast_column("images", datasets.Sequence(datasets.Image()))
    assert images[0]["images"][0].size[0] > 0


def test_the_process_reference_protocol_version_is_the_release_manifests_in_the_run_directory_and_empty_in_the_dataset(native, tmp_path):
    """Seed 000 writes the release manifest's version into each SFT row of the run directory;
    seed 002 rebuilds the rows with the run manifest's top-level one, which seed 000 never
    writes: ""."""
    from eviscene.exports.run_dir import materialize_run
    log, run_id, out = native
    materialize_run(log, run_id, tmp_path / "run")
    assert {row["source_metadata"]["process_reference_protocol_version"] for row in read_jsonl(tmp_path / "run" / "trajectory_sft.jsonl")} == {
        "ifv-process-reference-v0.3"}
    assert {row["source_metadata"]["process_reference_protocol_version"] for row in sft_rows(out)} == {""}
    # recorded for the rows, not written into run_manifest.json, whose benchmark block is seed 000's
    assert "process_reference_protocol_version" not in json.loads((tmp_path / "run" / "run_manifest.json").read_text())["benchmark"]


def test_the_system_tools_variant_has_the_schemas_in_the_system_message(native):
    datasets = pytest.importorskip("datasets")
    _, _, out = native
    plain, variant = sft_rows(out), sft_rows(out, ".system_tools")
    assert [r["episode_id"] for r in plain] == [r["episode_id"] for r in variant]
    for a, b in zip(plain, variant):
        assert "tools" not in b
        system = "".join(part["text"] for part in b["messages"][0]["content"])
        assert "<tools>" in system and all(json.dumps(t["function"]["name"]) in system for t in a["tools"])
        assert b["messages"][1:] == a["messages"][1:]
    files = [str(out / f"{s}.system_tools.jsonl") for s in SPLITS if (out / f"{s}.system_tools.jsonl").stat().st_size]
    assert "tools" not in datasets.load_dataset("json", data_files=files, split="train").column_names


def test_why_explains_the_dataset_decision(native):
    log, run_id, out = native
    accepted = read_jsonl(out / "episode_metadata.jsonl")[0]
    decision = explain_dataset_decision(log, accepted["episode_id"])
    assert decision.status == "accepted" and decision.out_dir == str(out)
    assert (decision.split, decision.split_group_id) == (accepted["split"], accepted["split_group_id"])
    assert accepted["episode_id"] in decision.group_episode_ids
    assert describe(decision)[0] == f"dataset (export {out}): ACCEPTED"
    # Derived mode kept every eligible rollout; replayed with --one-rollout-per-case, the
    # lesser rollout of a two-rollout case is excluded in favour of the other.
    settings = latest_export_for(log, accepted["episode_id"]).settings
    rows = read_jsonl(out / "episode_metadata.jsonl")
    case = next(r["case_id"] for r in rows if sum(x["case_id"] == r["case_id"] for x in rows) == 2)
    decisions = [
        explain_dataset_decision(log, r["episode_id"], replace(settings, one_rollout_per_case=True)) for r in rows if r["case_id"] == case
    ]
    assert sorted(d.status for d in decisions) == ["accepted", "excluded"]
    best = next(d for d in decisions if d.status == "accepted")
    other = next(d for d in decisions if d.status == "excluded")
    assert other.excluded_because == f"a better rollout of the same case was selected: {best.episode_id}"
    assert describe(other)[:2] == ["dataset: EXCLUDED", f"  because {other.excluded_because}"]
    assert describe(best)[1].startswith(f"  best of 2 eligible rollout(s) of case {case}; ")


def test_native_export_is_byte_identical_on_rerun(native, tmp_path):
    log, run_id, out = native
    result = CliRunner().invoke(cli, ["--db", str(log.path), "dataset", "export", "--run", run_id, "--out", str(tmp_path / "again")])
    assert result.exit_code == 0, result.output
    for path in out.iterdir():
        assert path.read_bytes() == (tmp_path / "again" / path.name).read_bytes(), path.name


def test_the_bundled_development_release_says_why_nothing_was_accepted(tmp_path):
    # The bundled release is a development_subset: training-prohibited, as released.
    log = EventLog(tmp_path / "log.duckdb")
    options = EvalOptions(benchmark=str(BUNDLED / "runtime_input" / "cases.jsonl"), rollouts_per_case=1, concurrency=2, limit=2)
    run_id = anyio.run(start_run, log, options).run_id
    base = ["--db", str(log.path), "dataset", "export", "--run", run_id, "--out"]
    result = CliRunner().invoke(cli, [*base, str(tmp_path / "none")])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[-3:] == [
        "excluded 2 candidates, by decisive reason (excluded_episode_metadata.jsonl):",
        "       2  training_prohibited",
        "no episode was accepted: the source release prohibits training (a development_subset, or a run made with "
        "--training-prohibited); to export anyway, rerun with --allow-training-prohibited and a new --out (recorded in the manifest)",
    ]
    assert lines[-4].startswith("0 accepted of 2 candidates")

    result = CliRunner().invoke(cli, [*base, str(tmp_path / "anyway"), "--allow-training-prohibited"])
    assert result.exit_code == 0, result.output
    manifest = json.loads((tmp_path / "anyway" / "manifest.json").read_text())
    expected = log.sql(
        "SELECT episode_id FROM sft_eligibility WHERE run_id = ? AND sft_eligible_unless_prohibited ORDER BY episode_id", [run_id]
    )["episode_id"].to_pylist()
    assert [r["episode_id"] for r in read_jsonl(tmp_path / "anyway" / "accepted_episodes.jsonl")] == expected
    assert manifest["allow_training_prohibited"] is True and manifest["accepted_episode_count"] == len(expected) >= 1
    assert "no episode was accepted" not in result.output


@pytest.fixture(scope="module")
def two_runs(native, tmp_path_factory):
    """A copy of the native run's log with a second run of the same three cases added."""
    log, _, _ = native
    root = tmp_path_factory.mktemp("two-runs")
    for path in log.path.parent.glob("log.duckdb*"):
        (shutil.copytree if path.is_dir() else shutil.copy)(path, root / path.name)
    copy = EventLog(root / "log.duckdb")
    cases = log.path.parent / "release" / "runtime_input" / "cases.jsonl"
    options = EvalOptions(benchmark=str(cases), rollouts_per_case=2, concurrency=4, limit=3)
    with pinned_commit(root):  # the native run's, so the two runs share episode ids
        anyio.run(lambda: start_run(copy, options, run_id="second"))
    return copy


def test_why_shows_the_dataset_decision_of_the_episodes_own_run(native, two_runs):
    """Two runs of one release share episode ids and an export read only the first: the
    second run's episode has no dataset decision."""
    from eviscene.analysis.why import explain_episode

    _, run_id, out = native
    accepted = read_jsonl(out / "episode_metadata.jsonl")[0]["episode_id"]
    assert two_runs.sql("SELECT count(*) AS n FROM episodes WHERE episode_id = ?", [accepted]).to_pylist()[0]["n"] == 2
    assert explain_episode(two_runs, accepted, run_id).dataset.status == "accepted"
    assert explain_episode(two_runs, accepted, "second").dataset is None


def test_why_of_an_imported_copy_of_the_run_shows_no_decision_of_an_export_that_read_only_the_run(native, tmp_path):
    """The run's directory imported into its own log holds the same episode ids: `why` of the
    imported copy showed the native run's export decision, though that export never read it."""
    from eviscene.analysis.why import explain_episode
    from eviscene.exports.run_dir import materialize_run
    from eviscene.imports import import_path

    log, run_id, out = native
    for path in log.path.parent.glob("log.duckdb*"):
        (shutil.copytree if path.is_dir() else shutil.copy)(path, tmp_path / path.name)
    copy = EventLog(tmp_path / "log.duckdb")
    materialize_run(copy, run_id, tmp_path / "run")
    imported = import_path(copy, tmp_path / "run").import_id
    accepted = read_jsonl(out / "episode_metadata.jsonl")[0]["episode_id"]
    assert explain_episode(copy, accepted, run_id).dataset.status == "accepted"
    assert explain_episode(copy, accepted, imported).dataset is None


def test_a_runs_export_inputs_come_from_its_own_events_as_the_whole_logs_views_give_them(two_runs):
    """The exporter computes a native run's candidates and records with `events` narrowed to
    that run; they equal what the views over the whole two-run log give for it."""
    from eviscene.exports.dataset_views import _native_inputs, _native_records

    con = two_runs.connect(views=False)
    try:
        candidates, (records,) = _native_inputs(con, ("second",))
        apply_views(con)
        whole = con.sql("SELECT * FROM native_candidates WHERE run_id = 'second'").to_arrow_table()
        assert candidates.num_rows == whole.num_rows == 6
        assert candidates.sort_by("episode_id").to_pylist() == whole.sort_by("episode_id").to_pylist()
        assert records.to_pylist() == _native_records(con, "second").to_pylist()
        assert records.num_rows == 6 and set(records["run_id"].to_pylist()) == {"second"}
    finally:
        con.close()


def test_a_run_directory_is_the_same_whatever_other_runs_the_log_holds(native, two_runs, tmp_path):
    """`materialize` computes the views over the run's own events: the first run's directory
    from the two-run log equals, file for file, the one from the log that held it alone."""
    from eviscene.exports.run_dir import materialize_run

    log, run_id, _ = native
    written = materialize_run(log, run_id, tmp_path / "alone")
    assert materialize_run(two_runs, run_id, tmp_path / "beside") == written and written["traces/"] == 6
    files = sorted(p.relative_to(tmp_path / "alone") for p in (tmp_path / "alone").rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(tmp_path / "beside") for p in (tmp_path / "beside").rglob("*") if p.is_file())
    for name in files:
        assert (tmp_path / "alone" / name).read_bytes() == (tmp_path / "beside" / name).read_bytes(), name


def test_a_native_runs_reading_order_is_its_materialized_directorys(native, tmp_path):
    """The order seed 002 reads a run directory in (its perception file's lines, its trace
    files by name), which orders the errors it raises, is the materialized directory's."""
    from eviscene.exports.dataset_views import ExportSettings, open_export
    from eviscene.exports.run_dir import materialize_run

    log, run_id, _ = native
    materialize_run(log, run_id, tmp_path / "run")
    con = open_export(log, ExportSettings(sources=(run_id,), native_runs=(run_id,)))
    try:
        lines = con.execute("SELECT episode_id FROM dataset_perception ORDER BY source_position, line_number").fetchall()
        traces = con.execute("SELECT source_trace FROM dataset_candidates ORDER BY source_position, source_trace").fetchall()
    finally:
        con.close()
    assert [e for (e,) in lines] == [r["episode_id"] for r in read_jsonl(tmp_path / "run" / "perception_trajectories.jsonl")]
    assert [Path(t).name for (t,) in traces] == [p.name for p in sorted((tmp_path / "run" / "traces").glob("*.json"))]


def test_why_says_when_the_log_has_changed_since_the_export_it_replays(tmp_path):
    """An export of shard 0, then shard 1 merged into its run: `why` replays the export's
    settings over the log as it is now, which counts otherwise than the export's manifest,
    and says so rather than pass today's decision off as the one the files hold."""
    cases = str(BUNDLED / "runtime_input" / "cases.jsonl")
    logs = [EventLog(tmp_path / f"shard-{index}.duckdb") for index in (0, 1)]
    for index, log in enumerate(logs):
        options = EvalOptions(benchmark=cases, limit=2, shard_count=2, shard_index=index)
        anyio.run(partial(start_run, log, options, run_id="sh"))
    out = tmp_path / "dataset"
    exported = CliRunner().invoke(cli, ["--db", str(logs[0].path), "dataset", "export", "--run", "sh", "--out", str(out),
                                        "--allow-training-prohibited"])
    assert exported.exit_code == 0, exported.output
    before, theirs = (log.sql("SELECT episode_id FROM episodes ORDER BY 1")["episode_id"].to_pylist() for log in logs)
    episode = before[0]
    assert explain_dataset_decision(logs[0], episode).changed_since is None
    # An event after the export's (as a resume retrying an error writes), no count changed:
    last_seq = logs[0].sql("SELECT max(seq) AS n FROM events WHERE run_id = 'sh'")["n"][0].as_py()
    anyio.run(_record_later, logs[0], "sh")
    assert explain_dataset_decision(logs[0], episode).changed_since == (
        f"sh has changed since the export (its last event seq {last_seq} then, {last_seq + 1} now)")
    merged = CliRunner().invoke(cli, ["--db", str(logs[0].path), "log", "merge", str(logs[1].path)])
    assert merged.exit_code == 0, merged.output
    decision = explain_dataset_decision(logs[0], episode)
    assert decision.changed_since == f"episode_count was {len(before)} at the export, {len(before) + len(theirs)} on the log as it is now"
    assert describe(decision)[1] == (f"  the log has changed since that export ({decision.changed_since}): this is the decision now, "
                                     "not the one its files hold")


async def _record_later(log: EventLog, run_id: str) -> None:
    async with log.writer(run_id) as writer:
        await writer.emit(EventDraft(GateDecided(gate="review", subject=run_id, passed=True, reasons=[])))


def _parquet_columns(path: Path, cache: Path) -> list[str]:
    """The file's column names as pyarrow, DuckDB and `datasets` read them (all three must).
    `datasets` prepares an empty file (its features are the file's columns) but, by its own
    rule, gives no split of no rows: only a file with rows is loaded whole."""
    import duckdb
    import pyarrow.parquet as pq
    from datasets import load_dataset_builder

    table = pq.read_table(path)
    assert duckdb.sql(f"SELECT * FROM read_parquet('{path}')").columns == table.column_names
    builder = load_dataset_builder("parquet", data_files=str(path), cache_dir=str(cache / path.stem))
    builder.download_and_prepare()
    assert list(builder.info.features) == table.column_names
    if table.num_rows:
        assert builder.as_dataset(split="train").column_names == table.column_names
    return table.column_names


def test_every_parquet_file_of_a_demo_export_reads_with_the_columns_of_its_kind(native, tmp_path):
    """An empty split's Parquet file was written with no column at all (`pa.Table.from_pylist([])`),
    which DuckDB ("Need at least one non-root column") and `datasets` refuse: each now has the
    columns the non-empty file of its kind has (a long-holdout file: an SFT file's and the two
    holdout fields), and every file reads with pyarrow, DuckDB and `datasets`."""
    log, run_id, _ = native
    out = tmp_path / "parquet"
    result = CliRunner().invoke(cli, ["--db", str(log.path), "dataset", "export", "--run", run_id, "--out", str(out), "--format", "parquet"])
    assert result.exit_code == 0, result.output
    columns = {path.name: _parquet_columns(path, tmp_path / "cache") for path in sorted(out.glob("*.parquet"))}
    assert len(columns) == 14
    counts = {path.stem: len(read_jsonl(path)) for path in out.glob("*.jsonl")}
    assert counts["train"] and not counts["long_holdout"] and not counts["action_only"]
    assert min(counts[split] for split in SPLITS) == 0  # an empty split beside a filled one
    for kind in ("{}", "{}.system_tools", "perception.{}"):
        filled = next(columns[kind.format(split) + ".parquet"] for split in SPLITS if counts[kind.format(split)])
        assert all(columns[kind.format(split) + ".parquet"] == filled for split in SPLITS)
    assert columns["long_holdout.parquet"] == columns["train.parquet"] + ["holdout_reason", "short_max_tokens"]
    assert columns["action_only.parquet"] == ["episode_id"]


def test_parquet_files_hold_the_jsonl_files_values_under_one_schema_per_kind(native, tmp_path):
    """Arrow inferred one struct for every tool call's arguments (a `reverse_image_search` call's
    `{}` read back as `{"query": null, "url": null, …}`, every message gained every other's keys),
    fell back to JSON text for a whole column when one row did not fit (a `max_results` of 5 in
    one call and "5" in another), and typed a column no row filled `null`. Now objects are JSON
    values: `datasets` gives the JSONL line's objects back, and every file of a kind, and every
    split, has one schema, whatever its rows hold."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from datasets import load_dataset

    log, run_id, _ = native
    folder = tmp_path / "run"
    assert CliRunner().invoke(cli, ["--db", str(log.path), "materialize", run_id, "--out", str(folder)]).exit_code == 0
    # A model that spells one argument two ways: 5 in one call, "5" in another.
    lines = (folder / "trajectory_sft.jsonl").read_text(encoding="utf-8").splitlines()
    spelled = iter((5, "5"))  # then 3, a third spelling's value
    for index, line in enumerate(lines):
        record = json.loads(line)
        for message in record["messages"]:
            for call in message.get("tool_calls") or []:
                if call["function"]["name"] == "text_search":
                    call["function"]["arguments"]["max_results"] = next(spelled, 3)
        lines[index] = json.dumps(record)
    (folder / "trajectory_sft.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "parquet"
    result = CliRunner().invoke(cli, ["--db", str(tmp_path / "log.duckdb"), "dataset", "export", "--run-dir", str(folder),
                                      "--out", str(out), "--format", "parquet", "--allow-training-prohibited"])
    assert result.exit_code == 0, result.output

    for split in SPLITS:
        jsonl = read_jsonl(out / f"{split}.jsonl")
        if not jsonl:
            continue
        loaded = load_dataset("parquet", data_files=str(out / f"{split}.parquet"), split="train", cache_dir=str(tmp_path / "cache"))
        assert [row["messages"] for row in loaded] == [row["messages"] for row in jsonl]
        assert [row["tools"] for row in loaded] == [row["tools"] for row in jsonl]
    schemas = {path.stem: pq.read_schema(path) for path in out.glob("*.parquet")}
    for kind in ("{}", "{}.system_tools"):
        assert {schemas[kind.format(split)].field("messages").type.value_type for split in SPLITS} == {pa.json_()}
        assert len({schemas[kind.format(split)].remove_metadata() for split in SPLITS}) == 1
    pa.concat_tables([pq.read_table(out / f"{split}.parquet") for split in SPLITS])  # one schema: they stack
    for name in ("episode_metadata", "excluded_episode_metadata", "accepted_episodes"):
        schema = schemas[name]
        assert pa.null() not in {field.type for field in schema} and pa.list_(pa.null()) not in {field.type for field in schema}
    assert schemas["episode_metadata"].field("training_exclusion_reasons").type == pa.list_(pa.string())
    assert schemas["episode_metadata"].field("structured_eligibility_pass").type == pa.bool_()
