"""An episode page and `eviscene why` read only the episode's rollout group's events, and a
dataset export is replayed once per state of what it read: each must show exactly what the
views over the whole log say."""

from __future__ import annotations

import json
import shutil

import anyio
import pytest

from eviscene.errors import EvisceneError
from eviscene.events import EpisodeScheduled
from eviscene.exports import dataset_views
from eviscene.analysis import why
from eviscene.log import EventLog
from eviscene.store import EventDraft
from eviscene.viewer import data
from eviscene.viewer.results_cache import DATASET_EXPORT, ResultCache

from viewer_harness import eviscene


def _whole_log(monkeypatch) -> None:
    """The views over every event of the log: `events` left as it is."""
    monkeypatch.setattr(data, "narrow_to_group", lambda con, run_id, episode_id: None)


def test_an_episode_read_from_its_group_alone_equals_the_views_over_the_whole_log(logs, tmp_path, monkeypatch):
    log = EventLog(logs.demo)
    cache = ResultCache(log.path, tmp_path / "runtime")
    for run_id in (logs.run_a, logs.run_b):  # two runs in one log: the other run's events must not count
        episode_ids = [r["episode_id"] for r in log.sql("SELECT episode_id FROM episodes WHERE run_id = ? ORDER BY 1", [run_id]).to_pylist()]
        narrowed = {e: data.episode_stories(log, run_id, e, cache)[0] for e in episode_ids}
        with monkeypatch.context() as patched:
            _whole_log(patched)
            whole = {e: data.episode_stories(log, run_id, e, cache)[0] for e in episode_ids}
        assert narrowed == whole
        assert [s["episode"]["episode_id"] for s in data.episode_stories(log, run_id, cache=cache)] == episode_ids

    # Run A has 2 rollouts per case: each page shows both, with the group's mean reward.
    story = data.episode_stories(log, logs.run_a, episode_ids_of(log, logs.run_a)[0], cache)[0]
    group = story["group"]
    assert len(group) == 2 and len({m["prompt_group_id"] for m in group}) == 1
    assert {m["episode_id"] for m in group} >= {story["episode"]["episode_id"]}
    assert group[0]["reward_mean"] == pytest.approx((group[0]["reward"] + group[1]["reward"]) / 2)


def episode_ids_of(log: EventLog, run_id: str) -> list[str]:
    return [r["episode_id"] for r in log.sql("SELECT episode_id FROM episodes WHERE run_id = ? ORDER BY 1", [run_id]).to_pylist()]


def test_an_unknown_episode_is_named(logs, tmp_path):
    with pytest.raises(EvisceneError, match="no episode 'nope'"):
        data.episode_stories(EventLog(logs.demo), logs.run_a, "nope", ResultCache(logs.demo, tmp_path / "rt"))


def test_a_dataset_export_is_replayed_once_per_state_of_what_it_read(logs, tmp_path, monkeypatch):
    db = tmp_path / "exported.duckdb"
    shutil.copy(logs.demo, db)
    eviscene(db, "dataset", "export", "--run", logs.run_a, "--out", str(tmp_path / "dataset"))
    log = EventLog(db)
    runtime = tmp_path / "runtime"
    first = data.latest_dataset_export(log, logs.run_a, ResultCache(log.path, runtime))
    export, fates = data.dataset_fates(log, logs.run_a, ResultCache(log.path, runtime))
    assert export == {"out_dir": str(tmp_path / "dataset"), "changed_since": None}

    # What the replay's views say, asked directly.
    event = log.sql("SELECT payload->'inputs' AS inputs FROM events WHERE type = 'dataset.exported'").to_pylist()[0]
    con = dataset_views.open_export(log, dataset_views.ExportSettings.from_dict(json.loads(event["inputs"])))
    try:
        excluded = con.execute("SELECT main_reason, count(*) FROM excluded_episodes WHERE source_id = ? GROUP BY ALL ORDER BY 2 DESC, 1",
                               [logs.run_a]).fetchall()
        accepted = dict(con.execute("SELECT episode_id, accepted FROM rollout_selection WHERE source_id = ?", [logs.run_a]).fetchall())
    finally:
        con.close()
    assert [(r["reason"], r["episodes"]) for r in first["excluded"]] == excluded
    manifest = json.loads((tmp_path / "dataset" / "manifest.json").read_text(encoding="utf-8"))
    assert dict(excluded) == manifest["excluded_reason_counts"]  # one reason a bar, as the export counted them
    assert {e: f["accepted"] for e, f in fates.items()} == accepted
    assert set(fates) == set(episode_ids_of(log, logs.run_a))

    # A new viewer over the same runtime directory reads them back: no replay.
    def no_replay(*args, **kwargs):
        raise AssertionError("replayed again")

    with monkeypatch.context() as patched:
        patched.setattr(data, "open_export", no_replay)
        assert data.latest_dataset_export(log, logs.run_a, ResultCache(log.path, runtime)) == first
        assert data.dataset_fates(log, logs.run_a, ResultCache(log.path, runtime)) == (export, fates)

    # Another export is another event: it is replayed, and the newest is shown.
    eviscene(db, "dataset", "export", "--run", logs.run_a, "--one-rollout-per-case", "--out", str(tmp_path / "dataset-one"))
    newest = data.latest_dataset_export(log, logs.run_a, ResultCache(log.path, runtime))
    assert newest["out_dir"].endswith("dataset-one")


