"""What the viewer shows, read from the views over one snapshot per page (the same
`EventLog.connect` path as `eviscene sql`: live segments included, no writer's lock taken).

Numbers come from the views; the viewer only adds what a page needs on top of them
(bootstrap intervals, histogram bins, progress rate and ETA)."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow.compute as pc

from eviscene.analysis.why import IMPORTED_FROM_SQL, IMPORTED_STORIES_READ, EpisodeStory, imported_story_rows, stories_of
from eviscene.errors import EvisceneError, no_run_error
from eviscene.exports.dataset_views import ExportSettings, open_export
from eviscene.exports.dataset_why import changed_since
from eviscene.exports.serialize import rows
from eviscene.log import EventLog
from eviscene.store.layout import run_folder
from eviscene.store.locks import lock_holder
from eviscene.viewer.live_rows import EPISODE_LOCAL_VIEWS, GROUP_VIEWS, prepare
from eviscene.viewer.predicate import filter_time_limit, validate_predicate
from eviscene.viewer.results_cache import DATASET_EXPORT, ResultCache, RunHead, run_head, run_heads
from eviscene.views import narrow_to_group, narrow_to_runs

# How long a page waits for a live run's first computation before it answers without its
# numbers (`computing`) and asks again on its next refresh.
FIRST_LOOK_WAIT_S = 1.0
BOOTSTRAP_SAMPLES = 2_000
BOOTSTRAP_SEED = 20261130
HISTOGRAM_BINS = 20

# The episodes table of the Episodes page: the `episodes` view joined with its scores and
# audit. The filter predicate is evaluated over exactly these columns.
EPISODE_LIST_SQL = """
SELECT e.episode_id, e.case_id, e.rollout_index, e.prompt_group_id, e.finished, e.termination,
       e.verdict, m.gold_label, m.result_correct, e.confidence, e.total_tool_calls, e.llm_api_calls,
       e.time_taken, s.total AS reward, a.hard_trace_audit_pass, a.strict_trace_audit_pass, e.error, e.run_id
FROM episodes e
LEFT JOIN episode_metrics m USING (run_id, episode_id)
LEFT JOIN trajectory_scores s USING (run_id, episode_id)
LEFT JOIN trace_audit a USING (run_id, episode_id)
WHERE e.run_id = $run
"""
# An imported run directory's episodes with the same columns: no gold in the log, the reward its
# trajectory_scores.jsonl recorded, the audit its process_metrics.jsonl did.
IMPORTED_EPISODE_LIST_SQL = """
SELECT episode_id, case_id, rollout_index, prompt_group_id, termination IS NOT NULL AS finished, termination,
       verdict, NULL::VARCHAR AS gold_label, result_correct, confidence, total_tool_calls, llm_api_calls,
       time_taken, reward, hard_trace_audit_pass, strict_trace_audit_pass,
       error, run_id
