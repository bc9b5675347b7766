"""An imported run directory is a run: `runs`, `why`, `materialize` and `runs compare` read
it like a native one. The run directories are written by hand here (seed layout, every
expected figure worked out from the rows below) or materialized from the hand-built native
log of the view tests."""

from __future__ import annotations

import csv
import gc
import importlib.util
import io
import json
import os
import socket
import sys
from pathlib import Path

import anyio
import pytest
from click.testing import CliRunner

from eviscene.analysis.compare import compare_runs
from eviscene.analysis.why import IMPORTED_STORIES_READ, explain_episode, imported_stories
from eviscene.cli.main import cli
from eviscene.errors import EvisceneError
from eviscene.exports.run_dir import materialize_run
from eviscene.imports import import_path, plan_import, record_import
from eviscene.imports.record import _drafts
from eviscene.log import EventLog
from eviscene.rules import jsonl
from eviscene.store import EventDraft

VIEWS_CONFTEST = Path(__file__).resolve().parent.parent / "views" / "conftest.py"
RELEASE_CASES = Path(__file__).resolve().parents[2] / "examples" / "eviscene-demo-v1" / "runtime_input" / "cases.jsonl"


def _views_fixtures():
    spec = importlib.util.spec_from_file_location("views_log_builder", VIEWS_CONFTEST)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # pydantic models resolve their module through sys.modules
    spec.loader.exec_module(module)
    return module


