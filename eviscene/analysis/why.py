"""`eviscene why EPISODE`: the timeline of an episode and every decision about its fate,
read from the views (nothing is re-derived here)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any

import duckdb
import pyarrow as pa

from eviscene.errors import EvisceneError, no_run_error
from eviscene.exports.dataset_why import DatasetDecision, explain_dataset_decision
from eviscene.exports.serialize import rows
from eviscene.log import EventLog
from eviscene.views import narrow_to_group, remove_functions


@dataclass
class EpisodeStory:
    run_id: str
    episode: dict[str, Any]
    timeline: list[dict[str, Any]]
    audit: dict[str, Any] | None
    failures: list[dict[str, Any]]
    score: dict[str, Any] | None
    metrics: dict[str, Any] | None
    eligibility: dict[str, Any] | None
    group: list[dict[str, Any]] = field(default_factory=list)
    dataset: DatasetDecision | None = None  # the newest dataset export that read the episode
    imported_from: dict[str, Any] | None = None  # an imported run directory: its path and own run_id
    # The id is also a case's: its first episodes in other runs ({run_id, episode_id}), and
    # whether it has more than those.
    case_episodes_elsewhere: list[dict[str, str]] = field(default_factory=list)
    more_case_episodes_elsewhere: bool = False


def _one(con: duckdb.DuckDBPyConnection, sql: str, params: list[Any] | dict[str, Any], json_columns: tuple[str, ...] = ()) -> dict[str, Any] | None:
    found = _all(con, sql, params, json_columns)
    return found[0] if found else None


def _all(con: duckdb.DuckDBPyConnection, sql: str, params: list[Any] | dict[str, Any], json_columns: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    return rows(con.sql(sql, params=params).to_arrow_table(), json_columns)


def _cut(text: str, length: int) -> str:
    """`text`, or its first `length` characters and `…`: a cut value never reads as whole."""
    return text if len(text) <= length else text[:length] + "…"


def _summary(kind: str, payload: dict[str, Any]) -> str:
    if kind == "perception.reported":
        return "read: " + _cut(" / ".join(payload.get("ocr_text", "").splitlines()), 160)
    if kind == "model.called":
        calls = ", ".join(c["name"] for c in payload.get("tool_calls", []))
        text = payload.get("reasoning") or payload.get("content") or ""
        return f"[{payload['stage']}] {_cut(text, 120)}" + (f" -> {calls}" if calls else "")
    if kind == "tool.called":
        return f"{payload['tool']}({_cut(json.dumps(payload['arguments'], ensure_ascii=False), 120)})"
    if kind == "tool.returned":
        ids = ", ".join(s["evidence_id"] for s in payload.get("sources", []))
        return f"{payload['tool']}: {payload['status']}" + (f" [{ids}]" if ids else "") + (f" {payload['error']}" if payload.get("error") else "")
    if kind == "gate.decided":
        verdict = "passed" if payload["passed"] else "BLOCKED"
        return f"{payload['gate']} {verdict} {payload['subject']}" + (f" ({', '.join(payload['reasons'])})" if payload["reasons"] else "")
    if kind == "judgment.made":
        cites = ", ".join(b["evidence_id"] for b in payload.get("verdict_basis", []))
        return f"{payload['verdict']} at confidence {payload['confidence']}" + (f", citing {cites}" if cites else "")
    if kind == "episode.finished":
        return f"{payload['termination']} after {payload['time_taken']} s" + (f": {payload['error']}" if payload.get("error") else "")
    if kind == "episode.started":
        return f"attempt {payload['attempt']}"
    return ""


# The runs that scheduled the episode (the events `episodes` reads) and the imported runs
# that hold it.
_NATIVE_RUNS_OF_EPISODE = (
    "SELECT DISTINCT run_id FROM events WHERE type = 'episode.scheduled' AND episode_id = $episode AND ($run IS NULL OR run_id = $run)"
)
# A case's episodes (the id asked for may be a case id), other than those of the run shown.
_NATIVE_EPISODES_OF_CASE = (
    "SELECT run_id, episode_id FROM events WHERE type = 'episode.scheduled' AND payload->>'case_id' = $episode "
    "AND ($run IS NULL OR run_id = $run) AND run_id IS DISTINCT FROM $shown ORDER BY run_id, episode_id LIMIT 7"
)
_LISTED = 6  # a case's episodes named in the error (one more is fetched to know there are more)
_IMPORTED_RUNS_OF_EPISODE = "SELECT DISTINCT run_id FROM imported_episodes WHERE episode_id = $episode AND ($run IS NULL OR run_id = $run)"
IMPORTED_FROM_SQL = "SELECT path, source_run_id FROM imported_runs WHERE run_id = $run"
_EPISODE_SQL = {
    "episode": "SELECT * FROM episodes WHERE run_id = ? AND episode_id = ?",
    "timeline": "SELECT step, attempt, type, payload FROM events WHERE run_id = ? AND episode_id = ? AND step IS NOT NULL ORDER BY seq",
    "audit": "SELECT * FROM trace_audit WHERE run_id = ? AND episode_id = ?",
    "failures": "SELECT code, severity, detail FROM trace_audit_failures WHERE run_id = ? AND episode_id = ? ORDER BY code, detail",
    "score": "SELECT components, total, training_eligible, training_exclusion_reasons FROM trajectory_scores WHERE run_id = ? AND episode_id = ?",
    "metrics": "SELECT result_correct, gold_label, evidence_recovery_recall, fact_recovery_recall, chain_recovery_recall, "
               "basis_reference_precision FROM episode_metrics WHERE run_id = ? AND episode_id = ?",
    "eligibility": "SELECT * EXCLUDE (run_id, episode_id, case_id, prompt_group_id) FROM sft_eligibility WHERE run_id = ? AND episode_id = ?",
    "group": "SELECT episode_id, reward, reward_mean, reward_std, grpo_advantage, rloo_advantage, is_std_zero FROM post_rollout_rewards "
             "WHERE run_id = ? AND prompt_group_id = (SELECT prompt_group_id FROM episodes WHERE run_id = ? AND episode_id = ?) "
             "ORDER BY episode_id",
}


def explain_episode(log: EventLog, episode_id: str, run_id: str | None = None) -> EpisodeStory:
    # One snapshot. A native episode's views are computed once each (the per-episode views
    # stacked on one another cost seconds to bind on every separate query), over its rollout
    # group's events only (the whole log's would take minutes at 100k episodes).
    return log.read(lambda con: _episode_story(log, con, episode_id, run_id), views=False)


def _episode_story(log: EventLog, con: duckdb.DuckDBPyConnection, episode_id: str, run_id: str | None) -> EpisodeStory:
    params = {"episode": episode_id, "run": run_id}
    native = {r[0] for r in con.execute(_NATIVE_RUNS_OF_EPISODE, params).fetchall()}
    log.add_views(con, materialize=False, for_query=f"{_IMPORTED_RUNS_OF_EPISODE} {IMPORTED_FROM_SQL}")
    candidates = sorted(native | {r[0] for r in con.execute(_IMPORTED_RUNS_OF_EPISODE, params).fetchall()})
    if not candidates:
        if run_id is not None and not con.execute("SELECT 1 FROM events WHERE run_id = ? LIMIT 1", [run_id]).fetchall():
            raise no_run_error(run_id, log.path, [r[0] for r in con.execute("SELECT DISTINCT run_id FROM events").fetchall()])
        missing = f"no episode {episode_id!r}" + (f" in run {run_id}" if run_id else "") + f" in {log.path}"
        # A case id is the natural guess: an episode id adds the prompt group, which derives from the code's commit.
        of_case, more = _episodes_of_case(con, params, shown=None)
        raise EvisceneError(missing + (f"; case {episode_id}'s episodes: {episodes_line(of_case, more)}" if of_case else ""))
    if len(candidates) > 1:
        raise EvisceneError(f"episode {episode_id!r} is in several runs ({', '.join(candidates)}); name one with --run")
    run = candidates[0]
    keys = [run, episode_id]
    # A 1-rollout run's episode id is its case id: the case's rollouts in other runs are what
    # `why CASE` may have meant.
    elsewhere, more = _episodes_of_case(con, params, shown=run) if run_id is None else ([], False)
    imported_from = _one(con, IMPORTED_FROM_SQL, {"run": run})
    if imported_from is not None:
        story = imported_stories(con, run, imported_from, episode_id)[0]
        return replace(story, dataset=explain_dataset_decision(log, episode_id, source_id=run),
                       case_episodes_elsewhere=elsewhere, more_case_episodes_elsewhere=more)
    narrow_to_group(con, run, episode_id)
    remove_functions(con)  # the views below register the rules' functions they name again
    log.add_views(con, materialize=True, for_query=" ".join(_EPISODE_SQL.values()))
    timeline = [
        {"step": r["step"], "attempt": r["attempt"], "type": r["type"], "summary": _summary(r["type"], r["payload"])}
        for r in _all(con, _EPISODE_SQL["timeline"], keys, ("payload",))
    ]
    return EpisodeStory(
        run_id=run,
        episode=_one(con, _EPISODE_SQL["episode"], keys, ("verdict_basis", "token_usage")),
        timeline=timeline,
        audit=_one(con, _EPISODE_SQL["audit"], keys),
        failures=_all(con, _EPISODE_SQL["failures"], keys),
        score=_one(con, _EPISODE_SQL["score"], keys),
        metrics=_one(con, _EPISODE_SQL["metrics"], keys),
        eligibility=_one(con, _EPISODE_SQL["eligibility"], keys),
        group=_all(con, _EPISODE_SQL["group"], [run, *keys]),
        dataset=explain_dataset_decision(log, episode_id, source_id=run),
        case_episodes_elsewhere=elsewhere,
        more_case_episodes_elsewhere=more,
    )


def _episodes_of_case(con: duckdb.DuckDBPyConnection, params: dict[str, Any], *, shown: str | None) -> tuple[list[dict[str, str]], bool]:
    """The first episodes of case `$episode` outside run `shown`, and whether there are more."""
    found = [{"run_id": r[0], "episode_id": r[1]} for r in con.execute(_NATIVE_EPISODES_OF_CASE, {**params, "shown": shown}).fetchall()]
    return found[:_LISTED], len(found) > _LISTED


def episodes_line(episodes: list[dict[str, str]], more: bool) -> str:
    """`a--r000 (run demo), a--r001 (run demo), …`: episodes as a line names them."""
    return ", ".join(f"{e['episode_id']} (run {e['run_id']})" for e in episodes) + (", …" if more else "")


# An imported run directory's episodes (all of a run, or one) as the directory recorded them:
# each run_results.jsonl row with the audit of its process_metrics.jsonl row (and that row's
# failures) and its trajectory_scores.jsonl score and training eligibility.
_IMPORTED_EPISODES_SQL = """
SELECT e.* EXCLUDE (trajectory_score, scored_correct, reward, strict_trace_audit_failures),
       e.strict_trace_audit_failures AS audit_failures,
       e.trajectory_score IS NOT NULL AS scored,
       e.trajectory_score->'components' AS score_components,
       e.reward AS score_total,
       e.trajectory_score->'training_eligible' AS training_eligible,
       e.trajectory_score->'training_exclusion_reasons' AS exclusion_reasons