FROM imported_episodes
WHERE run_id = $run
"""
# What the text search reads: a native episode's model messages and tool results, an imported
# one's trace file.
_SEARCHED_EPISODES_SQL = """
SELECT episode_id FROM events WHERE run_id = $run
  AND type IN ('model.called', 'tool.returned', 'perception.reported', 'judgment.made') AND payload::VARCHAR ILIKE $search ESCAPE '\\'"""
# The CASE ties the text test to the trace files: pushed below the join on its own, DuckDB
# decoded every blob of the log, and one not UTF-8 (any imported file) failed the search.
_SEARCHED_IMPORTED_EPISODES_SQL = """
SELECT f.episode_id FROM imported_files f JOIN blobs b ON b.sha256 = f.blob_sha256
WHERE f.import_id = $run AND f.kind = 'trace'
  AND CASE WHEN f.kind = 'trace' THEN decode(b.content) ILIKE $search ESCAPE '\\'
            OR regexp_matches(decode(b.content), $escaped) END"""
EPISODE_LIST_COLUMNS = (
    "episode_id", "case_id", "rollout_index", "termination", "verdict", "gold_label", "result_correct",
    "confidence", "total_tool_calls", "llm_api_calls", "time_taken", "reward", "hard_trace_audit_pass",
    "strict_trace_audit_pass",
)

# Runs whose large results (an episode list, an imported run's rows read whole: ~1.4 GB of JSONL
# at 100k episodes) the viewer keeps in memory: the last few browsed, not every run a long-lived
# viewer was ever asked about.
RUNS_KEPT = 4


def read(log: EventLog, queries: str, reader: Callable[[duckdb.DuckDBPyConnection], Any], *, materialize: bool = True, views: bool = True) -> Any:
    """`reader` over one snapshot with the views `queries` name, each computed once by default
    (a page asks many questions of a whole run)."""
    return log.read(reader, for_query=queries, materialize=materialize, views=views)


def fetch(con: duckdb.DuckDBPyConnection, sql: str, params: dict[str, Any] | list[Any] | None = None, json_columns: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    return rows(con.sql(sql, params=params).to_arrow_table(), json_columns)


# ---------------------------------------------------------------------------------- runs

# Seconds in which some attempt of a run was at work: the union of its attempts' spans (start
# to finish), each adding what it reaches past the furthest finish before it. A finished run's
# pace is its episodes over these, not over the hours it lay killed between invocations.
_BUSY_SQL = """
SELECT run_id, sum(greatest(0, ended - greatest(began, coalesce(reach, began)))) / 1e6 AS busy_seconds
FROM (
    SELECT run_id, began, ended,
           max(ended) OVER (PARTITION BY run_id ORDER BY began, ended ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS reach
    FROM (
        SELECT run_id, min(epoch_us(ts)) FILTER (WHERE type = 'episode.started') AS began,
               max(epoch_us(ts)) FILTER (WHERE type = 'episode.finished') AS ended
        FROM events WHERE type IN ('episode.started', 'episode.finished') {where}
        GROUP BY run_id, episode_id, attempt)
    WHERE began IS NOT NULL AND ended IS NOT NULL)
GROUP BY run_id"""
_RUN_ROW_SQL = "SELECT * FROM runs LEFT JOIN ({busy}) USING (run_id) {where}"
# One run's row of the runs view with its accuracy and macro-F1; `run_id = $run` reaches the
# scans of `events` (the views group and join by run_id), so it reads that run's events only.
_ONE_RUN_ROW_SQL = _RUN_ROW_SQL.format(busy=_BUSY_SQL.format(where="AND run_id = $run"), where="WHERE run_id = $run")
# An imported run carries no gold: its accuracy is rollout 0's `scored_correct` (as `runs
# compare` scores it; none for a run that recorded no correctness), and it has no macro-F1.
_ALL_RUN_METRICS_SQL = """
SELECT DISTINCT run_id, accuracy, macro_f1 FROM classification_metrics
UNION ALL
SELECT run_id, avg(scored_correct::INTEGER), NULL FROM imported_episodes WHERE rollout_index = 0 GROUP BY run_id
"""
_RUN_METRICS_SQL = f"SELECT accuracy, macro_f1 FROM ({_ALL_RUN_METRICS_SQL}) WHERE run_id = $run"
# Every run at once, when none is known yet (one pass over the log beats one per run).
_ALL_RUN_ROWS_SQL = _RUN_ROW_SQL.format(busy=_BUSY_SQL.format(where=""), where="")
_RUN_QUERIES = f"{_ALL_RUN_ROWS_SQL} {_ALL_RUN_METRICS_SQL}"


def _run_rows(
    log: EventLog, con: duckdb.DuckDBPyConnection, heads: dict[str, RunHead], cache: ResultCache, *, every_run: bool = False,
    wait_s: float | None = None,
) -> dict[str, dict[str, Any] | None]:
    """The runs row (with accuracy and macro-F1) of each run in `heads` (`every_run`: all the
    log's), from the cache or computed in `con`'s snapshot for the runs whose head it has not
    seen; None for an id that is no run (a dataset export, an import). With `wait_s`, a live
    run seen for the first time is computed on a thread of its own: until it has finished,
    its row is only {"run_id", "computing_s"} (see `computing`)."""
    found: dict[str, dict[str, Any] | None] = {}
    stale = []
    for run_id, head in heads.items():
        cached = cache.get("run", head)
        if cached is None:
            stale.append(run_id)
        else:
            found[run_id] = cached["row"]
    nothing_kept = len(stale) == len(heads)  # a first look: one pass gives the sealed runs' rows, live runs or not
    live = [run_id for run_id in stale if not cache.sealed(run_id)]
    stale = [run_id for run_id in stale if run_id not in live]
    for run_id in list(live):
        if wait_s is not None and cache.live_rows("run", run_id) is None:
            waiting = computing(cache, "run", run_id, lambda run_id=run_id: _live_run_row(log, run_id, cache), wait_s)
            if waiting is not None:
                found[run_id] = waiting
                live.remove(run_id)
    if live and not stale:  # in this snapshot: nothing else is read from it
        found[live[0]] = _live_run_row_in(con, log, heads[live[0]], cache)
        live = live[1:]
    for run_id in live:  # from its rows kept across looks, each in a snapshot of its own
        found[run_id] = _live_run_row(log, run_id, cache)
    if not stale:
        return found
    if every_run and nothing_kept:  # the runs and their accuracy both read every imported episode
        keep_imported_episodes(con, log, _RUN_QUERIES)
        rows = {r["run_id"]: r for r in fetch(con, _ALL_RUN_ROWS_SQL)}
        metrics = {r["run_id"]: r for r in fetch(con, _ALL_RUN_METRICS_SQL)}
        for run_id in stale:
            found[run_id] = cache.put("run", heads[run_id], {"row": _with_scores(rows.get(run_id), metrics.get(run_id))})["row"]
    else:
        log.add_views(con, materialize=False, for_query=_RUN_QUERIES)
        for run_id in stale:
            found[run_id] = cache.put("run", heads[run_id], {"row": _scored_run_row(con, run_id)})["row"]
    return found


def _with_scores(row: dict[str, Any] | None, scores: dict[str, Any] | None) -> dict[str, Any] | None:
    scores = scores or {}
    return None if row is None else {**row, "accuracy": scores.get("accuracy"), "macro_f1": scores.get("macro_f1")}


def _scored_run_row(con: duckdb.DuckDBPyConnection, run_id: str) -> dict[str, Any] | None:
    rows, metrics = fetch(con, _ONE_RUN_ROW_SQL, {"run": run_id}), fetch(con, _RUN_METRICS_SQL, {"run": run_id})
    return _with_scores(rows[0] if rows else None, metrics[0] if metrics else None)


def _live_run_row(log: EventLog, run_id: str, cache: ResultCache) -> dict[str, Any] | None:
    return read(log, "", lambda con: _live_run_row_in(con, log, run_head(con, run_id), cache), views=False)


def computing(cache: ResultCache, kind: str, run_id: str, compute: Callable[[], Any], wait_s: float) -> dict[str, Any] | None:
    """None once `compute` (a live run's first `kind` of page) has run on its own thread,
    waiting for it up to `wait_s`; else what the page shows meanwhile: the run and how long
    its numbers have been computing (no number that is not computed yet)."""
    since = cache.computing(kind, run_id, compute, wait_s)
    return None if since is None else {"run_id": run_id, "computing_s": since}


def _live_run_row_in(con: duckdb.DuckDBPyConnection, log: EventLog, head: RunHead, cache: ResultCache) -> dict[str, Any] | None:
    """A live run's row in `con`'s snapshot (where `head` is its head), computed over its
    `episodes` rows kept across looks (live_rows.py)."""
    cached = cache.get("run", head)
    if cached is not None:
        return cached["row"]
    prepare(con, log, head, cache, "run", ("episodes",), (), _RUN_QUERIES)
    return cache.put("run", head, {"row": _scored_run_row(con, head.run_id)})["row"]


# Episodes a run's writer has finished since it took the run (its lock): a resumed run's pace.
_FINISHED_SINCE_SQL = "SELECT count(*) FROM events WHERE run_id = $run AND type = 'episode.finished' AND epoch_us(ts) >= $since"


def with_progress(log: EventLog, run: dict[str, Any]) -> dict[str, Any]:
    """Add the finishing rate (episodes a minute) and, while the run writes, its ETA. The status
    `running_or_interrupted` says only that `run.finished` is missing: a writer holding the run's
    lock tells a running run from a killed one (as `log verify` does), which gets no ETA. A
    running run's rate is its writer's: the episodes finished since it wrote its pid into the
    lock file, so a resumed run's earlier invocations, and the hours it lay killed between
    them, do not slow it; any other run's is its finished episodes over the time an attempt
    was at work (`_BUSY_SQL`). An imported run has neither: its last event is its
    import, not an episode finishing."""
    if run.get("source") == "imported":
        return {**run, "rate_per_minute": None, "eta_seconds": None, "writing": False}
    lock = run_folder(log.path, run["run_id"]) / "writer.lock"
    writing = run["status"] == "running_or_interrupted" and lock_holder(lock) is not None
    if writing:
        since = _taken_at(lock)
        finished = read(log, "", lambda con: con.execute(_FINISHED_SINCE_SQL, {"run": run["run_id"], "since": int(since * 1e6)}).fetchall()[0][0],
                        views=False) if since is not None else 0
        elapsed = time.time() - since if since is not None else None
    else:
        finished, elapsed = run["episodes_finished"], run.get("busy_seconds")
    rate = finished / (elapsed / 60) if elapsed and finished else None
    remaining = run["episodes_planned"] - run["episodes_finished"]
    eta = remaining / rate * 60 if writing and rate and remaining > 0 else None
    # A run no process writes is finished by a resume, given the log this viewer reads.
    resume = log.resume_line(run["run_id"]) if run["status"] == "running_or_interrupted" and not writing else None
    return {**{k: v for k, v in run.items() if k != "busy_seconds"}, "rate_per_minute": rate, "eta_seconds": eta, "writing": writing,
            "resume": resume}


def _taken_at(lock: Path) -> float | None:
    """When the run's writer took its lock (it writes its pid into the file then), None once the file is gone."""
    try:
        return lock.stat().st_mtime
    except FileNotFoundError:
        return None


def list_runs(log: EventLog, cache: ResultCache | None = None, wait_s: float | None = None) -> list[dict[str, Any]]:
    """Every run with its progress, accuracy and macro-F1, newest first (as `runs` ordered
    by started_at DESC NULLS LAST, run_id); with `wait_s`, a live run first seen is listed as
    `computing` until its row is (`_run_rows`), after the others."""
    cache = cache or ResultCache(log.path)
    found = read(log, "", lambda con: _run_rows(log, con, run_heads(con), cache, every_run=True, wait_s=wait_s),
                 materialize=False, views=False)
    runs = sorted((row for row in found.values() if row is not None), key=lambda r: r["run_id"])
    runs.sort(key=lambda r: r.get("started_at") or "", reverse=True)  # ISO-8601 UTC text sorts as time; NULL last
    return [r if "computing_s" in r else with_progress(log, r) for r in runs]


def known_run(log: EventLog, run_id: str, cache: ResultCache | None = None) -> dict[str, Any]:
    cache = cache or ResultCache(log.path)

    def reader(con: duckdb.DuckDBPyConnection) -> dict[str, Any]:
        head = run_head(con, run_id)
        if head is None:
            raise no_run_error(run_id, log.path, run_heads(con))
        return _run_rows(log, con, {run_id: head}, cache)[run_id]

    return with_progress(log, read(log, "", reader, materialize=False, views=False))


# ----------------------------------------------------------------------------- dashboard

# The plots a native and an imported run share, over `episodes` or `imported_episodes`. DECIMAL
# mean: the same bytes whatever order the segments are read in; a confidence outside [0, 1]
# (an imported row's) has no bin.
_CALIBRATION_SQL = """
        SELECT least(floor(confidence * 10), 9)::INTEGER AS bin, count(*) AS episodes,
               avg(confidence::DECIMAL(18, 9))::DOUBLE AS mean_confidence, avg({correct}::INTEGER) AS accuracy
        FROM {relation} WHERE run_id = $run AND termination = 'completed' AND confidence BETWEEN 0 AND 1
        GROUP BY ALL ORDER BY bin"""
_TERMINATIONS_SQL = """
        SELECT coalesce(termination, '(not finished)') AS termination, count(*) AS episodes
        FROM {relation} WHERE run_id = $run GROUP BY ALL ORDER BY episodes DESC, termination"""
_TOOL_CALLS_SQL = """
        SELECT total_tool_calls AS tool_calls, count(*) AS episodes
        FROM {relation} WHERE run_id = $run AND {finished} AND total_tool_calls IS NOT NULL GROUP BY ALL ORDER BY tool_calls"""
_DASHBOARD_SQL = {
    "labels": "SELECT * FROM classification_metrics WHERE run_id = $run ORDER BY label",
    # Rollout 0 of every case as classification_metrics scores it (its bootstrap resamples these).
    "scored": """
        SELECT g.label AS gold, CASE WHEN e.termination = 'completed' THEN e.verdict END AS predicted
        FROM episodes e JOIN gold_labels g ON g.run_id = e.run_id AND g.case_id = e.case_id
        WHERE e.run_id = $run AND e.rollout_index = 0 ORDER BY e.case_id""",
    "calibration": _CALIBRATION_SQL.format(relation="episode_metrics", correct="result_correct"),
    "terminations": _TERMINATIONS_SQL.format(relation="episodes"),
    "tool_calls_per_episode": _TOOL_CALLS_SQL.format(relation="episodes", finished="finished"),
    "tool_latency": """
        SELECT tool, count(*) AS calls, min(latency_ms) AS min, quantile_cont(latency_ms, 0.25) AS q1,
               median(latency_ms) AS median, quantile_cont(latency_ms, 0.75) AS q3, max(latency_ms) AS max
        FROM tool_calls WHERE run_id = $run AND latency_ms IS NOT NULL GROUP BY ALL ORDER BY tool""",
    "model_latency": """
        SELECT stage, count(*) AS calls, min(latency_ms) AS min, quantile_cont(latency_ms, 0.25) AS q1,
               median(latency_ms) AS median, quantile_cont(latency_ms, 0.75) AS q3, max(latency_ms) AS max,
               sum(prompt_tokens) AS prompt_tokens, sum(completion_tokens) AS completion_tokens,
               sum(retries) AS retries, count(*) FILTER (WHERE retries > 0) AS calls_retried
        FROM model_calls WHERE run_id = $run GROUP BY ALL ORDER BY stage""",
    "audit_failures": """
        SELECT code, severity, count(*) AS failures FROM trace_audit_failures WHERE run_id = $run
        GROUP BY ALL ORDER BY failures DESC, code""",
    "policy_blocks": """
        SELECT rule, count(*) AS blocks FROM (
            SELECT unnest((payload->'reasons')::VARCHAR[]) AS rule FROM steps
            WHERE run_id = $run AND type = 'gate.decided' AND payload->>'gate' = 'source_access_policy'
              AND NOT (payload->>'passed')::BOOLEAN)
        GROUP BY ALL ORDER BY blocks DESC, rule""",
    "groups": """
        SELECT count(DISTINCT prompt_group_id) AS groups,
               count(DISTINCT prompt_group_id) FILTER (WHERE is_std_zero) AS zero_variance_groups
        FROM post_rollout_rewards WHERE run_id = $run""",
}
# An imported run directory holds no events: what its run_results.jsonl, process_metrics.jsonl
# and trajectory_scores.jsonl recorded (imported_episodes), the rest of the dashboard empty.
_IMPORTED_DASHBOARD_SQL = {
    "calibration": _CALIBRATION_SQL.format(relation="(SELECT * FROM imported_episodes WHERE scored_correct IS NOT NULL)",
                                           correct="scored_correct"),
    "terminations": _TERMINATIONS_SQL.format(relation="imported_episodes"),
    "tool_calls_per_episode": _TOOL_CALLS_SQL.format(relation="imported_episodes", finished="termination IS NOT NULL"),
    "imported_from": IMPORTED_FROM_SQL,
}
_IMPORTED_HISTOGRAMS = (
    ("duration", "imported_episodes", "time_taken"),
    ("reward", "imported_episodes", "reward"),
)
# The one event that makes a run id an imported run directory (what `import_sources` reads).
_IMPORTED_RUN_SQL = """
SELECT 1 FROM events WHERE run_id = $run AND type = 'artifact.imported' AND (payload->>'kind') = 'run_dir'
  AND (payload->'metadata'->>'import_id') = run_id LIMIT 1"""
# Distributions drawn as histograms: (name, relation, column), binned in SQL. A value that is
# not finite (`"time_taken": 1e999` imported into an older log) has no place on an axis: the finite ones
# are drawn. Bins are worked out in halves: the range of two finite doubles (1e308 and -1e308)
# overflows to Infinity, its half never does (and halving a double is exact).
_HISTOGRAMS = (
    ("duration", "episodes", "time_taken"),
    ("reward", "post_rollout_rewards", "reward"),
    ("grpo_advantage", "post_rollout_rewards", "grpo_advantage"),
    ("rloo_advantage", "post_rollout_rewards", "rloo_advantage"),
)
_HISTOGRAM_SQL = """
WITH v AS (SELECT {column}::DOUBLE AS x FROM {relation} WHERE run_id = $run AND isfinite({column}::DOUBLE)),
r AS (SELECT min(x) AS lo, max(x) AS hi, (max(x) / 2 - min(x) / 2) / {bins} AS half_width FROM v),
b AS (SELECT CASE WHEN half_width = 0 THEN 0 ELSE least(floor((x / 2 - lo / 2) / half_width), {bins} - 1) END::INTEGER AS bin,
             lo, hi, half_width
      FROM v, r)
SELECT bin, count(*) AS n, any_value(2 * (lo / 2 + bin * half_width)) AS start,
       any_value(CASE WHEN bin = {bins} - 1 OR half_width = 0 THEN hi ELSE 2 * (lo / 2 + (bin + 1) * half_width) END) AS stop
FROM b GROUP BY bin ORDER BY bin
"""


def _histogram_sql(relation: str, column: str) -> str:
    return _HISTOGRAM_SQL.format(relation=relation, column=column, bins=HISTOGRAM_BINS)


def _macro_f1(confusion: np.ndarray, labels: list[int]) -> np.ndarray:
    """Macro-F1 of each resample from its confusion counts [resample, gold, predicted], as
    classification_metrics defines it (a missing prediction is wrong; an empty class scores 0)."""
    f1s = []
    for label in labels:
        tp = confusion[:, label, label]
        support, guessed = confusion[:, label, :].sum(axis=-1), confusion[:, :, label].sum(axis=-1)
        precision = np.divide(tp, guessed, out=np.zeros(tp.shape), where=guessed > 0)
        recall = np.divide(tp, support, out=np.zeros(tp.shape), where=support > 0)
        total = precision + recall
        f1s.append(np.divide(2 * precision * recall, total, out=np.zeros(tp.shape), where=total > 0))
    return np.mean(f1s, axis=0)


def bootstrap_intervals(scored: list[dict[str, Any]], labels: list[str]) -> dict[str, tuple[float, float]]:
    """Percentile 95% intervals of accuracy and macro-F1 over cases resampled with replacement."""
    if not scored or not labels:
        return {}
    # Each case as one (gold, predicted) code, each resample as its confusion counts: the same
    # integer counts as comparing the label strings, without comparing strings (95 s for 25k cases).
    codes: dict[str | None, int] = {}
    code = lambda label: codes.setdefault(label, len(codes))
    cases = [(code(r["gold"]), code(r["predicted"] or "")) for r in scored]
    label_codes = [code(label) for label in labels]
    size = len(codes)
    chunk = max(1, 2_000_000 // len(scored))  # bounded memory on large runs
    # 32-bit draws and codes where they fit: NumPy draws the same integers for int32 as for
    # int64 below 2**31 (its bounded draws are 32-bit either way), in half the memory traffic.
    small = np.int32 if max(len(scored), chunk * size * size) < 2**31 else np.int64
    pairs = np.array([g * size + p for g, p in cases], dtype=small)
    diagonal = [c * size + c for c in range(size)]
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    accuracies, macros = [], []
    for start in range(0, BOOTSTRAP_SAMPLES, chunk):
        picks = rng.integers(0, len(scored), size=(min(chunk, BOOTSTRAP_SAMPLES - start), len(scored)), dtype=small)
        cells = pairs[picks]
        cells += np.arange(len(picks), dtype=small)[:, None] * (size * size)  # each resample's own cells, in place
        confusion = np.bincount(cells.ravel(), minlength=len(picks) * size * size).reshape(len(picks), size, size)
        accuracies.append(confusion.reshape(len(picks), -1)[:, diagonal].sum(axis=1) / len(scored))
        macros.append(_macro_f1(confusion, label_codes))
    interval = lambda values: (float(np.quantile(values, 0.025)), float(np.quantile(values, 0.975)))
    return {"accuracy": interval(np.concatenate(accuracies)), "macro_f1": interval(np.concatenate(macros))}


def majority_baseline(scored: list[dict[str, Any]]) -> tuple[str | None, float]:
    """Accuracy of always answering the commonest gold label (ties: the first by name)."""
    counts: dict[str, int] = {}
    for r in scored:
        counts[r["gold"]] = counts.get(r["gold"], 0) + 1
    if not counts:
        return None, 0.0
    label = min(counts, key=lambda k: (-counts[k], k))
    return label, counts[label] / len(scored)


def _expected_calibration_error(bins: list[dict[str, Any]]) -> float | None:
    total = sum(b["episodes"] for b in bins)
    return sum(b["episodes"] / total * abs(b["accuracy"] - b["mean_confidence"]) for b in bins) if total else None


def is_imported_run(con: duckdb.DuckDBPyConnection, run_id: str) -> bool:
    return bool(con.execute(_IMPORTED_RUN_SQL, {"run": run_id}).fetchall())


def keep_imported_episodes(con: duckdb.DuckDBPyConnection, log: EventLog, queries: str, run_id: str | None = None) -> None:
    """Give `con` the views `queries` read, with `imported_episodes` (of `run_id`, else of every
    imported run) computed once: a page reads it for each plot and number, and each read
    parses the run's JSONL rows again (~0.5 s at 20k episodes)."""
    where = "" if run_id is None else "WHERE run_id = $run"
    rows = con.sql(log.inline_views(con, f"SELECT * FROM imported_episodes {where}"), params={"run": run_id} if run_id else None)
    con.register("imported_episodes", rows.to_arrow_table())
    log.add_views(con, materialize=False, for_query=queries, provided=frozenset({"imported_episodes"}))


def _plotted_imported(con: duckdb.DuckDBPyConnection, log: EventLog, run_id: str) -> dict[str, Any]:
    """What the dashboard plots of an imported run directory (`_IMPORTED_DASHBOARD_SQL`)."""
    queries = " ".join(_IMPORTED_DASHBOARD_SQL.values()) + " " + " ".join(_histogram_sql(rel, col) for _, rel, col in _IMPORTED_HISTOGRAMS)
    narrow_to_runs(con, (run_id,))
    keep_imported_episodes(con, log, queries, run_id)
    found: dict[str, Any] = {name: fetch(con, sql, {"run": run_id}) for name, sql in _IMPORTED_DASHBOARD_SQL.items()}
    found["imported_from"] = found["imported_from"][0] if found["imported_from"] else None
    found["histograms"] = {name: fetch(con, _histogram_sql(rel, col), {"run": run_id}) for name, rel, col in _IMPORTED_HISTOGRAMS}
    found["ece"] = _expected_calibration_error(found["calibration"])
    # no gold, events or rollout groups in the log: no per-label scores, baseline, latencies, audit or groups
    return {**found, "labels": [], "scored": [], "intervals": {}, "majority_label": None, "majority_accuracy": None,
            "tool_latency": [], "model_latency": [], "audit_failures": [], "policy_blocks": [], "groups": []}


def _plotted(con: duckdb.DuckDBPyConnection, log: EventLog, head: RunHead, cache: ResultCache, sealed: bool) -> dict[str, Any]:
    """Every number the dashboard plots but the dataset section, computed in `con`'s snapshot
    over the run's events only (`events` narrowed to the run), each view computed once; a live
    run's (not `sealed`, as its caller decided once) per-episode views from its rows kept
    across looks (live_rows.py), and its runs row with them."""
    run_id = head.run_id
    queries = " ".join(_DASHBOARD_SQL.values()) + " " + " ".join(_histogram_sql(rel, col) for _, rel, col in _HISTOGRAMS)
    if sealed:
        narrow_to_runs(con, (run_id,))
        log.add_views(con, materialize=True, for_query=queries)
    else:  # with the run's row, from the same rows
        prepare(con, log, head, cache, "dashboard", (*EPISODE_LOCAL_VIEWS, "steps"), GROUP_VIEWS, f"{queries} {_RUN_QUERIES}")
        if cache.get("run", head) is None:
            cache.put("run", head, {"row": _scored_run_row(con, run_id)})
    found = {name: fetch(con, sql, {"run": run_id}) for name, sql in _DASHBOARD_SQL.items()}
    found["histograms"] = {name: fetch(con, _histogram_sql(rel, col), {"run": run_id}) for name, rel, col in _HISTOGRAMS}
    labels = [r["label"] for r in found["labels"]]
    found["intervals"] = bootstrap_intervals(found["scored"], labels)
    found["majority_label"], found["majority_accuracy"] = majority_baseline(found["scored"])
    found["ece"] = _expected_calibration_error(found["calibration"])
    return found


def _dashboard_numbers(con: duckdb.DuckDBPyConnection, log: EventLog, head: RunHead, cache: ResultCache, sealed: bool) -> dict[str, Any]:
    """What the dashboard plots of the run at `head`, from the cache or computed (a native
    run's or an imported run directory's) and kept under that head."""
    found = cache.get("dashboard", head)
    if found is None:
        computed = _plotted_imported(con, log, head.run_id) if is_imported_run(con, head.run_id) else _plotted(con, log, head, cache, sealed)
        found = cache.put("dashboard", head, computed)
    return found


def dashboard(log: EventLog, run_id: str, cache: ResultCache | None = None, wait_s: float | None = None) -> dict[str, Any]:
    """The run's row and what its dashboard plots, computed once per run head. With `wait_s`,
    a live run's first dashboard is computed on a thread of its own: until it has finished,
    only {"run_id", "computing_s"} (see `computing`)."""
    cache = cache or ResultCache(log.path)
    sealed = cache.sealed(run_id)
    if not sealed and wait_s is not None and cache.live_rows("dashboard", run_id) is None:
        waiting = computing(cache, "dashboard", run_id, lambda: dashboard(log, run_id, cache), wait_s)
        if waiting is not None:
            return waiting
    run = known_run(log, run_id, cache) if sealed else None

    def reader(con: duckdb.DuckDBPyConnection) -> tuple[RunHead, dict[str, Any], ExportKey | None]:
        head = run_head(con, run_id)
        if head is None:
            raise no_run_error(run_id, log.path, run_heads(con))
        export = _latest_export(con, run_id)  # before the dashboard narrows the snapshot to the run
        return head, _dashboard_numbers(con, log, head, cache, sealed), export

    head, plotted, export = read(log, "", reader, views=False)
    if run is None:  # a live run's row comes with its dashboard, from the same snapshot
        row = cache.get("run", head)
        run = known_run(log, run_id, cache) if row is None or row["row"] is None else with_progress(log, row["row"])
    return {**plotted, "run": run, "dataset": latest_dataset_export(log, run_id, cache, export)}


def precompute(log: EventLog, run_ids: list[str]) -> None:
    """File the runs-page row and the dashboard numbers of each sealed run of `run_ids` beside
    the log (results_cache.py), computed exactly as a page computes them, so the viewer's first
    look at the run reads them (an import or a dataset export is no run: only its empty row is
    filed). A run already filed under its head is not computed again."""
    cache = ResultCache(log.path)
    for run_id in run_ids:
        if not cache.sealed(run_id):
            continue

        def row_of(con: duckdb.DuckDBPyConnection) -> tuple[RunHead, dict[str, Any] | None] | None:
            head = run_head(con, run_id)
            return None if head is None else (head, _run_rows(log, con, {run_id: head}, cache)[run_id])

        def plotted(con: duckdb.DuckDBPyConnection) -> tuple[RunHead, dict[str, Any]]:
            head = run_head(con, run_id)
            return head, _dashboard_numbers(con, log, head, cache, sealed=True)

        found = read(log, "", row_of, materialize=False, views=False)
        if found is None:
            continue
        head, row = found
        cache.file_beside_log("run", head, {"row": row})
        if row is not None:
            cache.file_beside_log("dashboard", *read(log, "", plotted, views=False))


# ------------------------------------------------------------------------------- dataset

_LATEST_EXPORT_SQL = """
SELECT ts, run_id, seq, hash, payload->>'out_dir' AS out_dir, payload->'manifest' AS manifest, payload->'inputs' AS inputs
FROM events WHERE type = 'dataset.exported' AND list_contains((payload->'inputs'->'sources')::VARCHAR[], $run)
ORDER BY ts DESC, run_id LIMIT 1
"""
# What the viewer shows of one export, for every source it read: computed over a replay of it.
_EXPORT_NUMBERS_SQL = {
    # by decisive reason, as the export's manifest counts them (its excluded_reason_counts)
    "excluded": """
        SELECT source_id, main_reason AS reason, count(*) AS episodes FROM excluded_episodes
        GROUP BY ALL ORDER BY source_id, episodes DESC, reason""",
    "group_sizes": """
        SELECT members, count(*) AS groups FROM (SELECT component_id, count(*) AS members FROM split_components GROUP BY ALL)
        GROUP BY ALL ORDER BY members""",
    "fates": """
        SELECT r.source_id, r.episode_id, r.accepted, r.selected, r.case_best_episode_id, x.excluded_because, d.sft_route,
               s.split, s.split_group_id
        FROM rollout_selection r
        LEFT JOIN excluded_episodes x USING (source_id, episode_id)
        LEFT JOIN dataset_rows d USING (episode_id)
        LEFT JOIN dataset_splits s USING (episode_id)
        ORDER BY r.source_id, r.episode_id""",
}


ExportKey = tuple[dict[str, Any], RunHead]


def _latest_export(con: duckdb.DuckDBPyConnection, run_id: str) -> ExportKey | None:
    """The newest export that read the run (its event), with the key its numbers are kept
    under in `con`'s snapshot (`_export_key`)."""
    found = fetch(con, _LATEST_EXPORT_SQL, {"run": run_id}, ("manifest", "inputs"))
    return _export_key(con, found[0]) if found else None


def _export_key(con: duckdb.DuckDBPyConnection, event: dict[str, Any]) -> ExportKey:
    """The export `event` with the key its numbers are kept under: the event and its sources'
    chain heads in `con`'s snapshot name exactly what a replay of that snapshot reads (a
    source that grows gives a new key)."""
    sources = [run_head(con, source) for source in event["inputs"]["sources"]]
    material = "\x1f".join([event["hash"], *(f"{h.run_id}:{h.last_seq}:{h.head}" for h in sources if h is not None)])
    return event, RunHead(event["run_id"], event["seq"], hashlib.sha256(material.encode()).hexdigest())


def _export_numbers(log: EventLog, run_id: str, cache: ResultCache | None, found: ExportKey | None = None) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """The newest export that read the run (`found`, when the caller read it in its snapshot)
    and what the viewer shows of it. Replaying an export rebuilds its views (seconds on the
    bundled release, minutes at 100k episodes), so the numbers are kept under its key."""
    cache = cache or ResultCache(log.path)
    if found is None:
        found = read(log, "", lambda con: _latest_export(con, run_id), materialize=False, views=False)
    if found is None:
        return None
    event, head = found
    numbers = cache.get(DATASET_EXPORT, head)
    if numbers is None:
        numbers = read(log, "", lambda con: _replayed(con, log, event, cache), materialize=False, views=False)
    return event, numbers


def _replayed(con: duckdb.DuckDBPyConnection, log: EventLog, event: dict[str, Any], cache: ResultCache) -> dict[str, Any]:
    """The numbers of the export `event` replayed in `con`'s snapshot, kept under the key of
    that snapshot (a source may have grown since the caller read its key)."""
    head = _export_key(con, event)[1]
    numbers = cache.get(DATASET_EXPORT, head)
    if numbers is not None:
        return numbers
    open_export(log, ExportSettings.from_dict(event["inputs"]), con)
    found_rows = {name: fetch(con, sql) for name, sql in _EXPORT_NUMBERS_SQL.items()}
    by_source: dict[str, Any] = {"excluded": {}, "fates": {}}
    for kind, grouped in by_source.items():
        for row in found_rows[kind]:
            grouped.setdefault(row.pop("source_id"), []).append(row)
    changed = changed_since(con, event["manifest"] or {}, event["inputs"])
    return cache.put(DATASET_EXPORT, head, {**by_source, "group_sizes": found_rows["group_sizes"], "changed_since": changed})


def latest_dataset_export(
    log: EventLog, run_id: str, cache: ResultCache | None = None, found: ExportKey | None = None
) -> dict[str, Any] | None:
    """The newest dataset export that read the run (`found`: as `_latest_export` read it),
    replayed: its manifest's counts, the run's excluded episodes by decisive reason, and its
    split group sizes."""
    found = _export_numbers(log, run_id, cache, found)
    if found is None:
        return None
    event, numbers = found
    return {
        "ts": event["ts"],
        "out_dir": event["out_dir"],
        "manifest": event["manifest"],
        "accepted": sum(bool(fate["accepted"]) for fate in numbers["fates"].get(run_id, [])),
        "excluded": numbers["excluded"].get(run_id, []),
        "group_sizes": numbers["group_sizes"],
        "changed_since": numbers["changed_since"],
    }


def dataset_fates(log: EventLog, run_id: str, cache: ResultCache | None = None) -> tuple[dict[str, Any] | None, dict[str, dict[str, Any]]]:
    """The newest export that read the run (its folder and whether the log has changed since;
    None without one) and each candidate episode's fate in it (an episode without one was no
    candidate: unfinished, or an action-only release episode)."""
    found = _export_numbers(log, run_id, cache)
    if found is None:
        return None, {}
    event, numbers = found
    export = {"out_dir": event["out_dir"], "changed_since": numbers["changed_since"]}
    return export, {r["episode_id"]: {**r, **export} for r in numbers["fates"].get(run_id, [])}


# ------------------------------------------------------------------------------ episodes

@dataclass
class EpisodePage:
    rows: list[dict[str, Any]]
    total: int
    page: int
    page_size: int


def episode_list(
    log: EventLog, run_id: str, *, predicate: str = "", search: str = "", sort: str = "episode_id",
    descending: bool = False, page: int = 1, page_size: int = 50, cache: ResultCache | None = None,
) -> EpisodePage:
    """One page of the run's episodes: filtered by a read-only SQL predicate over
    EPISODE_LIST_SQL's columns and by text in its model messages and tool results (an
    imported run's: IMPORTED_EPISODE_LIST_SQL's, and its trace files). The run's
    table is computed once per state of the run (its chain head) and kept in memory: sorting
    and paging query that table, the predicate's own views and the search the snapshot."""
    if sort not in EPISODE_LIST_COLUMNS:
        raise EvisceneError(f"cannot sort by {sort!r}; one of: {', '.join(EPISODE_LIST_COLUMNS)}")
    params: dict[str, Any] = {"run": run_id}
    if predicate.strip():
        predicate = validate_predicate(predicate)
    if search.strip():
        # Payloads and traces are stored as JSON: match the text as it is written there, then as a
        # literal (an imported trace may escape what is not ASCII, as Python's json writes it).
        params["search"] = _like_pattern(json.dumps(search.strip(), ensure_ascii=False)[1:-1])
    page = max(1, page)
    order = f'"{sort}" {"DESC" if descending else "ASC"} NULLS LAST, episode_id'
    cache = cache or ResultCache(log.path)

    def reader(con: duckdb.DuckDBPyConnection) -> EpisodePage:
        head = run_head(con, run_id)
        imported = is_imported_run(con, run_id)
        listed, searched = (IMPORTED_EPISODE_LIST_SQL, _SEARCHED_IMPORTED_EPISODES_SQL) if imported else (EPISODE_LIST_SQL, _SEARCHED_EPISODES_SQL)
        if imported and search.strip():
            params["escaped"] = _escaped_pattern(search.strip())
        where = ["run_id = $run", *([f"({predicate})"] if predicate.strip() else []), *([f"episode_id IN ({searched})"] if search.strip() else [])]
        filtered = f"SELECT * FROM episode_list AS episodes WHERE {' AND '.join(where)}"
        reads = f"{searched if search.strip() else ''} {predicate}"  # what the filter reads besides the list
        table = None if head is None else cache.get("episode-list", head)
        if table is None:
            log.add_views(con, materialize=True, for_query=f"{listed} {reads}")
            table = con.sql(listed, params={"run": run_id}).to_arrow_table()
            if head is not None:
                cache.remember("episode-list", head, table, runs=RUNS_KEPT)
        else:
            log.add_views(con, materialize=True, for_query=reads)
        con.register("episode_list", table)
        with filter_time_limit(con) if predicate.strip() else nullcontext():
            total = con.execute(f"SELECT count(*) FROM ({filtered})", params).fetchall()[0][0]
            found = fetch(con, f"{filtered} ORDER BY {order} LIMIT {int(page_size)} OFFSET {(page - 1) * int(page_size)}", params)
        return EpisodePage(found, total, page, page_size)

    return read(log, "", reader, views=False)


def _escaped_pattern(text: str) -> str:
    """A regular expression (RE2) for `text` as Python's json writes it into a file (what is
    not ASCII as \\uXXXX), each letter in either case: ILIKE would fold the escape's hex
    digits, not the letter it stands for (É is \\u00c9, é \\u00e9)."""
    def literal(escaped: str) -> str:
        return "".join(c if c.isascii() and c.isalnum() else f"\\x{{{ord(c):x}}}" for c in escaped)

    letters = []
    for char in text:
        forms = sorted({json.dumps(form)[1:-1] for form in (char, char.lower(), char.upper()) if len(form) == 1})
        letters.append("(?:" + "|".join(literal(form) for form in forms) + ")")
    return "(?i)" + "".join(letters)


def _like_pattern(text: str) -> str:
    """`text` anywhere, as a LIKE pattern escaped with a backslash."""
    return "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


# ------------------------------------------------------------------------------- episode

_EPISODE_SQL = {
    "episodes": """
        SELECT e.*, m.gold_label, m.result_correct, m.evidence_recovery_recall, m.fact_recovery_recall,
               m.chain_recovery_recall, m.basis_reference_precision
        FROM episodes e LEFT JOIN episode_metrics m USING (run_id, episode_id)
        WHERE e.run_id = $run AND (e.episode_id = $episode OR $episode IS NULL) ORDER BY e.episode_id""",
    "events": """
        SELECT episode_id, attempt, step, type, ts, payload FROM steps
        WHERE run_id = $run AND (episode_id = $episode OR $episode IS NULL) ORDER BY episode_id, seq""",
    "evidence": """
        SELECT episode_id, evidence_id, url, source_family, published, visited FROM episode_evidence
        WHERE run_id = $run AND (episode_id = $episode OR $episode IS NULL) ORDER BY episode_id, evidence_id""",
    "failures": """
        SELECT episode_id, code, severity, detail FROM trace_audit_failures
        WHERE run_id = $run AND (episode_id = $episode OR $episode IS NULL) ORDER BY episode_id, code, detail""",
    "audit": """
        SELECT episode_id, hard_trace_audit_pass, strict_trace_audit_pass FROM trace_audit
        WHERE run_id = $run AND (episode_id = $episode OR $episode IS NULL)""",
    "scores": """
        SELECT s.episode_id, s.components, s.total, s.training_exclusion_reasons, w.weights
        FROM trajectory_scores s
        LEFT JOIN (SELECT protocol_version, map(list(component), list(weight)) AS weights FROM reward_weights GROUP BY ALL) w
          USING (protocol_version)
        WHERE s.run_id = $run AND (s.episode_id = $episode OR $episode IS NULL)""",
    "eligibility": """
        SELECT episode_id, sft_training_eligible, rl_reward_eligible, exclusion_reasons FROM sft_eligibility
        WHERE run_id = $run AND (episode_id = $episode OR $episode IS NULL)""",
    "group": """
        SELECT r.episode_id, r.prompt_group_id, e.rollout_index, e.verdict, e.confidence, e.termination, r.classification_correct,
               r.reward, r.reward_mean, r.reward_std, r.grpo_advantage, r.rloo_advantage, r.is_std_zero, e.total_tool_calls
        FROM post_rollout_rewards r JOIN episodes e USING (run_id, episode_id)
        WHERE r.run_id = $run AND ($episode IS NULL OR r.prompt_group_id =
              (SELECT prompt_group_id FROM episodes WHERE run_id = $run AND episode_id = $episode))
        ORDER BY r.prompt_group_id, e.rollout_index""",
}


def _by_episode(found: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    grouped: dict[str, list[dict[str, Any]]] = {}
    for row in found:
        grouped.setdefault(row["episode_id"], []).append(row)
    return grouped


def episode_stories(
    log: EventLog, run_id: str, episode_id: str | None = None, cache: ResultCache | None = None
) -> list[dict[str, Any]]:
    """Everything the Episode page shows, for one episode or (None) every episode of the
    run, read in bulk: the episode row, its events, evidence, audit, scores, eligibility,
    its rollout group and its dataset fate."""
    params = {"run": run_id, "episode": episode_id}

    def reader(con: duckdb.DuckDBPyConnection) -> dict[str, list[dict[str, Any]]] | list[EpisodeStory]:
        if is_imported_run(con, run_id):
            return _imported_stories(con, log, run_id, episode_id, cache or ResultCache(log.path))
        if episode_id is None:
            narrow_to_runs(con, (run_id,))
        else:
            narrow_to_group(con, run_id, episode_id)
        log.add_views(con, materialize=True, for_query=" ".join(_EPISODE_SQL.values()))
        return {
            name: fetch(con, sql, params, ("verdict_basis", "token_usage", "payload"))
            for name, sql in _EPISODE_SQL.items()
        }

    data = read(log, "", reader, views=False)
    if episode_id is not None and not (data if isinstance(data, list) else data["episodes"]):
        raise EvisceneError(f"no episode {episode_id!r} in run {run_id}")
    if isinstance(data, list):
        return _imported_episode_stories(log, run_id, data, cache)
    events, evidence, failures = _by_episode(data["events"]), _by_episode(data["evidence"]), _by_episode(data["failures"])
    audit = {r["episode_id"]: r for r in data["audit"]}
    scores = {r["episode_id"]: r for r in data["scores"]}
    eligibility = {r["episode_id"]: r for r in data["eligibility"]}
    groups: dict[str, list[dict[str, Any]]] = {}
    for member in data["group"]:
        groups.setdefault(member["prompt_group_id"], []).append(member)
    export, fates = dataset_fates(log, run_id, cache)
    return [
        {
            "run_id": run_id,
            "episode": episode,
            "events": events.get(episode["episode_id"], []),
            "evidence": evidence.get(episode["episode_id"], []),
            "failures": failures.get(episode["episode_id"], []),
            "audit": audit.get(episode["episode_id"]),
            "score": scores.get(episode["episode_id"]),
            "eligibility": eligibility.get(episode["episode_id"]),
            "group": groups.get(episode["prompt_group_id"], []),
            # an export that read the run without this episode among its candidates: not a candidate
            "dataset": fates.get(episode["episode_id"]) or (export and {**export, "not_a_candidate": True}),
        }
        for episode in data["episodes"]
    ]


def _imported_stories(
    con: duckdb.DuckDBPyConnection, log: EventLog, run_id: str, episode_id: str | None, cache: ResultCache
) -> list[EpisodeStory]:
    """An imported run's stories (`why.imported_stories`), picked from all of the run's, kept
    in memory under its head: each story reads the run's JSONL rows whole (~1 s at 20k
    episodes), and one who browses its episode pages reads many."""
    head = run_head(con, run_id)
    kept = cache.get("imported-stories", head) if head is not None else None
    if kept is None:
        narrow_to_runs(con, (run_id,))
        log.add_views(con, materialize=False, for_query=f"{IMPORTED_FROM_SQL} {IMPORTED_STORIES_READ}")
        kept = {"from": fetch(con, IMPORTED_FROM_SQL, {"run": run_id})[0], "rows": imported_story_rows(con, run_id)}
        if head is not None:
            cache.remember("imported-stories", head, kept, runs=RUNS_KEPT)
    table = kept["rows"] if episode_id is None else kept["rows"].filter(pc.field("episode_id") == episode_id)
    return stories_of(table, kept["from"])


def _imported_episode_stories(
    log: EventLog, run_id: str, found: list[EpisodeStory], cache: ResultCache | None
) -> list[dict[str, Any]]:
    """The Episode page of an imported run's episodes: what `eviscene why` shows of them (the
    rows their directory recorded), no events, evidence or rollout group in the log."""
    export, fates = dataset_fates(log, run_id, cache)
    return [
        {
            "run_id": run_id,
            "episode": story.episode,
            "events": [],
            "evidence": [],
            "failures": story.failures,
            "audit": story.audit,
            "score": story.score and {**story.score, "weights": None},
            "eligibility": story.eligibility,
            "group": [],
            "dataset": fates.get(story.episode["episode_id"]) or (export and {**export, "not_a_candidate": True}),
            "imported_from": story.imported_from,
        }
        for story in found
    ]


# ------------------------------------------------------------------------------- compare

_COMPARE_SQL = {
    "labels": """
        SELECT a.label, a.precision AS precision_a, b.precision AS precision_b, a.recall AS recall_a, b.recall AS recall_b,
               a.f1 AS f1_a, b.f1 AS f1_b
        FROM classification_metrics a JOIN classification_metrics b ON a.label = b.label AND b.run_id = $b
        WHERE a.run_id = $a ORDER BY a.label""",
    "tools": """
        SELECT tool, count(*) FILTER (WHERE run_id = $a) AS calls_a, count(*) FILTER (WHERE run_id = $b) AS calls_b,
               count(DISTINCT (run_id, episode_id)) FILTER (WHERE run_id = $a) AS episodes_a,
               count(DISTINCT (run_id, episode_id)) FILTER (WHERE run_id = $b) AS episodes_b
        FROM tool_calls WHERE run_id IN ($a, $b) GROUP BY ALL ORDER BY tool""",
    "finished": """
        SELECT count(*) FILTER (WHERE run_id = $a AND finished) AS finished_a, count(*) FILTER (WHERE run_id = $b AND finished) AS finished_b,
               count(DISTINCT case_id) FILTER (WHERE run_id = $a) AS cases_a, count(DISTINCT case_id) FILTER (WHERE run_id = $b) AS cases_b
        FROM episodes WHERE run_id IN ($a, $b)""",
}


def compare(log: EventLog, run_a: str, run_b: str) -> dict[str, Any]:
    from eviscene.analysis.compare import compare_runs

    result = compare_runs(log, run_a, run_b)
    params = {"a": run_a, "b": run_b}
    data = read(log, " ".join(_COMPARE_SQL.values()), lambda con: {n: fetch(con, s, params) for n, s in _COMPARE_SQL.items()})
    finished = data["finished"][0]
    for tool in data["tools"]:  # none for a run without finished episodes in `episodes` (an imported one): unknown, not 0
        tool["per_episode_a"] = tool["calls_a"] / finished["finished_a"] if finished["finished_a"] else None
        tool["per_episode_b"] = tool["calls_b"] / finished["finished_b"] if finished["finished_b"] else None
    return {"result": result, "labels": data["labels"], "tools": data["tools"], "cases": {"a": finished["cases_a"], "b": finished["cases_b"]},
            "flipped": [c for c in result.cases if c["correct_a"] != c["correct_b"]]}