def test_a_dataset_exports_numbers_are_filed_under_the_state_they_were_replayed_from(logs, tmp_path, monkeypatch):
    db = tmp_path / "exported.duckdb"
    shutil.copy(logs.demo, db)
    eviscene(db, "dataset", "export", "--run", logs.run_a, "--out", str(tmp_path / "dataset"))
    log = EventLog(db)
    latest = lambda: data.read(log, "", lambda con: data._latest_export(con, logs.run_a), materialize=False, views=False)
    older = latest()  # what a page read in its snapshot ...
    # ... before run A grew: one more rollout of its first case, scheduled and never finished
    # (a replay excludes it before it is a candidate; its head is what moves the key).
    scheduled = log.sql("SELECT episode_id, payload FROM events WHERE run_id = ? AND type = 'episode.scheduled' ORDER BY seq LIMIT 1",
                        [logs.run_a]).to_pylist()[0]
    payload = {k: v for k, v in json.loads(scheduled["payload"]).items() if k != "type"}
    grown = scheduled["episode_id"].rsplit("--r", 1)[0] + "--r099"
    async def grow() -> None:  # past the run's end, as a resume does (`append` refuses a finished run)
        async with log.writer(logs.run_a) as writer:
            await writer.emit(EventDraft(EpisodeScheduled(**{**payload, "rollout_index": 99}), episode_id=grown))

    anyio.run(grow)
    newer = latest()
    assert newer[0]["hash"] == older[0]["hash"] and newer[1] != older[1]  # the same export; its source grew

    runtime = tmp_path / "runtime"
    cache = ResultCache(log.path, runtime)
    shown = data.latest_dataset_export(log, logs.run_a, cache, older)
    # Replayed from the newest state: filed under that state's key, never under the older one.
    assert cache.get(DATASET_EXPORT, older[1]) is None
    numbers = cache.get(DATASET_EXPORT, newer[1])
    assert numbers is not None and shown["excluded"] == numbers["excluded"].get(logs.run_a, [])
    con = dataset_views.open_export(log, dataset_views.ExportSettings.from_dict(newer[0]["inputs"]))
    try:
        selected = {e for (e,) in con.execute("SELECT episode_id FROM rollout_selection WHERE source_id = ?", [logs.run_a]).fetchall()}
    finally:
        con.close()
    assert {f["episode_id"] for f in numbers["fates"][logs.run_a]} == selected

    def no_replay(*args, **kwargs):
        raise AssertionError("replayed again")

    monkeypatch.setattr(data, "open_export", no_replay)  # a new viewer reads the state's key and finds the numbers
    export, fates = data.dataset_fates(log, logs.run_a, ResultCache(log.path, runtime))
    assert set(fates) == selected
    # The episode page of the rollout added after the export: read by it, yet no candidate (never
    # finished), and the log has changed since (it said "No dataset export has read this run").
    assert export["changed_since"] == numbers["changed_since"] and export["changed_since"]
    [story] = data.episode_stories(log, logs.run_a, grown, ResultCache(log.path, runtime))
    assert story["dataset"] == {"out_dir": str(tmp_path / "dataset"), "changed_since": export["changed_since"], "not_a_candidate": True}


def test_sorting_and_paging_query_the_runs_table_computed_once_per_state_of_the_run(logs, tmp_path, monkeypatch):
    log = EventLog(logs.demo)
    cache = ResultCache(log.path, tmp_path / "runtime")
    first = data.episode_list(log, logs.run_a, sort="confidence", descending=True, cache=cache)
    asked: list[str] = []
    original = EventLog.add_views

    def recorded(self, con, *, materialize, for_query):
        asked.append(for_query)
        return original(self, con, materialize=materialize, for_query=for_query)

    monkeypatch.setattr(EventLog, "add_views", recorded)
    again = data.episode_list(log, logs.run_a, sort="confidence", descending=True, cache=cache)
    paged = data.episode_list(log, logs.run_a, sort="confidence", descending=True, page=2, page_size=3, cache=cache)
    wrong = data.episode_list(log, logs.run_a, predicate="verdict <> gold_label", cache=cache)
    assert again == first and paged.rows == first.rows[3:6] and paged.total == first.total
    assert wrong.total == sum(1 for r in first.rows if r["verdict"] != r["gold_label"])
    assert asked and not any("episode_metrics" in q for q in asked)  # the table was not computed again


def test_why_read_from_the_group_alone_tells_what_the_views_over_the_whole_log_tell(logs, monkeypatch):
    log = EventLog(logs.demo)
    for run_id in (logs.run_a, logs.run_b):  # the same episode ids in both runs: --run names one
        for episode_id in episode_ids_of(log, run_id)[:3]:
            narrowed = why.explain_episode(log, episode_id, run_id)
            with monkeypatch.context() as patched:
                patched.setattr(why, "narrow_to_group", lambda con, run, episode: None)
                assert why.explain_episode(log, episode_id, run_id) == narrowed
            assert narrowed.run_id == run_id and narrowed.episode["episode_id"] == episode_id
            assert [m["episode_id"] for m in narrowed.group] == sorted(
                e for e in episode_ids_of(log, run_id) if e.rsplit("--r", 1)[0] == episode_id.rsplit("--r", 1)[0])
