"""A run's viewer numbers filed beside the log when it is sealed (`eval run` and `log seal`
-> `eviscene.viewer.data.precompute`, results_cache.py): the viewer's first look reads them
instead of computing the views, and they are exactly the views' numbers; a run still writing
has none filed and is computed live, also exactly the views' numbers. Expectations are the
views queried directly and, for the hand-written run, hand-computed from its events."""

from __future__ import annotations

import shutil
from pathlib import Path

import anyio
import pytest
from click.testing import CliRunner

from eviscene.cli.main import cli
from eviscene.events import RunFinished
from eviscene.log import EventLog
from eviscene.store import EventDraft
from eviscene.viewer import data
from eviscene.store.layout import results_root
from eviscene.viewer.results_cache import CACHE_FOLDER, ResultCache, run_head
from test_results_cache import RUN, _finished, _write_first, _write_late


def seal(log: EventLog, *run_ids: str) -> str:
    """`eviscene log seal`, which files the sealed runs' numbers."""
    result = CliRunner().invoke(cli, ["--db", str(log.path), "log", "seal", *run_ids])
    assert result.exit_code == 0, result.output
    return result.output


def _head(log: EventLog, run_id: str):
    con = log.connect(views=False)
    try:
        return run_head(con, run_id)
    finally:
        con.close()


def _views_numbers(log: EventLog, run_id: str) -> dict:
    """What the runs page and the dashboard show, asked of the views directly."""
    con = log.connect()
    try:
        ask = lambda sql: con.execute(sql, [run_id]).fetchall()
        return {
            "row": ask("SELECT episodes_planned, episodes_finished, status FROM runs WHERE run_id = ?"),
            "scores": ask("SELECT DISTINCT accuracy, macro_f1 FROM classification_metrics WHERE run_id = ?"),
            "labels": ask("SELECT label, support, predicted, true_positives, precision, recall, f1 FROM classification_metrics "
                          "WHERE run_id = ? ORDER BY label"),
            "terminations": ask("SELECT coalesce(termination, '(not finished)'), count(*) FROM episodes WHERE run_id = ? "
                                "GROUP BY ALL ORDER BY 2 DESC, 1"),
            "tool_calls": ask("SELECT count(*) FROM tool_calls WHERE run_id = ? AND latency_ms IS NOT NULL"),
            "model_calls": ask("SELECT count(*), sum(prompt_tokens) FROM model_calls WHERE run_id = ?"),
        }
    finally:
        con.close()


def _page_numbers(run: dict, dashboard: dict) -> dict:
    """The same numbers as the runs page and the dashboard hold them."""
    return {
        "row": [(run["episodes_planned"], run["episodes_finished"], run["status"])],
        "scores": [(run["accuracy"], run["macro_f1"])],
        "labels": [(r["label"], r["support"], r["predicted"], r["true_positives"], r["precision"], r["recall"], r["f1"])
                   for r in dashboard["labels"]],
        "terminations": [(r["termination"], r["episodes"]) for r in dashboard["terminations"]],
        "tool_calls": [(sum(r["calls"] for r in dashboard["tool_latency"]),)],
        "model_calls": [(sum(r["calls"] for r in dashboard["model_latency"]),
                         sum(r["prompt_tokens"] for r in dashboard["model_latency"]) if dashboard["model_latency"] else None)],
    }


def _filed(log_path: Path) -> list[str]:
    folder = results_root(log_path)
    return sorted(p.name.split("-")[0] for p in folder.glob("*.json")) if folder.exists() else []


def _runtime_files(runtime: Path) -> list[Path]:
    return sorted((runtime / CACHE_FOLDER).glob("*.json")) if (runtime / CACHE_FOLDER).exists() else []