def _jsonl(rows: list[dict]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode("utf-8")


# Three episodes: case-A's rollout 0 is wrong, its rollout 1 right; case-B's only rollout
# failed with a provider error (the one error the manifest counts).
RESULTS = [
    {"case_id": "case-A", "verdict": "manipulated", "confidence": 0.8, "verdict_basis": [], "termination": "completed",
     "time_taken": 1.5, "total_tool_calls": 2, "llm_api_calls": 3, "token_usage": {"total_tokens": 10}, "error": "",
     "trace_path": "traces/case-A--r000.json", "prompt_group_id": "g-A", "episode_id": "case-A--r000", "rollout_index": 0,
     "sampling_seed": 7},
    {"case_id": "case-A", "verdict": "authentic", "confidence": 0.9, "verdict_basis": [], "termination": "completed",
     "time_taken": 2.0, "total_tool_calls": 1, "llm_api_calls": 2, "token_usage": {"total_tokens": 8}, "error": "",
     "trace_path": "traces/case-A--r001.json", "prompt_group_id": "g-A", "episode_id": "case-A--r001", "rollout_index": 1,
     "sampling_seed": 8},
    {"case_id": "case-B", "verdict": "error", "confidence": 0.0, "verdict_basis": [], "termination": "error",
     "time_taken": 0.1, "total_tool_calls": 0, "llm_api_calls": 1, "token_usage": {}, "error": "provider down",
     "trace_path": "traces/case-B--r000.json", "prompt_group_id": "g-B", "episode_id": "case-B--r000", "rollout_index": 0,
     "sampling_seed": 7},
]
CORRECT = {"case-A--r000": False, "case-A--r001": True, "case-B--r000": False}
TOTALS = {"case-A--r000": 0.25, "case-A--r001": 0.75, "case-B--r000": 0.0}


def write_seed_run_dir(root: Path, run_id: str = "20261130_141502_offline_offline-react-v1") -> Path:
    manifest = {
        "schema_version": "ifv-runtime-release-v0.3", "run_id": run_id, "status": "completed_with_errors",
        "started_at": "2026-11-30T14:15:02+00:00", "completed_at": "2026-11-30T14:20:00+00:00", "git_commit": "abc",
        "benchmark": {"release_id": "demo-v1", "release_stage": "frozen_eval"},
        "agent": {"provider": "offline", "model": "offline-react-v1", "rollouts_per_case": 2, "base_sampling_seed": 7},
        "result": {"num_samples": 2, "num_episodes": 3, "num_errors": 1},
    }
    (root / "traces").mkdir(parents=True)
    (root / "run_manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    (root / "run_results.jsonl").write_bytes(_jsonl(RESULTS))
    (root / "predictions.jsonl").write_bytes(_jsonl([{"case_id": "case-A", "prediction": "manipulated", "confidence": 0.8}]))
    (root / "process_metrics.jsonl").write_bytes(
        _jsonl([{"episode_id": e, "case_id": e.split("--")[0], "result_correct": c} for e, c in CORRECT.items()])
    )
    (root / "trajectory_scores.jsonl").write_bytes(
        _jsonl([{"episode_id": e, "case_id": e.split("--")[0], "components": {"result_reward": t}, "total": t} for e, t in TOTALS.items()])
    )
    (root / "summary.json").write_text('{"num_samples": 3, "num_errors": 1}', encoding="utf-8")
    (root / "notes.txt").write_bytes(b"kept verbatim \x00\xff")
    for row in RESULTS:
        (root / row["trace_path"]).write_text(json.dumps({"image_id": row["episode_id"], "state": {}}), encoding="utf-8")
    return root


def import_as_older_versions_did(log: EventLog, run: Path) -> str:
    """The run id of `run` imported as EviScene read it before a number past a double's range
    was refused (as Infinity): a log written then holds such a number."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(jsonl, "_finite_float", float)
        return import_path(log, run).import_id


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_every_file_of_a_run_directory_is_imported(tmp_path):
    log = EventLog(tmp_path / "log.duckdb")
    result = import_path(log, write_seed_run_dir(tmp_path / "run"))
    kinds = log.sql("SELECT relative_path, kind FROM imported_files ORDER BY relative_path").to_pylist()
    assert {k["relative_path"]: k["kind"] for k in kinds} == {
        "notes.txt": "run_file", "predictions.jsonl": "predictions", "process_metrics.jsonl": "process_metrics",
        "run_manifest.json": "run_manifest", "run_results.jsonl": "run_results", "summary.json": "summary",
        "trajectory_scores.jsonl": "trajectory_scores", "traces/case-A--r000.json": "trace",
        "traces/case-A--r001.json": "trace", "traces/case-B--r000.json": "trace",
    }
    assert result.files == 10
    # the imported-run views (empty on the views tests' log) keep their declared keys
    assert log.sql("SELECT count(*) AS n, count(DISTINCT (run_id, episode_id)) AS d FROM imported_episodes").to_pylist() == [{"n": 3, "d": 3}]
    assert log.sql("SELECT count(*) AS n, count(DISTINCT (run_id, kind, line_number)) AS d FROM imported_run_rows").to_pylist() == [{"n": 9, "d": 9}]
    assert log.sql("SELECT run_id, source_run_id FROM imported_runs").to_pylist() == [
        {"run_id": result.import_id, "source_run_id": "20261130_141502_offline_offline-react-v1"}]


def test_jsonl_read_as_the_strict_reader_reads_it_crlf_and_lines_of_python_white_space(tmp_path):
    """CRLF ends and lines of only white space to Python (a form feed, a
    no-break space, a lone CR) pass the import's strict reader; the views read the same rows
    (they failed the JSON cast before)."""
    plain = write_seed_run_dir(tmp_path / "plain", run_id="plain")
    odd = write_seed_run_dir(tmp_path / "odd", run_id="odd")
    for name in ("run_results.jsonl", "process_metrics.jsonl", "trajectory_scores.jsonl"):
        lines = (odd / name).read_text(encoding="utf-8").splitlines()
        blanks = ["\x0c", "\u00a0", "\r", "\u3000 \t"]
        mixed = [line for pair in zip(lines, blanks) for line in pair] + lines[len(blanks):]
        (odd / name).write_bytes("".join(f"{line}\r\n" for line in mixed).encode("utf-8"))
    log = EventLog(tmp_path / "log.duckdb")
    ids = {name: import_path(log, root).import_id for name, root in (("plain", plain), ("odd", odd))}
    rows = {name: log.sql(f"SELECT kind, line_number, row->>'episode_id' AS episode FROM imported_run_rows "
                          f"WHERE run_id = '{run_id}' ORDER BY kind, line_number").to_pylist() for name, run_id in ids.items()}
    # every row on an odd line (1, 3, 5) of its file, the blank between them skipped
    assert [(r["kind"], r["line_number"], r["episode"]) for r in rows["odd"]] == [
        (kind, number, episode) for kind in ("process_metrics", "run_results", "trajectory_scores")
        for number, episode in ((1, "case-A--r000"), (3, "case-A--r001"), (5, "case-B--r000"))]
    assert [(r["kind"], r["episode"]) for r in rows["odd"]] == [(r["kind"], r["episode"]) for r in rows["plain"]]
    out = CliRunner().invoke(cli, ["--db", str(log.path), "runs", "--format", "json"])
    assert sorted((r["episodes_finished"], r["episodes_errored"]) for r in json.loads(out.output)) == [(3, 1), (3, 1)]


def test_nested_and_hidden_files_are_imported_once_and_linked_folders_are_not_entered(tmp_path):
    root = write_seed_run_dir(tmp_path / "run")
    (root / "logs" / "deep").mkdir(parents=True)
    (root / "logs" / "deep" / "a.txt").write_text("a", encoding="utf-8")
    (root / ".hidden").write_text("h", encoding="utf-8")
    (root / "traces" / "notes.md").write_text("not a trace", encoding="utf-8")
    (root / "logs-link").symlink_to(root / "logs", target_is_directory=True)
    log = EventLog(tmp_path / "log.duckdb")
    import_path(log, root)
    rows = log.sql("SELECT relative_path FROM imported_files WHERE kind = 'run_file' ORDER BY relative_path").to_pylist()
    assert [r["relative_path"] for r in rows] == [".hidden", "logs/deep/a.txt", "notes.txt", "traces/notes.md"]
    assert log.sql("SELECT count(*) AS n FROM imported_files WHERE kind = 'trace'").to_pylist() == [{"n": 3}]


def test_a_trace_names_its_episode_by_image_id_else_by_file_stem_and_each_episode_once(tmp_path):
    root = write_seed_run_dir(tmp_path / "run")
    (root / "traces" / "case-C--r000.json").write_text('{"image_id": "", "state": {}}', encoding="utf-8")
    (root / "traces" / "case-D.v2.json").write_text('{"state": {}}', encoding="utf-8")
    log = EventLog(tmp_path / "log.duckdb")
    import_path(log, root)
    rows = log.sql("SELECT relative_path, path, episode_id, rows FROM imported_files WHERE kind = 'trace' ORDER BY relative_path").to_pylist()
    assert [(r["relative_path"], r["episode_id"], r["rows"]) for r in rows] == [
        ("traces/case-A--r000.json", "case-A--r000", 1), ("traces/case-A--r001.json", "case-A--r001", 1),
        ("traces/case-B--r000.json", "case-B--r000", 1), ("traces/case-C--r000.json", "case-C--r000", 1),
        ("traces/case-D.v2.json", "case-D.v2", 1),
    ]
    assert rows[-1]["path"] == f"{root.resolve()}/traces/case-D.v2.json"
    (root / "traces" / "copy.json").write_text('{"image_id": "case-A--r001", "state": {}}', encoding="utf-8")
    out = CliRunner().invoke(cli, ["--db", str(tmp_path / "other.duckdb"), "import", str(root)])
    assert out.exit_code == 2 and f"duplicate episode case-A--r001 in case-A--r001.json and copy.json ({root.resolve()})" in out.output


def test_an_imported_run_is_listed_by_runs_with_its_status_and_counts(tmp_path):
    log = EventLog(tmp_path / "log.duckdb")
    imported = import_path(log, write_seed_run_dir(tmp_path / "run")).import_id
    out = CliRunner().invoke(cli, ["--db", str(log.path), "runs", "--format", "json"])
    assert out.exit_code == 0, out.output
    [row] = json.loads(out.output)
    assert {k: row[k] for k in ("run_id", "status", "release_id", "provider", "model", "label", "episodes_planned",
                                "episodes_finished", "episodes_errored", "events", "source")} == {
        "run_id": imported, "status": "completed_with_errors", "release_id": "demo-v1", "provider": "offline",
        "model": "offline-react-v1", "label": "rollouts=2 seed=7", "episodes_planned": 3, "episodes_finished": 3,
        "episodes_errored": 1, "events": 11, "source": "imported",  # one source event + one per file
    }
    assert row["started_at"].startswith("2026-11-30")


def test_why_shows_an_imported_episode(tmp_path):
    log = EventLog(tmp_path / "log.duckdb")
    run = tmp_path / "run"
    imported = import_path(log, write_seed_run_dir(run)).import_id
    story = explain_episode(log, "case-A--r001", imported)
    assert story.run_id == imported
    assert story.imported_from == {"path": str(run.resolve()), "source_run_id": "20261130_141502_offline_offline-react-v1"}
    e = story.episode
    assert (e["case_id"], e["rollout_index"], e["verdict"], e["confidence"], e["termination"], e["result_correct"]) == (
        "case-A", 1, "authentic", 0.9, "completed", True)
    assert story.score == {"components": {"result_reward": 0.75}, "total": 0.75}
    out = CliRunner().invoke(cli, ["--db", str(log.path), "why", "case-B--r000", "--run", imported])
    assert out.exit_code == 0, out.output
    assert "outcome: error; verdict error (0.0); correct False; error: provider down" in out.output
    assert "reward 0.000, the weighted sum (`reward_weights`, penalties subtracted) of: result_reward 0.000" in out.output


def test_why_shows_the_audit_and_eligibility_an_imported_directory_recorded(tmp_path):
    """`why` of an imported episode printed no audit and no eligibility (`failures: []` read as
    "no failures") though the directory's process_metrics.jsonl and trajectory_scores.jsonl hold them."""
    log = EventLog(tmp_path / "log.duckdb")
    run = write_seed_run_dir(tmp_path / "run")
    failures = [{"code": "missing_judgment", "detail": "the episode ended without a validated judgment", "severity": "hard"},
                {"code": "empty_reasoning", "detail": "model call 1 acted with no reasoning or text", "severity": "strict"}]
    (run / "process_metrics.jsonl").write_bytes(_jsonl([
        {"episode_id": e, "case_id": e.split("--")[0], "result_correct": c, "hard_trace_audit_pass": e != "case-A--r000",
         "strict_trace_audit_pass": e != "case-A--r000", "strict_trace_audit_failures": failures if e == "case-A--r000" else []}
        for e, c in CORRECT.items()]))
    (run / "trajectory_scores.jsonl").write_bytes(_jsonl([
        {"episode_id": e, "case_id": e.split("--")[0], "components": {"result_reward": t}, "total": t, "training_eligible": False,
         "training_exclusion_reasons": ["incorrect_result", "trace_audit:missing_judgment"]} for e, t in TOTALS.items()]))
    imported = import_path(log, run).import_id
    story = explain_episode(log, "case-A--r000", imported)
    assert story.audit == {"hard_trace_audit_pass": False, "strict_trace_audit_pass": False}
    assert story.metrics is None  # recorded no recall
    assert [f["code"] for f in story.failures] == ["empty_reasoning", "missing_judgment"]
    assert story.eligibility == {"sft_training_eligible": False, "rl_reward_eligible": None,
                                 "exclusion_reasons": ["incorrect_result", "trace_audit:missing_judgment"]}
    out = CliRunner().invoke(cli, ["--db", str(log.path), "why", "case-A--r000", "--run", imported])
    assert out.exit_code == 0, out.output
    assert ("audit: hard FAIL, strict FAIL\n  strict empty_reasoning: model call 1 acted with no reasoning or text\n"
            "  hard   missing_judgment: the episode ended without a validated judgment") in out.output
    assert "SFT eligible: False; RL reward eligible: not recorded\n  - incorrect_result\n  - trace_audit:missing_judgment" in out.output


def test_control_characters_from_an_imported_run_reach_the_terminal_written_out(tmp_path):
    """A run directory from elsewhere whose verdict holds an OSC 52 sequence (set the clipboard)
    and a carriage return: `why` and the table format show them, the terminal never obeys them."""
    log = EventLog(tmp_path / "log.duckdb")
    run = write_seed_run_dir(tmp_path / "run")
    hostile = "\x1b]52;c;ZXZpbA==\x07err\ror\u202e"
    results = [{**row, "verdict": hostile} if row["case_id"] == "case-B" else row for row in RESULTS]
    (run / "run_results.jsonl").write_bytes(_jsonl(results))
    imported = import_path(log, run).import_id
    shown = "\\x1b]52;c;ZXZpbA==\\x07err\\x0dor\\u202e"
    why = CliRunner().invoke(cli, ["--db", str(log.path), "why", "case-B--r000", "--run", imported])
    assert why.exit_code == 0 and f"verdict {shown} (0.0)" in why.output, why.output
    table = CliRunner().invoke(cli, ["--db", str(log.path), "sql", "SELECT verdict FROM imported_episodes WHERE case_id = 'case-B'"])
    assert table.exit_code == 0 and table.output.splitlines()[2] == shown, table.output
    # An error quoting what it was given (here DuckDB naming a table) writes it out too (on one
    # line: the carriage return ends a line there).
    error = CliRunner().invoke(cli, ["--db", str(log.path), "sql", f'SELECT * FROM "{hostile}"'])
    assert error.exit_code == 2, error.output
    assert "Table with name \\x1b]52;c;ZXZpbA==\\x07err or\\u202e does not exist" in error.output, error.output
    # JSON output stays the same JSON (the same values parsed), with those characters escaped.
    as_json = CliRunner().invoke(cli, ["--db", str(log.path), "why", "case-B--r000", "--run", imported, "--json"])
    lines = CliRunner().invoke(cli, ["--db", str(log.path), "sql", "SELECT verdict FROM imported_episodes WHERE case_id = 'case-B'",
                                     "--format", "jsonl"])
    assert json.loads(as_json.output)["episode"]["verdict"] == hostile and json.loads(lines.output) == {"verdict": hostile}
    # `--format json` as `runs`, `views` and `sql` spell it (it was `No such option`)
    assert CliRunner().invoke(cli, ["--db", str(log.path), "why", "case-B--r000", "--run", imported, "--format", "json"]).output == as_json.output
    for output in (why.output, table.output, error.output, as_json.output, lines.output):
        assert not {"\x1b", "\x07", "\r", "\u202e"} & set(output)


def test_why_json_writes_a_number_past_a_double_as_null(tmp_path):
    """A run directory's `"time_taken": 1e999` and `"total": 1e999` (Python's json reads them as
    Infinity; the import took them before it refused them: an older log holds them) reached
    `why --json` as `Infinity`, which no JSON reader takes; null now, as `sql --format json`
    writes them. The text form still says inf."""
    log = EventLog(tmp_path / "log.duckdb")
    run = write_seed_run_dir(tmp_path / "run")
    for name, old in (("run_results.jsonl", '"time_taken": 1.5'), ("trajectory_scores.jsonl", '"total": 0.25')):
        text = (run / name).read_text(encoding="utf-8")
        (run / name).write_text(text.replace(old, old.split(":")[0] + ": 1e999"), encoding="utf-8")
    imported = import_as_older_versions_did(log, run)
    as_json = CliRunner().invoke(cli, ["--db", str(log.path), "why", "case-A--r000", "--run", imported, "--json"])
    assert as_json.exit_code == 0, as_json.output
    story = json.loads(as_json.output, parse_constant=pytest.fail)
    assert (story["episode"]["time_taken"], story["score"]["total"]) == (None, None)
    assert story["score"]["components"] == {"result_reward": 0.25}
    text = CliRunner().invoke(cli, ["--db", str(log.path), "why", "case-A--r000", "--run", imported])
    assert "reward inf, the weighted sum" in text.output, text.output


def test_a_newline_from_an_imported_run_cannot_make_a_line_of_its_own(tmp_path):
    """`why` prints a report line by line: a verdict holding a newline would print a line of
    the run's own making (a fake outcome); `runs compare --cases --format json` writes the
    bidi override escaped, as every other JSON output does."""
    views = _views_fixtures()
    log = views.build_log(tmp_path / "views.duckdb")
    run = write_seed_run_dir(tmp_path / "run")
    forged = "manipulated\u202e\noutcome: completed; verdict authentic (0.99)"
    results = [{**row, "verdict": forged} if row["case_id"] == "case-A" else row for row in RESULTS]
    (run / "run_results.jsonl").write_bytes(_jsonl(results))
    imported = import_path(log, run).import_id
    why = CliRunner().invoke(cli, ["--db", str(log.path), "why", "case-A--r000", "--run", imported])
    assert why.exit_code == 0, why.output
    assert "verdict manipulated\\u202e\\noutcome: completed; verdict authentic (0.99) (" in why.output
    assert not [line for line in why.output.splitlines() if line.startswith("outcome: completed; verdict authentic")]
    compared = CliRunner().invoke(cli, ["--db", str(log.path), "runs", "compare", views.DEV_RUN, imported, "--cases", "--format", "json"])
    assert compared.exit_code == 0 and "\u202e" not in compared.output, compared.output
    assert json.loads(compared.output)["cases"][0]["verdict_b"] == forged


def test_materialize_writes_an_imported_run_back_byte_for_byte(tmp_path):
    log = EventLog(tmp_path / "log.duckdb")
    run = write_seed_run_dir(tmp_path / "run")
    imported = import_path(log, run).import_id
    out = CliRunner().invoke(cli, ["--db", str(log.path), "materialize", imported, "--out", str(tmp_path / "again")])
    assert out.exit_code == 0, out.output
    assert _files(tmp_path / "again") == _files(run)
    # as a native run's: rows per JSONL file, files per folder (it said 1 of every file)
    rows = len([line for line in (run / "run_results.jsonl").read_text().splitlines() if line.strip()])
    traces = len(list((run / "traces").iterdir()))
    assert f"{rows:>8}  {tmp_path / 'again' / 'run_results.jsonl'}\n" in out.output and rows > 1
    assert f"{traces:>8}  {tmp_path / 'again' / 'traces'}\n" in out.output
    parquet = CliRunner().invoke(cli, ["--db", str(log.path), "materialize", imported, "--out", str(tmp_path / "p"), "--format", "parquet"])
    assert parquet.exit_code == 2 and "imported run directory" in parquet.output


def test_compare_a_native_run_with_an_imported_one(tmp_path):
    views = _views_fixtures()
    log = views.build_log(tmp_path / "views.duckdb")
    imported = import_path(log, write_seed_run_dir(tmp_path / "run")).import_id
    # views-dev: case-A answered correctly. The import: case-A's rollout 0 wrong; case-B is
    # not in views-dev, so one shared case.
    result = compare_runs(log, views.DEV_RUN, imported)
    assert (len(result.cases), result.accuracy_a, result.accuracy_b, result.difference) == (1, 1.0, 0.0, -1.0)
    assert (result.only_a_right, result.only_b_right, result.ci_low, result.ci_high) == (1, 0, -1.0, -1.0)
    assert result.cases[0]["label"] == "out_of_context" and result.cases[0]["verdict_b"] == "manipulated"
    out = CliRunner().invoke(cli, ["--db", str(log.path), "runs", "compare", views.DEV_RUN, imported, "--format", "json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.output)[0]["difference"] == -1.0


def test_compare_with_cases_is_one_document_in_every_format(tmp_path):
    """`runs compare --cases` parses as one document: json one object, csv and jsonl the case
    rows alone (one table), table the comparison, a blank line, then the cases."""
    views = _views_fixtures()
    log = views.build_log(tmp_path / "views.duckdb")
    imported = import_path(log, write_seed_run_dir(tmp_path / "run")).import_id

    def compare(fmt: str) -> str:
        out = CliRunner().invoke(cli, ["--db", str(log.path), "runs", "compare", views.DEV_RUN, imported, "--cases", "--format", fmt])
        assert out.exit_code == 0, out.output
        return out.stdout

    document = json.loads(compare("json"))
    assert list(document) == ["comparison", "cases"] and document["comparison"]["difference"] == -1.0
    assert [(c["case_id"], c["correct_a"], c["correct_b"]) for c in document["cases"]] == [("case-A", True, False)]
    rows = list(csv.DictReader(io.StringIO(compare("csv"))))
    assert [(r["case_id"], r["verdict_b"], r["correct_b"]) for r in rows] == [("case-A", "manipulated", "False")]
    assert list(rows[0]) == ["case_id", "label", "verdict_a", "verdict_b", "correct_a", "correct_b"]
    assert [json.loads(line)["case_id"] for line in compare("jsonl").splitlines()] == ["case-A"]
    comparison, cases = compare("table").split("\n\n")
    assert comparison.startswith("run_a") and cases.startswith("case_id") and "case-A" in cases


def test_a_materialized_native_run_imported_into_a_fresh_log_is_the_same_run(tmp_path):
    views = _views_fixtures()
    native = views.build_log(tmp_path / "views.duckdb")
    materialize_run(native, views.MAIN_RUN, tmp_path / "main", unfinished_as_errors=True)  # `unfinished` goes along
    fresh = EventLog(tmp_path / "fresh.duckdb")
    imported = import_path(fresh, tmp_path / "main").import_id
    native_row = native.sql("SELECT * FROM runs WHERE run_id = ?", [views.MAIN_RUN]).to_pylist()[0]
    imported_row = fresh.sql("SELECT * FROM runs").to_pylist()[0]
    # views-main: 15 scheduled episodes, `unfinished` never finished (its run_results.jsonl
    # row has no termination), three finished ones count as errors (test_views_results.py):
    # the imported run reads the same from its run_results.jsonl, but its manifest's
    # num_errors also counts the unfinished one, written as an error row as asked.
    for column in ("status", "release_id", "provider", "model", "label", "episodes_planned", "episodes_finished"):
        assert imported_row[column] == native_row[column], column
    assert (imported_row["status"], imported_row["episodes_planned"], imported_row["episodes_finished"],
            imported_row["episodes_errored"], native_row["episodes_errored"], imported_row["source"]) == (
        "incomplete", 15, 14, 4, 3, "imported")
    materialize_run(fresh, imported, tmp_path / "again")
    assert _files(tmp_path / "again") == _files(tmp_path / "main")
    # The same log holding both: the import answers every shared case as the native run did.
    import_path(native, tmp_path / "main")
    result = compare_runs(native, views.MAIN_RUN, imported)
    assert result.difference == 0.0 and result.only_a_right == result.only_b_right == 0
    assert [c["correct_a"] for c in result.cases] == [c["correct_b"] for c in result.cases]


def test_a_malformed_row_is_refused_by_name(tmp_path):
    log = EventLog(tmp_path / "log.duckdb")
    run = write_seed_run_dir(tmp_path / "run")
    (run / "run_results.jsonl").write_bytes(_jsonl(RESULTS[:1]) + b"{not json\n")
    out = CliRunner().invoke(cli, ["--db", str(log.path), "import", str(run)])
    assert out.exit_code == 2 and f"{run.resolve() / 'run_results.jsonl'}:2: not valid JSON" in out.output
    assert "Traceback" not in out.output and not log.exists()


def test_a_number_past_a_double_is_refused_by_file_and_line_as_nan_is(tmp_path):
    """Python's json reads `1e999` as Infinity, which JSON has no more than NaN (refused): the
    import took it, and the run's report embedded `Infinity`, which JSON.parse refuses."""
    log = EventLog(tmp_path / "log.duckdb")
    run = write_seed_run_dir(tmp_path / "run")
    for name, old, new, where, detail in (
        ("run_results.jsonl", '"time_taken": 1.5', '"time_taken": 1e999', 1, "1e999 is past a double's range: Infinity"),
        ("trajectory_scores.jsonl", '"total": 0.0', '"total": -1e999', 3, "-1e999 is past a double's range: -Infinity"),
    ):
        path = run / name
        clean = path.read_text(encoding="utf-8")
        path.write_text(clean.replace(old, new), encoding="utf-8")
        out = CliRunner().invoke(cli, ["--db", str(log.path), "import", str(run)])
        assert (out.exit_code, out.output) == (2, f"Error: {path.resolve()}:{where}: not valid JSON ({detail} is not valid JSON)\n")
        assert not log.exists()
        path.write_text(clean, encoding="utf-8")


def test_a_trace_nested_too_deeply_is_refused_by_name_without_a_traceback(tmp_path):
    log = EventLog(tmp_path / "log.duckdb")
    run = write_seed_run_dir(tmp_path / "run")
    (run / "traces" / "case-A--r000.json").write_text('{"image_id": "case-A--r000", "x": ' + "[" * 50_000 + "]" * 50_000 + "}")
    out = CliRunner().invoke(cli, ["--db", str(log.path), "import", str(run)])
    assert out.exit_code == 2, out.output
    assert out.output == f"Error: {run.resolve() / 'traces' / 'case-A--r000.json'}: not valid JSON (nested too deeply)\n"
    assert not log.exists()


def test_half_a_character_or_a_byte_order_mark_is_refused_by_file_and_line_before_anything_is_imported(tmp_path):
    """Python's json reads `"\\ud800"` (half a character), which DuckDB's JSON refuses: the import
    took the row, and every later export of the run directory failed on a raw DuckDB error naming
    no file. And seed 002 reads a file as utf-8, whose byte-order mark json.loads refuses: the
    import dropped it and exported what the seed stops at."""
    log = EventLog(tmp_path / "log.duckdb")
    run = write_seed_run_dir(tmp_path / "run")
    results = run / "run_results.jsonl"
    clean = results.read_bytes()
    results.write_bytes(clean + b'{"episode_id": "x", "error": "bad \\ud800 flag", "f": 1e+300}\n')
    out = CliRunner().invoke(cli, ["--db", str(log.path), "import", str(run)])
    line = clean.count(b"\n") + 1
    assert out.exit_code == 2 and out.output.startswith(f"Error: {results.resolve()}:{line}: not valid JSON")
    assert "\\ud800 is half of a character (a lone surrogate)" in out.output and not log.exists()
    trace = next((run / "traces").iterdir())
    results.write_bytes(clean)
    trace.write_bytes(trace.read_bytes()[:-1] + b', "note": "\\udfff", "f": 1e+300}')
    out = CliRunner().invoke(cli, ["--db", str(log.path), "import", str(run)])
    assert out.exit_code == 2 and out.output.startswith(f"Error: {trace.resolve()}: not valid JSON")
    assert "\\udfff is half of a character" in out.output and not log.exists()
    trace.write_bytes(trace.read_bytes().replace(b', "note": "\\udfff", "f": 1e+300}', b"}"))
    results.write_bytes(b"\xef\xbb\xbf" + clean)
    out = CliRunner().invoke(cli, ["--db", str(log.path), "import", str(run)])
    assert out.exit_code == 2 and out.output.startswith(f"Error: {results.resolve()}:1: not valid JSON")
    assert "Unexpected UTF-8 BOM" in out.output and not log.exists()


CREDENTIAL_REFUSED = ("holds what looks like a credential (an API key, a token); an import keeps its files as they are, so it "
                      "would reach the log and every export: remove it from the file (nothing was imported)")


@pytest.mark.parametrize("planted, where", [
    # the manifest, a configuration, through every net `redact` casts
    ({"api_key": "MODELQKEY_11223344"}, "run_manifest.json:1"),
    ({"headers": {"Authorization": "Bearer IMPBEARERTOKEN99887766"}}, "run_manifest.json:1"),
    ({"extra_body": {"metadata": {"clientSecret": "cs-manifest-0042"}}}, "run_manifest.json:1"),
    ({"model": "gpt-x?api_key=MODELQKEY_11223344"}, "run_manifest.json:1"),
    ({"base_url": "https://user:hunter2hunter2@llm.example/v1"}, "run_manifest.json:1"),
])
def test_a_run_manifest_holding_a_credential_is_refused_by_name(tmp_path, planted, where):
    log = EventLog(tmp_path / "log.duckdb")
    run = write_seed_run_dir(tmp_path / "run")
    manifest = json.loads((run / "run_manifest.json").read_text())
    manifest["agent"].update(planted)
    (run / "run_manifest.json").write_text(json.dumps(manifest))
    out = CliRunner().invoke(cli, ["--db", str(log.path), "import", str(run)])
    assert (out.exit_code, out.output) == (2, f"Error: {run.resolve()}/{where}: {CREDENTIAL_REFUSED}\n")
    assert not log.exists()
    # nor does `dataset export --run-dir`, which imports first, write it anywhere
    out = CliRunner().invoke(cli, ["--db", str(log.path), "dataset", "export", "--run-dir", str(run), "--out", str(tmp_path / "ds")])
    assert out.exit_code == 2 and CREDENTIAL_REFUSED in out.output and not (tmp_path / "ds").exists() and not log.exists()


def test_a_run_manifest_s_placeholders_and_prose_are_no_credential(tmp_path):
    run = write_seed_run_dir(tmp_path / "run")
    manifest = json.loads((run / "run_manifest.json").read_text())
    manifest["agent"].update({"api_key": "EMPTY", "api_key_env": "OPENAI_API_KEY", "auth": None,
                              "system_prompt": "Basic principles first; the bearer instrument is no key."})
    (run / "run_manifest.json").write_text(json.dumps(manifest, indent=2))
    assert import_path(EventLog(tmp_path / "log.duckdb"), run).status == "imported"


def test_a_key_in_a_trajectory_file_or_trace_is_refused_by_line_and_its_prose_is_not(tmp_path, monkeypatch):
    log = EventLog(tmp_path / "log.duckdb")
    run = write_seed_run_dir(tmp_path / "run")
    # prose `redact` would take for a credential ("basic principles", an `Authorization:` in a
    # quoted page) is a trajectory's business: only a key's shape or a known key is refused
    scores = run / "trajectory_scores.jsonl"
    scores.write_bytes(scores.read_bytes() + _jsonl([{"note": "basic principles; Authorization: see the page; task-0123456789abcdefghij"}]))
    prose = import_path(log, run)
    assert prose.status == "imported"
    trace = run / "traces" / "case-B--r000.json"
    trace.write_text(json.dumps({"image_id": "case-B--r000", "state": {"note": "sk-proj-SFTSKSHAPE1234567890abcdef"}}, indent=1))
    out = CliRunner().invoke(cli, ["--db", str(log.path), "import", str(run)])
    assert (out.exit_code, out.output) == (2, f"Error: {trace.resolve()}:4: {CREDENTIAL_REFUSED}\n")
    # a key this machine holds (an environment variable's), in any shape
    trace.write_text(json.dumps({"image_id": "case-B--r000", "state": {}}))
    monkeypatch.setenv("EXAMPLE_SERVICE_TOKEN", "plainword7token")
    (run / "run_results.jsonl").write_bytes((run / "run_results.jsonl").read_bytes().replace(b'"provider down"', b'"plainword7token"'))
    out = CliRunner().invoke(cli, ["--db", str(log.path), "import", str(run)])
    assert (out.exit_code, out.output) == (2, f"Error: {run.resolve()}/run_results.jsonl:3: {CREDENTIAL_REFUSED}\n")
    assert [r["run_id"] for r in log.sql("SELECT DISTINCT run_id FROM events").to_pylist()] == [prose.import_id]


def test_a_key_written_with_json_escapes_is_refused_as_its_reader_decodes_it(tmp_path, monkeypatch):
    """`\\u0073k-proj-…` is `sk-proj-…` to every JSON reader: the bytes' search missed it, and the
    key reached the dataset export in plain text. So did a known key with an escaped letter or
    slash (PHP's writer escapes every `/`)."""
    log = EventLog(tmp_path / "log.duckdb")
    run = write_seed_run_dir(tmp_path / "run")
    scores = run / "trajectory_scores.jsonl"
    original = scores.read_bytes()
    scores.write_bytes(original + b'{"note": "\\u0073k-proj-A1b2C3d4A1b2C3d4A1b2C3d4"}\n')
    out = CliRunner().invoke(cli, ["--db", str(log.path), "import", str(run)])
    line = original.count(b"\n") + 1
    assert (out.exit_code, out.output) == (2, f"Error: {scores.resolve()}:{line}: {CREDENTIAL_REFUSED}\n")
    monkeypatch.setenv("EXAMPLE_SERVICE_TOKEN", "plain/word7token")
    trace = run / "traces" / "case-B--r000.json"
    scores.write_bytes(original)
    for escaped in (b"plain\\/word7token", b"pl\\u0061in/word7token"):
        trace.write_bytes(b'{"image_id": "case-B--r000",\n "state": {"note": "' + escaped + b'"}}')
        out = CliRunner().invoke(cli, ["--db", str(log.path), "import", str(run)])
        assert (out.exit_code, out.output) == (2, f"Error: {trace.resolve()}:2: {CREDENTIAL_REFUSED}\n"), escaped
    # escapes of other characters, as JSON writers make them (`ensure_ascii`), are no key
    trace.write_bytes(b'{"image_id": "case-B--r000", "state": {"note": "caf\\u00e9 \\u4e2d sk-\\u00e9 \\u003cb\\u003e"}}')
    assert import_path(log, run).status == "imported"


# Each file (or the traces folder) a run directory's import reads, and a file of none of its kinds.
LINKED_OUT = ["traces/evil.json", "traces/case-A--r000.json", "traces", "run_manifest.json", "trajectory_scores.jsonl",
              "run_results.jsonl", "summary.json", "notes.txt", "logs/secret.txt"]


@pytest.mark.parametrize("relative", LINKED_OUT)
def test_a_link_out_of_the_run_directory_is_refused_by_name_and_nothing_is_kept(tmp_path, relative):
    """A link that leads out is refused before anything is read, whatever the file: its
    target would otherwise sit in the append-only log for good (and `materialize` would
    write it out again)."""
    run = write_seed_run_dir(tmp_path / "run")
    (run / "logs").mkdir()
    link = run / relative
    target = (tmp_path / "outside").resolve() / "target"
    target.parent.mkdir()
    if link.exists():
        link.rename(target)  # the file as it was, valid: only the link can be refused
    else:
        target.write_text('{"private_key": "XYZ"}', encoding="utf-8")
    link.symlink_to(target)
    log = EventLog(tmp_path / "log.duckdb")
    out = CliRunner().invoke(cli, ["--db", str(log.path), "import", str(run)])
    assert out.exit_code == 2 and out.output == (
        f"Error: path {relative!r} resolves to {target}, outside the imported directory {run.resolve()}\n"
    )
    assert not log.exists()


def test_a_link_that_stays_inside_the_run_directory_is_imported_as_the_file_it_names(tmp_path):
    run = write_seed_run_dir(tmp_path / "run")
    (run / "logs").mkdir()
    (run / "logs" / "notes-again.txt").symlink_to(Path("..") / "notes.txt")
    log = EventLog(tmp_path / "log.duckdb")
    imported = import_path(log, run).import_id
    materialize_run(log, imported, tmp_path / "again")
    assert (tmp_path / "again" / "logs" / "notes-again.txt").read_bytes() == (run / "notes.txt").read_bytes()


def test_a_gate_artifact_linking_out_of_its_directory_is_refused(tmp_path):
    secret = (tmp_path / "secret.json").resolve()
    secret.write_text('{"episode_id": "e1", "private_key": "XYZ"}', encoding="utf-8")
    gates = tmp_path / "gates"
    (gates / "deep").mkdir(parents=True)
    (gates / "deep" / "e1.sft_eligibility.json").symlink_to(secret)
    log = EventLog(tmp_path / "log.duckdb")
    out = CliRunner().invoke(cli, ["--db", str(log.path), "import", str(gates)])
    assert out.exit_code == 2 and out.output == (
        f"Error: path 'deep/e1.sft_eligibility.json' resolves to {secret}, outside the imported directory {gates.resolve()}\n"
    )
    assert not log.exists()


def test_a_folder_without_gate_artifacts_is_refused_and_nothing_is_recorded(tmp_path):
    empty = tmp_path / "gates"
    (empty / "deep").mkdir(parents=True)
    (empty / "deep" / "notes.json").write_text("{}", encoding="utf-8")
    log = EventLog(tmp_path / "log.duckdb")
    out = CliRunner().invoke(cli, ["--db", str(log.path), "import", str(empty), "--kind", "gate_artifacts"])
    assert out.exit_code == 2 and out.output == (
        f"Error: {empty.resolve()} holds no gate artifacts (*.sft_eligibility.json, *.semantic_reward.json)\n"
    )
    assert not log.exists()


# Where a named pipe may sit in what is imported: a trace, the manifest, a file of no kind
# (all in a run directory) and a gate artifact. Opening a pipe for reading waits for a writer,
# forever here: each is refused before anything is read, or the deadline fails the test.
PIPES = ["traces/zz.json", "run_manifest.json", "logs/pipe", "gates/e1.sft_eligibility.json"]


@pytest.mark.parametrize("relative", PIPES)
def test_a_named_pipe_is_refused_by_name_before_anything_is_read(tmp_path, deadline, relative):
    if relative.startswith("gates/"):
        root = tmp_path / "gates"
        (root / "deep").mkdir(parents=True)
        (root / "deep" / "e0.sft_eligibility.json").write_text('{"episode_id": "e0"}', encoding="utf-8")
    else:
        root = write_seed_run_dir(tmp_path / "run")
        (root / "logs").mkdir()
    pipe = root / relative.removeprefix("gates/")
    pipe.unlink(missing_ok=True)
    os.mkfifo(pipe)
    log = EventLog(tmp_path / "log.duckdb")
    with deadline(60):
        out = CliRunner().invoke(cli, ["--db", str(log.path), "import", str(root)])
    assert out.exit_code == 2 and out.output == (
        f"Error: path {pipe.relative_to(root).as_posix()!r} in the imported directory {root.resolve()} is a named pipe (FIFO): "
        "only regular files can be imported\n"
    )
    assert not log.exists()


def test_a_socket_or_a_piped_case_split_is_refused_by_name(tmp_path, deadline, monkeypatch):
    run = write_seed_run_dir(tmp_path / "run")
    monkeypatch.chdir(run)  # a socket's path must be short: bind it by a relative one
    with socket.socket(socket.AF_UNIX) as listening:
        listening.bind("notes.sock")
    os.mkfifo(tmp_path / "split.jsonl")
    log = EventLog(tmp_path / "log.duckdb")
    with deadline(60):
        socket_out = CliRunner().invoke(cli, ["--db", str(log.path), "import", str(run)])
        split_out = CliRunner().invoke(cli, ["--db", str(log.path), "import", str(tmp_path / "split.jsonl")])
    assert socket_out.exit_code == 2 and socket_out.output == (
        f"Error: path 'notes.sock' in the imported directory {run.resolve()} is a socket: only regular files can be imported\n"
    )
    assert split_out.exit_code == 2 and split_out.output == (
        f"Error: {(tmp_path / 'split.jsonl').resolve()} is a named pipe (FIFO): only regular files can be imported\n"
    )
    assert not log.exists()


# Files named on a Latin-1 system, as their bytes, and their names as the error shows them:
# a file of no kind, a trace, a file in a folder whose name is the one not UTF-8.
UNDECODABLE = [(b"notes-\xe9.txt", "notes-\\udce9.txt", "0xe9"), (b"traces/\xff.json", "traces/\\udcff.json", "0xff"),
               (b"logs-\xe9/notes.txt", "logs-\\udce9/notes.txt", "0xe9")]


@pytest.mark.parametrize("command", [["import"], ["dataset", "export", "--out", "ds", "--run-dir"]], ids=["import", "export"])
@pytest.mark.parametrize(("relative", "shown", "byte"), UNDECODABLE, ids=["file", "trace", "folder"])
def test_a_file_whose_name_is_not_utf8_is_refused_by_name_and_nothing_is_imported(tmp_path, monkeypatch, command, relative, shown, byte):
    """The log holds every file's path as text, and orjson refuses one that is not UTF-8: a run
    directory holding such a name failed `import` and `dataset export` with a TypeError
    traceback (exit 1) that named no file."""
    run = write_seed_run_dir(tmp_path / "run")
    path = run / os.fsdecode(relative)
    path.parent.mkdir(exist_ok=True)
    path.write_bytes((run / "traces" / "case-A--r000.json").read_bytes() if path.suffix == ".json" else b"notes")
    if path.suffix == ".json":  # the trace moved: one episode under one name
        (run / "traces" / "case-A--r000.json").unlink()
    monkeypatch.chdir(tmp_path)
    log = EventLog(tmp_path / "log.duckdb")
    out = CliRunner().invoke(cli, ["--db", str(log.path), *command, str(run)])
    assert (out.exit_code, out.output) == (2, (
        f"Error: '{run.resolve()}/{shown}' is not UTF-8 text (byte {byte}), which the log and its files hold only; "
        "rename it (nothing was imported)\n"))
    assert not log.exists() and not (tmp_path / "ds").exists()


def test_a_run_directory_reached_through_a_link_is_refused_when_its_own_name_is_not_utf8(tmp_path):
    """A UTF-8 link to a folder whose name is not UTF-8 (what the error for such a path on the
    command line advises) still failed with a traceback: the import records where the link leads."""
    run = write_seed_run_dir(tmp_path / os.fsdecode(b"run-\xff"))
    (tmp_path / "run").symlink_to(run)
    log = EventLog(tmp_path / "log.duckdb")
    out = CliRunner().invoke(cli, ["--db", str(log.path), "import", str(tmp_path / "run")])
    assert (out.exit_code, out.output) == (2, (
        f"Error: '{tmp_path.resolve()}/run-\\udcff' is not UTF-8 text (byte 0xff), which the log and its files hold only; "
        "rename it (nothing was imported)\n"))
    assert not log.exists()


def test_an_import_leaves_the_garbage_collector_as_it_found_it(tmp_path):
    # The write runs with the plan's objects frozen out of collections; they are unfrozen after
    # it, whether it succeeded or failed.
    log = EventLog(tmp_path / "log.duckdb")
    run = write_seed_run_dir(tmp_path / "run")
    import_path(log, run)
    assert gc.get_freeze_count() == 0
    other = write_seed_run_dir(tmp_path / "other")
    (other / "notes.txt").write_text("another run\n")
    plan = plan_import(other)
    blocked = tmp_path / "log.duckdb.live" / plan.import_id
    blocked.parent.mkdir(exist_ok=True)
    blocked.write_text("a file where the run's folder goes")
    with pytest.raises(OSError):
        record_import(log, plan)
    assert gc.get_freeze_count() == 0


def test_an_import_cut_short_is_finished_by_the_next_import(tmp_path):
    """Ctrl-C or a kill between two of an import's batches (a large source) leaves some of its
    events: the next import of the source adds the rest, never answering `already imported`."""
    log = EventLog(tmp_path / "log.duckdb")
    run = write_seed_run_dir(tmp_path / "run")
    plan = plan_import(run)
    log.append(plan.import_id, _drafts(plan)[:3])
    assert import_path(log, run).status == "imported"
    count = "SELECT count(*) AS n FROM events WHERE type = 'artifact.imported'"
    assert log.sql(count).to_pylist() == [{"n": 1 + len(plan.files)}]
    assert import_path(log, run).status == "already imported"
    out = tmp_path / "out"
    materialize_run(log, plan.import_id, out)
    assert sorted(p.relative_to(out) for p in out.rglob("*") if p.is_file()) == sorted(
        p.relative_to(run) for p in run.rglob("*") if p.is_file()
    )


def test_the_report_of_an_imported_run_does_not_say_every_trace_passed(tmp_path):
    """The dashboard's audit and policy plots read the log's events, which an imported run has
    none of: empty, they said "None: every trace passed" of a run whose directory records
    failures. Now they say where its audit is."""
    from eviscene.viewer.report import build_report

    log = EventLog(tmp_path / "log.duckdb")
    imported = import_path(log, write_seed_run_dir(tmp_path / "run")).import_id
    build_report(log, imported, tmp_path / "report.html")
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "every trace passed" not in html and "No result was blocked" not in html
    assert html.count(f"Not in the log: an imported run directory records them in its files (`eviscene why EPISODE --run {imported}`") == 2


def test_values_of_another_type_in_an_imported_directory_read_as_blanks_not_as_errors(tmp_path):
    """A rollout_index "first", a time_taken object, a confidence "high", a num_errors "many":
    the import keeps the files as they are, and every reader of the log's runs still answers
    (one such row made `runs compare`, `why` and the viewer's runs page fail for every run)."""
    from eviscene.viewer.server import Viewer

    log = EventLog(tmp_path / "log.duckdb")
    run = write_seed_run_dir(tmp_path / "run")
    results = [dict(r) for r in RESULTS]
    results[0]["rollout_index"], results[1]["time_taken"], results[2]["confidence"] = "first", {"s": 1}, "high"
    results[1]["verdict_basis"] = ["not an object", 3]
    (run / "run_results.jsonl").write_bytes(_jsonl(results))
    manifest = json.loads((run / "run_manifest.json").read_text(encoding="utf-8"))
    manifest["result"]["num_errors"], manifest["benchmark"]["shard_count"] = "many", "two"
    (run / "run_manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    (run / "process_metrics.jsonl").write_bytes(_jsonl([
        {"episode_id": "case-A--r001", "result_correct": "maybe", "hard_trace_audit_pass": 1, "strict_trace_audit_failures": "none"},
    ]))
    imported = import_path(log, run).import_id

    out = CliRunner().invoke(cli, ["--db", str(log.path), "runs", "--format", "json"])
    assert out.exit_code == 0, out.output
    [row] = json.loads(out.output)
    assert (row["episodes_errored"], row["label"]) == (0, "rollouts=2 seed=7")  # neither number reads
    episodes = log.sql("SELECT episode_id, rollout_index, time_taken, confidence, result_correct FROM imported_episodes "
                       "ORDER BY episode_id").to_pylist()
    assert [(e["rollout_index"], e["time_taken"], e["confidence"], e["result_correct"]) for e in episodes] == [
        (None, 1.5, 0.8, None), (1, None, 0.9, None), (0, 0.1, None, None),
    ]
    out = CliRunner().invoke(cli, ["--db", str(log.path), "why", "case-A--r001", "--run", imported])
    assert out.exit_code == 0 and "correct None" in out.output, out.output
    viewer = Viewer(log)
    for path in ("/", f"/run/{imported}", f"/run/{imported}/episodes", f"/run/{imported}/episode/case-A--r001",
                 f"/run/{imported}/episode/case-A--r000"):
        status, _, body = viewer.route(path, {})
        assert status == 200 and imported.encode() in body, path
    # no rollout 0 left with a correctness that reads: no accuracy
    assert b'data-stat="accuracy">\xe2\x80\x93<' in viewer.route(f"/run/{imported}", {})[2]


def test_an_imported_run_s_pages_after_a_seal_without_recorded_correctness(tmp_path):
    """`log seal` files each run's dashboard beside the log, computed as the page computes it:
    an imported run's was the native computation's (empty, and kept for good under the import's
    head). Without a process_metrics.jsonl the run has no accuracy (not "all wrong"); a basis
    whose evidence_id is a list broke its episode page; a trace that escapes what is not ASCII
    (Python's json.dumps) is found by the text it holds."""
    from eviscene.viewer import data
    from eviscene.viewer.server import Viewer

    log = EventLog(tmp_path / "log.duckdb")
    run = write_seed_run_dir(tmp_path / "run")
    (run / "process_metrics.jsonl").unlink()
    results = [dict(r) for r in RESULTS]
    results[0]["verdict_basis"] = [{"evidence_id": ["ev-1"], "finding": "a list"}]
    (run / "run_results.jsonl").write_bytes(_jsonl(results))
    (run / "traces" / "case-A--r001.json").write_text(json.dumps({"image_id": "case-A--r001", "state": {"note": "café"}}), encoding="utf-8")
    imported = import_path(log, run).import_id
    sealed = CliRunner().invoke(cli, ["--db", str(log.path), "log", "seal", imported])
    assert sealed.exit_code == 0, sealed.output

    viewer = Viewer(log)
    status, _, board = viewer.route(f"/run/{imported}", {})
    assert status == 200 and b"data-imported" in board  # the imported run's dashboard, not an empty native one
    assert b'data-stat="accuracy">\xe2\x80\x93<' in board and b'data-stat="ece">\xe2\x80\x93<' in board  # "–": nothing recorded
    assert b'data-stat="episodes_finished">3 / 3<' in board
    assert viewer.route(f"/run/{imported}/episode/case-A--r000", {})[0] == 200
    assert [r["episode_id"] for r in data.episode_list(log, imported, search="café").rows] == ["case-A--r001"]


def test_a_native_run_and_an_import_never_share_a_run_id(tmp_path):
    """A native run named like an import (`import-` and 32 hex digits) read as one run with the
    import of that id: its events under the import's, the run gone from `runs`, `log verify`
    failing. `eval run` refuses such a name; an import meeting a run of its id (a log from
    before) is refused, naming it."""
    from eviscene.events import RunStarted
    from eviscene.imports import plan_import

    log = EventLog(tmp_path / "log.duckdb")
    run = write_seed_run_dir(tmp_path / "run")
    import_id = plan_import(run).import_id
    out = CliRunner().invoke(cli, ["--db", str(log.path), "eval", "run", "--benchmark", str(RELEASE_CASES), "--limit", "1",
                                   "--run-id", import_id])
    assert out.exit_code == 2 and f"run id {import_id!r} has the form of an import's id" in out.output, out.output

    async def native_run_of_that_id():
        async with log.writer(import_id) as writer:
            await writer.emit(EventDraft(RunStarted(started_at="2026-11-30T00:00:00+00:00", git_commit="x", benchmark={},
                                                    agent={}, source_access_policy={}, config={})))

    anyio.run(native_run_of_that_id)
    out = CliRunner().invoke(cli, ["--db", str(log.path), "import", str(run)])
    assert out.exit_code == 2 and f"its import id {import_id} names a run of this log that is no import; not imported" in out.output
    assert log.sql("SELECT count(*) AS n FROM events WHERE type = 'artifact.imported'")["n"][0].as_py() == 0


def test_an_episode_s_rows_read_once_the_last_counting_and_a_row_naming_none_is_no_episode(tmp_path):
    """Two run_results rows of one episode made `runs`, `runs compare` and the viewer count it
    twice (a second process_metrics row doubled it again); a row with a null episode_id broke
    the episode list and the report. An episode's last row counts, as seed 002 reads
    trajectory_scores.jsonl: keyed by episode_id, else case_id (seed 000's row for a missing
    trace names only its case, whose single rollout's episode id it is), an id as Python strips it."""
    log = EventLog(tmp_path / "log.duckdb")
    run = write_seed_run_dir(tmp_path / "run")
    case_b = {**RESULTS[2], "episode_id": "case-B"}  # a single-rollout run names an episode by its case
    (run / "run_results.jsonl").write_bytes(_jsonl([
        *RESULTS[:2], case_b, {**RESULTS[1], "verdict": "out_of_context"}, {**RESULTS[2], "episode_id": None},
        {**RESULTS[2], "episode_id": "\t"}]))
    (run / "process_metrics.jsonl").write_bytes(_jsonl([
        {"episode_id": "case-A--r000", "result_correct": False}, {"case_id": "case-B", "engineering_error": True},
        {"episode_id": " case-A--r000 ", "result_correct": True}]))
    (run / "trajectory_scores.jsonl").write_bytes(_jsonl([
        {"episode_id": "case-B", "case_id": "case-B", "components": {}, "total": 0.5},
        {"case_id": "case-B", "components": {}, "total": 0.0}]))  # the last, by its case
    imported = import_path(log, run).import_id
    found = log.sql("SELECT episode_id, verdict, result_correct, (trajectory_score->>'total')::DOUBLE AS total "
                    "FROM imported_episodes ORDER BY episode_id").to_pylist()
    assert found == [
        {"episode_id": "case-A--r000", "verdict": "manipulated", "result_correct": True, "total": None},
        {"episode_id": "case-A--r001", "verdict": "out_of_context", "result_correct": None, "total": None},
        {"episode_id": "case-B", "verdict": "error", "result_correct": None, "total": 0.0},
    ]
    from eviscene.viewer.server import Viewer

    for path in (f"/run/{imported}/episodes", f"/run/{imported}"):
        assert Viewer(log).route(path, {})[0] == 200


def test_an_imported_episode_s_story_is_its_last_process_metrics_row_with_its_recalls(tmp_path):
    """`why` and the episode pages joined every process_metrics row of an episode: two rows, two
    stories of it, the first's audit; and they showed none of the recalls the row records."""
    log = EventLog(tmp_path / "log.duckdb")
    run = write_seed_run_dir(tmp_path / "run")
    recalls = {"fact_recovery_recall": 0.5, "chain_recovery_recall": 0.0, "basis_reference_precision": 1.0}
    (run / "process_metrics.jsonl").write_bytes(_jsonl([
        {"episode_id": "case-A--r000", "result_correct": False, "strict_trace_audit_pass": False, "evidence_recovery_recall": 0.25, **recalls},
        {"episode_id": "case-A--r000", "result_correct": True, "strict_trace_audit_pass": True, "evidence_recovery_recall": 0.75, **recalls}]))
    imported = import_path(log, run).import_id
    stories = log.read(lambda con: imported_stories(con, imported, {"path": str(run), "source_run_id": None}), for_query=IMPORTED_STORIES_READ)
    assert [story.episode["episode_id"] for story in stories] == [row["episode_id"] for row in sorted(RESULTS, key=lambda r: r["episode_id"])]
    [story] = [story for story in stories if story.episode["episode_id"] == "case-A--r000"]
    assert story.audit == {"hard_trace_audit_pass": None, "strict_trace_audit_pass": True}
    assert story.metrics == {"result_correct": True, "gold_label": None, "evidence_recovery_recall": 0.75, **recalls}
    out = CliRunner().invoke(cli, ["--db", str(log.path), "why", "case-A--r000", "--run", imported])
    assert "score: correct=True; recall of evidence 0.75, facts 0.50, bridges 0.00; basis precision 1.00\n" in out.output, out.output


def test_runs_compare_scores_no_imported_run_that_recorded_no_correctness(tmp_path):
    """A run directory without process_metrics.jsonl compared as all wrong; it has no score to compare."""
    log = EventLog(tmp_path / "log.duckdb")
    scored = import_path(log, write_seed_run_dir(tmp_path / "one")).import_id
    bare = write_seed_run_dir(tmp_path / "two", run_id="bare")
    (bare / "process_metrics.jsonl").unlink()
    unscored = import_path(log, bare).import_id
    with pytest.raises(EvisceneError, match="share no scored case"):
        compare_runs(log, scored, unscored)


def test_an_imported_episode_s_odd_values_read_as_not_recorded(tmp_path):
    """A score's components as a string, its exclusion reasons as a number, its eligibility as
    the string "false" and a verdict_basis of 5 broke the episode page and `why` (or read "false"
    as eligible); an audit the directory did not record read as a failure."""
    from eviscene.viewer.server import Viewer

    log = EventLog(tmp_path / "log.duckdb")
    run = write_seed_run_dir(tmp_path / "run")
    results = [dict(r) for r in RESULTS]
    results[0]["verdict_basis"] = 5
    (run / "run_results.jsonl").write_bytes(_jsonl(results))
    (run / "trajectory_scores.jsonl").write_bytes(_jsonl([
        {"episode_id": "case-A--r000", "components": "high", "total": 0.5, "training_eligible": "false", "training_exclusion_reasons": 7},
    ]))
    (run / "process_metrics.jsonl").write_bytes(_jsonl([{"episode_id": "case-A--r000", "result_correct": True, "strict_trace_audit_pass": True}]))
    imported = import_path(log, run).import_id
    story = explain_episode(log, "case-A--r000", imported)
    assert (story.score, story.eligibility) == ({"components": {}, "total": 0.5}, None)
    assert story.audit == {"hard_trace_audit_pass": None, "strict_trace_audit_pass": True}
    out = CliRunner().invoke(cli, ["--db", str(log.path), "why", "case-A--r000", "--run", imported])
    assert out.exit_code == 0, out.output
    status, _, page = Viewer(log).route(f"/run/{imported}/episode/case-A--r000", {})
    assert status == 200
    assert b'hard <span class="badge ">not recorded</span> strict <span class="badge ok">pass</span>' in page


def test_dataset_export_refuses_a_run_id_two_imported_directories_share(tmp_path):
    """Two directories of run `r` (a run and an edited copy): `dataset export --run r` took the
    newest import silently; it names both, and each is exported by its import id."""
    log = EventLog(tmp_path / "log.duckdb")
    first = import_path(log, write_seed_run_dir(tmp_path / "one", run_id="r")).import_id
    copy = write_seed_run_dir(tmp_path / "two", run_id="r")
    (copy / "notes.txt").write_text("edited", encoding="utf-8")
    second = import_path(log, copy).import_id
    out = CliRunner().invoke(cli, ["--db", str(log.path), "dataset", "export", "--run", "r", "--out", str(tmp_path / "ds")])
    assert out.exit_code != 0
    assert f"run 'r' names 2 imported run directories: {min(first, second)}" in out.output
    assert "name one by its import id" in out.output and not (tmp_path / "ds").exists()


@pytest.mark.parametrize(("name", "key"), [("run_manifest.json", "benchmark"), ("traces/case-A--r000.json", "image_id"),
                                           ("summary.json", "num_samples")])
def test_a_json_file_repeating_a_key_is_refused_by_name(tmp_path, name, key):
    """Python's json (the seed's reader) keeps a repeated key's last value, DuckDB's JSON (the
    views) its first: a manifest's second `benchmark` saying `teacher_release` was the views'
    release stage, and a prohibited run's episodes became training data."""
    log = EventLog(tmp_path / "log.duckdb")
    run = write_seed_run_dir(tmp_path / "run")
    path = run / name
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("{", '{"' + key + '": "teacher_release", ', 1), encoding="utf-8")
    out = CliRunner().invoke(cli, ["--db", str(log.path), "import", str(run)])
    assert (out.exit_code, out.output) == (2, (
        f"Error: {path.resolve()}: the key '{key}' appears twice in one object (Python's json reads the last, the SQL views "
        "the first): keep one\n"))
    assert not log.exists()


def test_a_resume_of_an_imported_run_says_it_is_imported(tmp_path):
    """`eval resume IMPORT` said there was no such run, which `eviscene runs` lists."""
    log = EventLog(tmp_path / "log.duckdb")
    run = write_seed_run_dir(tmp_path / "run")
    assert CliRunner().invoke(cli, ["--db", str(log.path), "import", str(run)]).exit_code == 0
    [imported] = log.sql("SELECT run_id FROM runs WHERE source = 'imported'")["run_id"].to_pylist()
    out = CliRunner().invoke(cli, ["--db", str(log.path), "eval", "resume", imported])
    assert (out.exit_code, out.stderr) == (2, (
        f"Error: run {imported} is the imported run directory {run.resolve()}: an imported run holds its files, not an agent's "
        "state to go on from; only a run EviScene ran resumes\n"))
