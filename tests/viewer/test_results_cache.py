"""The viewer's results cache (eviscene/viewer/results_cache.py): a run's numbers are filed
under its chain head, so new events give new numbers, a sealed run's numbers survive a
restart on disk, a live run's never reach the disk, a page renders the same bytes from
the cache as computed, and results unused for weeks are removed. Expectations are hand-computed from the events written here."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import anyio
import pytest

from eviscene.events import ArtifactImported, EpisodeFinished, EpisodeScheduled, EpisodeStarted, JudgmentMade, RunFinished, RunStarted
from eviscene.log import EventLog
from eviscene.store import EventDraft
from eviscene.viewer import data, pages
from eviscene.store.layout import results_root
from eviscene.viewer.results_cache import CACHE_FOLDER, ResultCache, RunHead, run_head

LABELS = ["authentic", "out_of_context", "manipulated", "unverifiable"]
RUN = "cache-run"
# Four cases, gold LABELS[c]; cases 0-2 are answered right first, case 3 later answers
# "authentic" (wrong).
FIRST_VERDICTS = {0: "authentic", 1: "out_of_context", 2: "manipulated"}
LATE_VERDICT = {3: "authentic"}


def _episode_id(case: int) -> str:
    return f"case-{case}--r000"


def _finished(case: int, verdict: str) -> list[EventDraft]:
    payloads = [EpisodeStarted(attempt=1, started_at="2026-11-30T00:00:00+00:00"),
                JudgmentMade(verdict=verdict, confidence=0.8, verdict_basis=[]),
                EpisodeFinished(termination="completed", time_taken=2.0, total_tool_calls=0, llm_api_calls=1)]
    return [EventDraft(p, episode_id=_episode_id(case), attempt=1, step=i) for i, p in enumerate(payloads)]


async def _write_first(log: EventLog, run: str = RUN) -> None:
    gold = "".join(json.dumps({"case_id": f"case-{c}", "label": LABELS[c], "reference_chain": {}}) + "\n" for c in range(4))
    async with log.writer(run) as writer:
        await writer.emit(EventDraft(RunStarted(
            started_at="2026-11-30T00:00:00+00:00", git_commit="test",
            benchmark={"release_id": "r", "release_stage": "frozen_eval", "path": "/r/cases.jsonl",
                       "training_prohibited": False, "runtime_contract_version": "v"},
            agent={"max_tool_actions": 4, "provider": "offline", "model": "m"},
            source_access_policy={"active": False}, config={"label_set": LABELS})))
        sha = await writer.put_blob(gold.encode(), "application/jsonl")
        await writer.emit(EventDraft(ArtifactImported(kind="evaluation_gold", path="/r/gold.jsonl", sha256=sha, blob_sha256=sha, rows=4)))
        for case in range(4):
            await writer.emit(EventDraft(EpisodeScheduled(
                case_id=f"case-{case}", prompt_group_id=f"pg-{case}", rollout_index=0, group_size=1, sampling_seed=case,
                image_sha256="0" * 64, image_path="runtime_input/images/x.jpg"), episode_id=_episode_id(case)))
        for case, verdict in FIRST_VERDICTS.items():
            for draft in _finished(case, verdict):
                await writer.emit(draft)


async def _write_late(log: EventLog, run: str = RUN) -> None:
    async with log.writer(run) as writer:
        for case, verdict in LATE_VERDICT.items():
            for draft in _finished(case, verdict):
                await writer.emit(draft)
        await writer.emit(EventDraft(RunFinished(status="completed", completed_at="2026-11-30T01:00:00+00:00", num_episodes=4, num_errors=0)))


@pytest.fixture
def log(tmp_path: Path) -> EventLog:
    log = EventLog(tmp_path / "log.duckdb")
    anyio.run(_write_first, log)
    return log


def _seal_unfiled(log: EventLog) -> None:
    """Seal from Python (nothing filed beside the log: `eval run` and `log seal` file, see
    test_precomputed.py): the viewer computes the numbers and caches them itself."""
    log.seal()
    assert not results_root(log.path).exists()


def _head(log: EventLog):
    con = log.connect(views=False)
    try:
        return run_head(con, RUN)
    finally:
        con.close()


def _cached_files(folder: Path) -> list[str]:
    return sorted(p.name.split("-")[0] for p in (folder / CACHE_FOLDER).glob("*.json")) if (folder / CACHE_FOLDER).exists() else []


def test_a_run_with_new_events_gets_new_numbers_and_a_live_run_stays_off_the_disk(log, tmp_path):
    cache = ResultCache(log.path, tmp_path / "runtime")
    first = data.list_runs(log, cache)
    assert [(r["run_id"], r["episodes_planned"], r["episodes_finished"], r["status"]) for r in first] == [(RUN, 4, 3, "running_or_interrupted")]
    # Rollout 0 of 4 cases, case 3 unanswered (wrong): accuracy 3/4; F1 1, 1, 1 and 0 (unverifiable never predicted).
    assert first[0]["accuracy"] == 0.75 and first[0]["macro_f1"] == pytest.approx(0.75)
    assert _cached_files(tmp_path / "runtime") == []  # the run is live: memory only

    anyio.run(_write_late, log)
    again = data.list_runs(log, cache)  # the same cache: the new head is not in it
    # Case 3 answers "authentic": authentic P 1/2 R 1 F1 2/3, out_of_context 1, manipulated 1, unverifiable 0.
    assert (again[0]["episodes_finished"], again[0]["status"]) == (4, "completed")
    assert again[0]["accuracy"] == 0.75 and again[0]["macro_f1"] == pytest.approx((2 / 3 + 1 + 1 + 0) / 4)
    dashboard = data.dashboard(log, RUN, cache)
    assert [(r["label"], r["support"], r["predicted"], r["true_positives"]) for r in dashboard["labels"]] == [
        ("authentic", 1, 2, 1), ("manipulated", 1, 1, 1), ("out_of_context", 1, 1, 1), ("unverifiable", 1, 0, 0)]
    assert dashboard["terminations"] == [{"termination": "completed", "episodes": 4}]
    assert (dashboard["majority_label"], dashboard["majority_accuracy"]) == ("authentic", 0.25)  # every label once: the first by name


def test_a_sealed_runs_numbers_survive_a_restart_and_render_the_same_page(log, tmp_path):
    anyio.run(_write_late, log)
    _seal_unfiled(log)
    runtime = tmp_path / "runtime"
    computed_runs = data.list_runs(log, ResultCache(log.path, runtime))
    computed = data.dashboard(log, RUN, ResultCache(log.path, runtime))
    assert _cached_files(runtime) == ["dashboard", "run"]  # sealed: on disk, one file per kind

    restarted = ResultCache(log.path, runtime)  # a new server: nothing in memory
    head = _head(log)
    assert restarted.get("run", head)["row"]["macro_f1"] == pytest.approx((2 / 3 + 1 + 1 + 0) / 4)
    assert restarted.get("dashboard", head)["labels"][0]["accuracy"] == 0.75
    assert data.list_runs(log, restarted) == computed_runs
    cached = data.dashboard(log, RUN, restarted)
    assert cached == computed
    links = pages.Links()
    assert pages.dashboard_page(cached, links) == pages.dashboard_page(computed, links)
    # Without any cache at all (a fresh folder) the numbers are the same.
    assert data.dashboard(log, RUN, ResultCache(log.path, tmp_path / "elsewhere")) == computed


def test_results_unused_for_weeks_are_removed_when_a_result_is_filed_and_those_read_are_kept(log, tmp_path):
    anyio.run(_write_late, log)
    _seal_unfiled(log)
    runtime = tmp_path / "runtime"
    (runtime / CACHE_FOLDER).mkdir(parents=True)
    weeks_ago = time.time() - 15 * 86_400
    stale = runtime / CACHE_FOLDER / "run-of-a-deleted-log.json"
    stale.write_text("{}")
    os.utime(stale, (weeks_ago, weeks_ago))

    data.list_runs(log, ResultCache(log.path, runtime))  # computed and filed: the folder is pruned
    assert not stale.exists() and _cached_files(runtime) == ["run"]

    filed = next((runtime / CACHE_FOLDER).glob("run-*.json"))
    os.utime(filed, (weeks_ago, weeks_ago))
    data.list_runs(log, ResultCache(log.path, runtime))  # read from disk: marked used
    assert filed.stat().st_mtime > weeks_ago


def test_a_result_filed_under_another_head_or_log_is_not_read(log, tmp_path):
    anyio.run(_write_late, log)
    _seal_unfiled(log)
    runtime = tmp_path / "runtime"
    data.list_runs(log, ResultCache(log.path, runtime))
    head = _head(log)
    cache = ResultCache(log.path, runtime)
    assert cache.get("run", head) is not None
    older = type(head)(head.run_id, head.last_seq - 1, head.head)
    assert cache.get("run", older) is None
    assert ResultCache(tmp_path / "other.duckdb", runtime).get("run", head) is None


def test_a_cache_folder_others_may_write_is_neither_read_nor_written(log, tmp_path):
    anyio.run(_write_late, log)
    _seal_unfiled(log)
    runtime = tmp_path / "runtime"
    (runtime / CACHE_FOLDER).mkdir(parents=True)
    (runtime / CACHE_FOLDER).chmod(0o777)
    runs = data.list_runs(log, ResultCache(log.path, runtime))
    assert runs[0]["accuracy"] == 0.75  # computed, served from memory
    assert _cached_files(runtime) == []
    data.list_runs(log, ResultCache(log.path, tmp_path / "private"))
    planted = next((tmp_path / "private" / CACHE_FOLDER).glob("run-*.json"))
    (runtime / CACHE_FOLDER / planted.name).write_text(planted.read_text().replace("0.75", "0.99"))
    assert ResultCache(log.path, runtime).get("run", _head(log)) is None


def test_a_runs_numbers_computed_alone_equal_those_computed_with_every_run(log, tmp_path):
    other = "other-run"
    anyio.run(_write_first, log, other)
    anyio.run(_write_late, log, other)
    alone = data.known_run(log, RUN, ResultCache(log.path, tmp_path / "a"))  # run_id = $run: this run's events only
    other_alone = data.known_run(log, other, ResultCache(log.path, tmp_path / "b"))
    every = {r["run_id"]: r for r in data.list_runs(log, ResultCache(log.path, tmp_path / "c"))}  # one pass over the log
    assert alone == every[RUN] and other_alone == every[other]
    assert (alone["episodes_finished"], alone["macro_f1"]) == (3, pytest.approx(0.75))
    assert (other_alone["episodes_finished"], other_alone["macro_f1"]) == (4, pytest.approx((2 / 3 + 1 + 1 + 0) / 4))
    # The dashboard narrows `events` to its run: the other run's episodes never count.
    dashboard = data.dashboard(log, RUN, ResultCache(log.path, tmp_path / "d"))
    assert dashboard["terminations"] == [{"termination": "completed", "episodes": 3}, {"termination": "(not finished)", "episodes": 1}]
    assert [(r["label"], r["predicted"], r["true_positives"]) for r in dashboard["labels"]] == [
        ("authentic", 1, 1), ("manipulated", 1, 1), ("out_of_context", 1, 1), ("unverifiable", 0, 0)]


def test_a_page_read_while_its_run_is_sealed_is_read_again_from_a_new_snapshot(log):
    anyio.run(_write_late, log)
    tries = []

    def reader(con):
        tries.append(con)
        if len(tries) == 1:
            log.seal()  # the snapshot's live segments are gone before it reads them
        return data.fetch(con, "SELECT count(*) AS n FROM events WHERE run_id = $run", {"run": RUN})

    # 1 run.started + 1 gold import + 4 scheduled + 4 x (started, judged, finished) + run.finished
    assert data.read(log, "", reader, materialize=False, views=False) == [{"n": 1 + 1 + 4 + 4 * 3 + 1}]
    assert len(tries) == 2


def test_an_exporter_edit_changes_the_key_of_a_dataset_exports_numbers_only(tmp_path, monkeypatch):
    from eviscene.viewer import results_cache

    package = tmp_path / "eviscene"
    shutil.copytree(results_cache._PACKAGE, package, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(results_cache, "_PACKAGE", package)
    digests = lambda: (results_cache.code_digest.__wrapped__(False), results_cache.code_digest.__wrapped__(True))
    before = digests()
    with (package / "exports" / "dataset_views.py").open("a") as source:
        source.write("# an exporter edit\n")
    after_exporter = digests()
    assert after_exporter[0] == before[0] and after_exporter[1] != before[1]  # cached runs rows and dashboards stay
    with (package / "exports" / "serialize.py").open("a") as source:
        source.write("# how every cached row is read\n")
    after_serialize = digests()
    assert after_serialize[0] != after_exporter[0] and after_serialize[1] != after_exporter[1]
    with (package / "rules" / "canonical.py").open("a") as source:
        source.write("# a rule edit\n")
    after_rule = digests()
    assert after_rule[0] != after_serialize[0] and after_rule[1] != after_serialize[1]


def test_a_first_look_at_every_run_reads_the_sealed_runs_in_one_pass_while_a_run_is_live(log, tmp_path, monkeypatch):
    finished = ["finished-a", "finished-b"]
    for run in finished:
        anyio.run(_write_first, log, run)
        anyio.run(_write_late, log, run)
    log.seal()  # RUN (cases 0-2 answered) and both finished runs
    live = "live-run"
    anyio.run(_write_first, log, live)  # written after the seal: live
    alone = {run: data.known_run(log, run, ResultCache(log.path, tmp_path / run)) for run in [RUN, *finished, live]}

    computed_alone = []
    scored_run_row = data._scored_run_row
    monkeypatch.setattr(data, "_scored_run_row", lambda con, run_id: computed_alone.append(run_id) or scored_run_row(con, run_id))
    every = {r["run_id"]: r for r in data.list_runs(log, ResultCache(log.path, tmp_path / "first-look"))}
    assert computed_alone == [live]  # the sealed runs come from one pass over the log, the live run from its kept rows
    assert every == alone
    # Hand-computed: each finished run answered all 4 cases (case 3 wrong); RUN and the live run cases 0-2.
    assert [(run, every[run]["episodes_finished"], every[run]["status"]) for run in finished] == [(run, 4, "completed") for run in finished]
    assert all(every[run]["macro_f1"] == pytest.approx((2 / 3 + 1 + 1 + 0) / 4) for run in finished)
    assert all((every[run]["episodes_finished"], every[run]["accuracy"], every[run]["macro_f1"]) == (3, 0.75, pytest.approx(0.75))
               for run in (RUN, live))


def test_a_dashboard_begun_while_its_run_was_live_takes_its_runs_row_from_its_own_snapshot_when_the_run_is_sealed_meanwhile(
        log, tmp_path, monkeypatch):
    anyio.run(_write_late, log)
    latest_export = data._latest_export

    def sealed_meanwhile(con, run_id):  # the run is sealed after the page decided it was live
        if ResultCache(log.path, tmp_path / "probe").sealed(run_id) is False:
            log.seal()
        return latest_export(con, run_id)

    rows_asked = []
    known_run = data.known_run
    with monkeypatch.context() as patched:
        patched.setattr(data, "_latest_export", sealed_meanwhile)
        patched.setattr(data, "known_run", lambda *args: rows_asked.append(args[1]) or known_run(*args))
        board = data.dashboard(log, RUN, ResultCache(log.path, tmp_path / "runtime"))
    assert rows_asked == []  # computed with the dashboard, as for the live run it was decided to be
    assert board == data.dashboard(log, RUN, ResultCache(log.path, tmp_path / "scratch"))  # and as the sealed run's
    # Hand-computed: 4 cases answered, case 3 wrong.
    assert (board["run"]["episodes_finished"], board["run"]["status"]) == (4, "completed")
    assert board["run"]["macro_f1"] == pytest.approx((2 / 3 + 1 + 1 + 0) / 4)


def test_a_kind_remembered_for_a_few_runs_keeps_only_the_last_remembered(tmp_path):
    """A long-lived viewer kept every imported run's rows it was ever asked about, in memory."""
    cache = ResultCache(tmp_path / "log.duckdb", folder=tmp_path / "cache")
    heads = [RunHead(f"run-{i}", 10, f"h{i}") for i in range(5)]
    for head in heads[:3]:
        cache.remember("rows", head, head.run_id, runs=2)
    cache.remember("other", heads[0], "kept: another kind")
    assert [cache.get("rows", head) for head in heads[:3]] == [None, "run-1", "run-2"]
    cache.remember("rows", heads[1], "run-1 again", runs=2)  # remembered last: kept longest
    cache.remember("rows", heads[3], "run-3", runs=2)
    assert [cache.get("rows", head) for head in heads[:4]] == [None, "run-1 again", None, "run-3"]
    assert cache.get("other", heads[0]) == "kept: another kind"
    assert cache.get("rows", heads[1]) == "run-1 again"  # read last: the run browsed again is kept, run-3 goes
    cache.remember("rows", heads[4], "run-4", runs=2)
    assert [cache.get("rows", head) for head in heads[1:5]] == ["run-1 again", None, None, "run-4"]
    with pytest.raises(ValueError, match="at least the run remembered now is kept"):
        cache.remember("rows", heads[0], "none kept", runs=0)