def test_the_demo_runs_numbers_are_filed_at_seal_and_equal_the_views_and_a_live_computation(logs, tmp_path):
    # `eval run` sealed both runs, and filed each one's row and dashboard.
    assert _filed(logs.demo) == ["dashboard", "dashboard", "run", "run"]
    # A copy of the log without what was filed: the viewer computes everything there itself.
    unfiled = EventLog(tmp_path / "unfiled.duckdb")
    shutil.copyfile(logs.demo, unfiled.path)
    demo = EventLog(logs.demo)
    for run_id in (logs.run_a, logs.run_b):
        runtime = tmp_path / f"runtime-{run_id}"
        cache = ResultCache(demo.path, runtime)
        head = _head(demo, run_id)
        assert cache.get("run", head) is not None and cache.get("dashboard", head) is not None  # before anything is computed
        run, dashboard = data.known_run(demo, run_id, cache), data.dashboard(demo, run_id, cache)
        assert _runtime_files(runtime) == []  # nothing was computed: the filed results served
        assert _page_numbers(run, dashboard) == _views_numbers(demo, run_id)
        live_cache = ResultCache(unfiled.path, tmp_path / f"live-{run_id}")
        assert data.known_run(unfiled, run_id, live_cache) == run
        assert data.dashboard(unfiled, run_id, live_cache) == dashboard  # bootstrap, histograms, ECE: every number
        assert len(_runtime_files(tmp_path / f"live-{run_id}")) == 2  # computed there
    assert data.list_runs(demo, ResultCache(demo.path, tmp_path / "runs")) == data.list_runs(
        unfiled, ResultCache(unfiled.path, tmp_path / "runs-live"))


async def _numbers_while_writing(log: EventLog, tmp_path: Path) -> tuple[dict, dict, list[str]]:
    """Case 3's episode is written by a writer that holds the run while the viewer reads it."""
    async with log.writer(RUN) as writer:
        for draft in _finished(3, "authentic"):
            await writer.emit(draft)
        await writer.sync()

        def look() -> tuple[dict, dict, list[str]]:
            cache = ResultCache(log.path, tmp_path / "runtime")
            run, dashboard = data.known_run(log, RUN, cache), data.dashboard(log, RUN, cache)
            return _page_numbers(run, dashboard), _views_numbers(log, RUN), _filed(log.path)

        return await anyio.to_thread.run_sync(look)


async def _finish(log: EventLog) -> None:
    async with log.writer(RUN) as writer:
        await writer.emit(EventDraft(RunFinished(status="completed", completed_at="2026-11-30T01:00:00+00:00", num_episodes=4, num_errors=0)))


def test_a_run_still_writing_has_nothing_filed_and_is_computed_live_as_the_views_count(tmp_path):
    log = EventLog(tmp_path / "log.duckdb")
    anyio.run(_write_first, log)
    assert _filed(log.path) == []  # live, not sealed: nothing filed
    shown, views, filed = anyio.run(_numbers_while_writing, log, tmp_path)
    assert filed == [] and shown == views
    # By hand: 4 planned, 4 finished (case 3 wrongly "authentic"), no run.finished yet; accuracy 3/4;
    # F1 authentic 2/3 (P 1/2, R 1), out_of_context 1, manipulated 1, unverifiable 0.
    assert shown["row"] == [(4, 4, "running_or_interrupted")]
    assert shown["scores"] == [(0.75, pytest.approx((2 / 3 + 1 + 1 + 0) / 4))]
    assert shown["terminations"] == [("completed", 4)]

    anyio.run(_finish, log)
    assert seal(log) == f"sealed 1 run(s): {RUN}\n"
    assert _filed(log.path) == ["dashboard", "run"]
    runtime = tmp_path / "after-seal"
    cache = ResultCache(log.path, runtime)
    sealed_numbers = _page_numbers(data.known_run(log, RUN, cache), data.dashboard(log, RUN, cache))
    assert _runtime_files(runtime) == [] and sealed_numbers == _views_numbers(log, RUN)
    assert sealed_numbers["row"] == [(4, 4, "completed")]