FROM imported_episodes e
WHERE e.run_id = $run AND ($episode IS NULL OR e.episode_id = $episode)
ORDER BY e.episode_id
"""
IMPORTED_STORIES_READ = _IMPORTED_EPISODES_SQL  # the views imported_stories reads: its caller binds them
_IMPORTED_JSON_COLUMNS = ("verdict_basis", "token_usage", "audit_failures", "score_components", "training_eligible", "exclusion_reasons")


def imported_stories(
    con: duckdb.DuckDBPyConnection, run_id: str, imported_from: dict[str, Any], episode_id: str | None = None
) -> list[EpisodeStory]:
    """An imported run's episodes (or one) as its directory recorded them, in one query: no
    timeline (it holds no events), no RL eligibility (the rows it is read from have none) and
    no dataset decision (the caller's: it reads an export)."""
    return stories_of(imported_story_rows(con, run_id, episode_id), imported_from)


def imported_story_rows(con: duckdb.DuckDBPyConnection, run_id: str, episode_id: str | None = None) -> pa.Table:
    """What `imported_stories` reads, as a table (a page keeps a run's, and picks episodes from it)."""
    return con.sql(_IMPORTED_EPISODES_SQL, params={"run": run_id, "episode": episode_id}).to_arrow_table()


def stories_of(table: pa.Table, imported_from: dict[str, Any]) -> list[EpisodeStory]:
    return [_imported_story(row, imported_from) for row in rows(table, _IMPORTED_JSON_COLUMNS)]


_RECALLS = ("evidence_recovery_recall", "fact_recovery_recall", "chain_recovery_recall", "basis_reference_precision")


def _imported_metrics(row: dict[str, Any]) -> dict[str, Any] | None:
    """The reference-chain metrics its process_metrics.jsonl row recorded (no gold in the log)."""
    if all(row[name] is None for name in _RECALLS):
        return None
    return {"result_correct": row["result_correct"], "gold_label": None, **{name: row[name] for name in _RECALLS}}


def _imported_story(row: dict[str, Any], imported_from: dict[str, Any]) -> EpisodeStory:
    failures, scored = row.pop("audit_failures"), row.pop("scored")
    components, total = row.pop("score_components"), row.pop("score_total")
    eligible, reasons = row.pop("training_eligible"), row.pop("exclusion_reasons")
    audit = {key: row.pop(key) for key in ("hard_trace_audit_pass", "strict_trace_audit_pass")}
    # The directory's files hold whatever they hold: a value of another shape reads as none.
    eligible = eligible if isinstance(eligible, bool) else None
    return EpisodeStory(
        run_id=row["run_id"],
        episode=row,
        timeline=[],
        audit=audit if any(value is not None for value in audit.values()) else None,
        failures=sorted(
            ({"code": f.get("code"), "severity": f.get("severity"), "detail": f.get("detail")}
             for f in (failures if isinstance(failures, list) else []) if isinstance(f, dict)),
            key=lambda f: (str(f["code"]), str(f["detail"])),
        ),
        score={"components": components if isinstance(components, dict) else {}, "total": total} if scored else None,
        metrics=_imported_metrics(row),
        eligibility={"sft_training_eligible": eligible, "rl_reward_eligible": None,
                     "exclusion_reasons": [str(r) for r in reasons] if isinstance(reasons, list) else []}
        if eligible is not None else None,
        imported_from=imported_from,
    )
