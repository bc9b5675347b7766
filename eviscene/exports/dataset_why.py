"""Why an episode is (not) in a dataset: the dataset views' decision about it, replayed
from the `dataset.exported` event of the export that read it."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from eviscene.exports.dataset_files import SUMMARY_COUNTS
from eviscene.exports.dataset_views import ExportSettings, open_export, source_heads
from eviscene.exports.serialize import rows
from eviscene.log import EventLog


@dataclass
class DatasetDecision:
    episode_id: str
    out_dir: str | None  # the export replayed (None when settings were given)
    status: str  # accepted | excluded | not_a_candidate
    case_id: str | None = None
    selected: bool = False
    eligible_before_selection: bool = False
    training_exclusion_reasons: list[str] = field(default_factory=list)
    excluded_because: str | None = None
    case_best_episode_id: str | None = None
    case_eligible_rollouts: int = 0
    one_rollout_per_case: bool = False  # frozen mode or --one-rollout-per-case, else every eligible rollout
    allow_training_prohibited: bool = False  # the export took training-prohibited sources too
    split: str | None = None
    split_group_id: str | None = None
    sft_route: str | None = None
    group_episode_ids: list[str] = field(default_factory=list)
    group_case_ids: list[str] = field(default_factory=list)
    # Each family this episode shares with other accepted episodes of its group.
    joining_families: list[dict[str, Any]] = field(default_factory=list)
    # Set when the replay counts otherwise than the export recorded, or a source it read has
    # another chain head: the log has changed since (a shard merged, a run resumed, an error
    # retried), and this is the decision now, not the one its files hold.
    changed_since: str | None = None


def _sources_of(log: EventLog, episode_id: str) -> set[str]:
    return set(log.sql(
        "SELECT run_id AS source FROM episodes WHERE episode_id = ? "
        "UNION SELECT import_id FROM imported_files WHERE kind = 'trace' AND episode_id = ?",
        [episode_id, episode_id],
    )["source"].to_pylist())


@dataclass(frozen=True)
class _Export:
    out_dir: str
    settings: ExportSettings
    manifest: dict[str, Any]
    inputs: dict[str, Any]  # its settings and the heads of the sources it read


def latest_export_for(log: EventLog, episode_id: str, source_id: str | None = None) -> _Export | None:
    """The newest dataset export that read this episode's source: `source_id` (a run or an
    import) where given, else any source holding that episode id."""
    sources = {source_id} if source_id else _sources_of(log, episode_id)
    for row in log.sql(
        "SELECT payload->>'out_dir' AS out_dir, (payload->'inputs')::VARCHAR AS inputs, (payload->'manifest')::VARCHAR AS manifest "
        "FROM events WHERE type = 'dataset.exported' ORDER BY ts DESC, run_id"
    ).to_pylist():
        inputs = json.loads(row["inputs"] or "{}")
        if sources & set(inputs.get("sources", [])):
            return _Export(row["out_dir"], ExportSettings.from_dict(inputs), json.loads(row["manifest"] or "{}"), inputs)
    return None


def changed_since(con, manifest: dict[str, Any], inputs: dict[str, Any]) -> str | None:
    """How the log in `con` (an export's replay) differs from what the export read: the first
    of the replay's counts that differs from its manifest, else a source whose chain head is
    not the one the export recorded (a resume retrying an error changes an episode's reasons,
    not a count). An export recorded before heads were is held to its counts alone."""
    now = rows(con.sql("SELECT * FROM dataset_summary").to_arrow_table())[0]
    for key in SUMMARY_COUNTS:
        if key in manifest and manifest[key] != now[key]:
            return f"{key} was {manifest[key]} at the export, {now[key]} on the log as it is now"
    recorded = inputs.get("source_heads") or {}
    heads = source_heads(con, sorted(recorded))
    for run_id, (seq, _) in sorted(recorded.items()):
        if heads.get(run_id) != recorded[run_id]:
            now_seq = heads[run_id][0] if run_id in heads else "none"
            return f"{run_id} has changed since the export (its last event seq {seq} then, {now_seq} now)"
    return None


def explain_dataset_decision(
    log: EventLog, episode_id: str, settings: ExportSettings | None = None, source_id: str | None = None
) -> DatasetDecision | None:
    """The dataset decision about `episode_id` (of `source_id` where given: episode ids repeat
    across runs of one release) under `settings` (default: the newest export that read it);
    None when no export read it."""
    export = None
    if settings is None:
        export = latest_export_for(log, episode_id, source_id)
        if export is None:
            return None
        settings = export.settings
    out_dir = export.out_dir if export else None
    con = open_export(log, settings)
    try:
        # settings given: no export to hold the replay to
        changed = changed_since(con, export.manifest, export.inputs) if export else None
        found_rows = rows(con.sql(
            "SELECT r.*, x.excluded_because, d.sft_route FROM rollout_selection r "
            "LEFT JOIN excluded_episodes x USING (source_id, episode_id) LEFT JOIN dataset_rows d USING (episode_id) "
            "WHERE r.episode_id = $e AND r.source_id = coalesce($s, r.source_id)",
            params={"e": episode_id, "s": source_id},
        ).to_arrow_table())
        if not found_rows:
            return DatasetDecision(episode_id, out_dir, "not_a_candidate", changed_since=changed)
        row = found_rows[0]
        decision = DatasetDecision(
            episode_id=episode_id,
            out_dir=out_dir,
            status="accepted" if row["accepted"] else "excluded",
            case_id=row["case_id"],
            selected=row["selected"],
            eligible_before_selection=row["eligible_before_selection"],
            training_exclusion_reasons=row["training_exclusion_reasons"],
            excluded_because=row["excluded_because"],
            case_best_episode_id=row["case_best_episode_id"],
            case_eligible_rollouts=row["case_eligible_rollouts"],
            one_rollout_per_case=settings.frozen or settings.one_rollout_per_case,
            allow_training_prohibited=settings.allow_training_prohibited,
            sft_route=row["sft_route"],
            changed_since=changed,
        )
        group = rows(con.sql(
            "SELECT s.split, s.split_group_id, list(m.episode_id ORDER BY m.episode_id) AS episodes, "
            "list(DISTINCT m.case_id ORDER BY m.case_id) AS cases "
            "FROM dataset_splits s JOIN split_components m USING (component_id) WHERE s.episode_id = ? GROUP BY ALL",
            params=[episode_id],
        ).to_arrow_table())
        if group:
            g = group[0]
            decision.split, decision.split_group_id = g["split"], g["split_group_id"]
            decision.group_episode_ids, decision.group_case_ids = g["episodes"], g["cases"]
            decision.joining_families = rows(con.sql(
                """
                WITH mine AS (SELECT unnest(source_family_keys) AS family FROM split_components WHERE episode_id = $e),
                others AS (
                    SELECT unnest(source_family_keys) AS family, episode_id FROM split_components
                    WHERE component_id = (SELECT component_id FROM split_components WHERE episode_id = $e) AND episode_id <> $e
                )
                SELECT family, list(episode_id ORDER BY episode_id) AS shared_with
                FROM mine JOIN others USING (family) GROUP BY family ORDER BY family
                """,
                params={"e": episode_id},
            ).to_arrow_table())
        return decision
    finally:
        con.close()


def describe(decision: DatasetDecision) -> list[str]:
    """The decision as lines for `eviscene why`."""
    where = f" (export {decision.out_dir})" if decision.out_dir else ""
    changed = [(f"  the log has changed since that export ({decision.changed_since}): this is the decision now, "
                "not the one its files hold")] if decision.changed_since else []
    if decision.status == "not_a_candidate":
        return [f"dataset{where}: not a candidate (unfinished, or an action-only release episode)", *changed]
    lines = [f"dataset{where}: {decision.status.upper()}", *changed]
    if decision.status == "excluded":
        lines.append(f"  because {decision.excluded_because}")
        for reason in decision.training_exclusion_reasons:
            lines.append(f"  - {reason}")
        return lines
    kept = "best" if decision.one_rollout_per_case else "one"
    lines.append(
        f"  {kept} of {decision.case_eligible_rollouts} eligible rollout(s) of case {decision.case_id}; "
        f"split {decision.split} ({decision.sft_route}), group {decision.split_group_id}"
    )
    if decision.allow_training_prohibited:  # else an episode `why` calls not SFT eligible (training_prohibited) reads as accepted by mistake
        lines.append("  the export ran with --allow-training-prohibited (it takes the episodes of training-prohibited sources too)")
    if len(decision.group_episode_ids) > 1:
        lines.append(
            f"  group of {len(decision.group_episode_ids)} episodes of case(s) {', '.join(decision.group_case_ids)} "
            "(rollouts of a case stay together; cases join through shared content families)"
        )
        for item in decision.joining_families:
            lines.append(f"    {item['family']}  shared with {', '.join(item['shared_with'])}")
    return lines