def test_filed_results_follow_a_moved_log_are_refiled_by_a_named_seal_and_are_not_read_when_others_may_write_them(tmp_path):
    log = EventLog(tmp_path / "log.duckdb")
    anyio.run(_write_first, log)
    anyio.run(_write_late, log)
    seal(log)
    head = _head(log, RUN)
    # Moved with its results folder: still read (the log's path is not in their key).
    moved = EventLog(tmp_path / "moved" / "log.duckdb")
    moved.path.parent.mkdir()
    shutil.copyfile(log.path, moved.path)
    shutil.copytree(results_root(log.path), results_root(moved.path))
    assert ResultCache(moved.path, tmp_path / "rt-moved").get("dashboard", head)["labels"][0]["accuracy"] == 0.75
    # Sealed before results were filed (an older log): naming the run to `seal` files them.
    shutil.rmtree(results_root(moved.path))
    assert seal(moved, RUN) == f"sealed 0 run(s); sealed already: {RUN}\n" and _filed(moved.path) == ["dashboard", "run"]
    # A results folder others may write is not read: the numbers are computed again.
    results_root(log.path).chmod(0o777)
    try:
        assert ResultCache(log.path, tmp_path / "rt-open").get("run", head) is None
        assert data.known_run(log, RUN, ResultCache(log.path, tmp_path / "rt-open"))["accuracy"] == 0.75
    finally:
        results_root(log.path).chmod(0o755)
    assert ResultCache(log.path, tmp_path / "rt-closed").get("run", head)["row"]["accuracy"] == 0.75


def test_a_filed_result_edited_moved_or_signed_by_another_key_is_not_read_but_computed_from_the_log(tmp_path, monkeypatch):
    """`log verify` proves the log, not the files beside it: a forged number there must never
    reach a page or a report."""
    log = EventLog(tmp_path / "log.duckdb")
    anyio.run(_write_first, log)
    anyio.run(_write_late, log)
    seal(log)
    head = _head(log, RUN)
    [filed] = results_root(log.path).glob("run-*.json")
    signature, text = filed.read_text(encoding="utf-8").split("\n", 1)
    assert '"accuracy": 0.75' in text and ResultCache(log.path, tmp_path / "rt-0").get("run", head) is not None

    filed.write_text(signature + "\n" + text.replace('"accuracy": 0.75', '"accuracy": 0.123'), encoding="utf-8")
    assert ResultCache(log.path, tmp_path / "rt-1").get("run", head) is None
    assert data.known_run(log, RUN, ResultCache(log.path, tmp_path / "rt-1"))["accuracy"] == 0.75
    result = CliRunner().invoke(cli, ["--db", str(log.path), "report", RUN, "--out", str(tmp_path / "r.html")])
    assert result.exit_code == 0, result.output
    assert "0.123" not in (tmp_path / "r.html").read_text(encoding="utf-8")

    # Signed by another user's key (a log copied with its folder from a colleague).
    from eviscene.viewer import results_cache

    other = tmp_path / "other-user"
    monkeypatch.setenv("XDG_DATA_HOME", str(other))
    results_cache.signing_key.cache_clear()
    try:
        forged_text = text.replace('"accuracy": 0.75', '"accuracy": 0.123')
        filed.write_text(results_cache._signature(results_cache.signing_key(), filed.name, forged_text) + "\n" + forged_text, encoding="utf-8")
    finally:
        monkeypatch.delenv("XDG_DATA_HOME")
        results_cache.signing_key.cache_clear()
    assert ResultCache(log.path, tmp_path / "rt-2").get("run", head) is None

    # Our own signature on the run's dashboard, filed under the run row's name.
    seal(log, RUN)  # files them again, correctly
    [dashboard] = results_root(log.path).glob("dashboard-*.json")
    [filed] = results_root(log.path).glob("run-*.json")
    filed.write_bytes(dashboard.read_bytes())
    assert ResultCache(log.path, tmp_path / "rt-3").get("run", head) is None


def test_a_ctrl_c_while_the_numbers_are_filed_ends_the_seal_as_interrupted_not_as_a_note(tmp_path, monkeypatch):
    """Filing them may fail and leave the seal standing (a note); a Ctrl-C stopping its query
    is no such failure: it was swallowed, and `log seal` went on and exited 0."""
    import duckdb

    log = EventLog(tmp_path / "log.duckdb")
    anyio.run(_write_first, log)
    anyio.run(_finish, log)

    def stopped(*args, **kwargs):
        raise duckdb.InterruptException("INTERRUPT Error: Interrupted!")

    monkeypatch.setattr(data, "precompute", stopped)
    result = CliRunner().invoke(cli, ["--db", str(log.path), "log", "seal"])
    assert (result.exit_code, result.output) == (130, f"sealed 1 run(s): {RUN}\ninterrupted\n")
