"""`eviscene log merge`: fold other logs (shards of one run, or separate runs) into this
log's archive. The source is verified in full first (chains, segments, records): a broken
one, or one with a run still being written, is refused before anything moves (every source
named is checked before the first is taken in). Events
already present (same event_id) are skipped, so merging twice is a no-op; a run present in
both logs with different events is refused, unless both are shards of one sharded run, run
alike (below). The source's segment records come along, so the target's `log verify`
checks the merged runs' ranges too.

Shards (`eval run --shard-count N --shard-index I`, one log each, one run id, the same
`run.started` but for the per-machine keys PER_SHARD lists) fold into one run: the first
shard merged keeps its chain as it is; each further shard's events are renumbered and
re-chained after the run's last event, behind an `artifact.imported` event of kind
`log_shard` that records the shard's chain head (hash and last seq) and, for the
events the run already holds (the same gold and policy imports: same event_id), their seq,
ts and content. From that record `log verify` rebuilds the shard's own chain over the folded
events and checks it ends at the recorded head, so both chains verify in the merged log."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import duckdb
import orjson
import pyarrow as pa

from eviscene.errors import EvisceneError, LogIntegrityError, LogLockedError
from eviscene.events import ArtifactImported
from eviscene.rules.timestamps import now_micros
from eviscene.store.chain import content_digest, derived_event_id, event_hash
from eviscene.store.faults import checkpoint
from eviscene.store.layout import live_root, live_run_ids
from eviscene.store.locks import lock_holder
from eviscene.store.migrate import apply_migrations
from eviscene.store.seal import seal_runs
from eviscene.store.schema import BLOB_COLUMNS, EVENT_COLUMNS, EVENT_SCHEMA
from eviscene.store.snapshot import attach_archive_as, open_snapshot
from eviscene.store.verify import RECORD_COLUMNS, segment_records, verify_log


@dataclass(frozen=True)
class MergeReport:
    source: Path
    events: int
    blobs: int


def merge_logs(target: Path, sources: list[Path]) -> list[MergeReport]:
    """Merge `sources` in turn, each checked first (`check_source`) before any is taken in;
    a source refused while merging (another run's settings, say) names those merged before
    it, which stay merged (merging them again skips them)."""
    for source in sources:
        check_source(target, source)
    reports: list[MergeReport] = []
    for source in sources:
        try:
            reports.append(_merge_one(target, source))
        except EvisceneError as exc:
            if reports:
                exc.args = (f"{exc}; merged before it: {', '.join(str(r.source) for r in reports)}",)
            raise
    return reports


def check_source(target: Path, source: Path) -> None:
    """Refuse a source that is the target, no log, a folder, broken, being written, cut
    short, or that holds an unfinished shard of a sharded run (merged, it would read as
    finished once another shard's run.finished follows it, and a resume of it in its own log
    could never be merged after it)."""
    if source.resolve() == target.resolve():
        raise EvisceneError(f"cannot merge {source} into itself")
    if not source.exists() and not live_root(source).exists():
        raise EvisceneError(f"no log at {source}")
    if source.is_dir():  # it keeps no sealed records, which the merged runs would then lack
        raise EvisceneError(f"{source} is a folder (a `log export-parquet` export); merge the log it was exported from")
    report = verify_log(source)
    if report.problems:
        raise LogIntegrityError(f"{source} not merged: {report.problems[0]}; nothing was taken in")
    if report.running:
        raise LogLockedError(f"{source} not merged: {report.running[0]}; merge it when it ends")
    cut_short = [note for note in report.unfinished if note.unrecorded]
    if cut_short:  # merged now, that batch would be left behind: in no copy of the log
        raise EvisceneError(f"{source} not merged: {cut_short[0]} (on a copy, if {source} is not yours to write); then merge it")
    _refuse_unfinished_shards(source)


def _merge_one(target: Path, source: Path) -> MergeReport:
    """Fold `source`, which `check_source` passed, into `target`'s archive."""
    checkpoint("merge.verified")
    for run_id in live_run_ids(source):  # a resume started there since the check: its batches are in flight
        holder = lock_holder(live_root(source) / run_id / "writer.lock")
        if holder is not None:
            raise LogLockedError(f"{source} not merged: run {run_id} is being written by {holder}; merge it when it ends")
    seal_runs(target)  # this log's finished runs first, so the archive holds all of them
    con = open_snapshot(source)  # the source's events and blobs, sealed and live
    try:
        attach_archive_as(con, target, "merged")
        apply_migrations(con, "merged")
        unsealed = set(live_run_ids(target)) & {row[0] for row in con.execute("SELECT DISTINCT run_id FROM events").fetchall()}
        if unsealed:
            _refuse_unsealed_run(target, min(unsealed))
        _check_no_event_id_of_another_run(con, source, target)
        shared = _runs_in_both(con)  # their records here stand; a fold records its own range
        folds = [run_id for run_id in shared if _unmerged_events(con, run_id)]
        for run_id in folds:
            _check_shards_of_one_run(con, run_id, source)
        con.execute("BEGIN")
        blobs = con.execute(
            f"INSERT INTO merged.blobs SELECT DISTINCT ON (sha256) {BLOB_COLUMNS} FROM blobs "
            "WHERE sha256 NOT IN (SELECT sha256 FROM merged.blobs)"
        ).fetchall()[0][0]
        events = con.execute(
            f"INSERT INTO merged.events SELECT {EVENT_COLUMNS} FROM events "
            "WHERE event_id NOT IN (SELECT event_id FROM merged.events) AND run_id NOT IN (SELECT unnest(?::VARCHAR[])) "
            "ORDER BY run_id, seq",
            [shared],
        ).fetchall()[0][0]
        records = [r for r in segment_records(con, source) if r[0] not in shared]
        if records:
            con.executemany(
                f"INSERT OR IGNORE INTO merged.sealed_segments ({RECORD_COLUMNS}, sealed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, now())",
                [list(r) for r in records],
            )
        for run_id in folds:
            events += _fold_shard(con, run_id, source)
        checkpoint("merge.before_commit")
        con.execute("COMMIT")
        checkpoint("merge.committed")
    except duckdb.ConstraintException as exc:
        raise EvisceneError(f"merging {source} would break the log's uniqueness: {exc}") from None
    finally:
        con.close()
    return MergeReport(source=source, events=events, blobs=blobs)


SHARD_KIND = "log_shard"


# A shard's last invocation and how it ended: killed (no run.finished), stopped by an outage
# (interrupted) or crashed (failed) leaves episodes a resume in its own log finishes.
_SHARD_ENDS_SQL = """
SELECT s.run_id, s.payload->>'$.benchmark.shard_index', s.payload->>'$.benchmark.shard_count',
       (SELECT arg_max(f.payload->>'status', f.seq) FROM events f WHERE f.run_id = s.run_id AND f.type = 'run.finished')
FROM events s
WHERE s.type = 'run.started' AND TRY_CAST(s.payload->>'$.benchmark.shard_count' AS BIGINT) > 1
ORDER BY s.run_id"""


def _refuse_unfinished_shards(source: Path) -> None:
    con = open_snapshot(source)
    try:
        shards = con.execute(_SHARD_ENDS_SQL).fetchall()
    finally:
        con.close()
    for run_id, index, count, status in shards:
        if status not in ("completed", "completed_with_errors"):
            ended = "no run.finished" if status is None else f"its last invocation {status}"
            raise EvisceneError(
                f"{source} not merged: shard {index}/{count} of run {run_id} is unfinished ({ended}); "
                f"`eviscene --db {source} eval resume {run_id}` finishes it, then merge it; nothing was taken in"
            )


def _refuse_unsealed_run(target: Path, run_id: str) -> None:
    """A run the source holds whose events here are still live after the seal before the merge:
    its writer held it. Merged now, its live tail would sit beside the merged copy."""
    holder = lock_holder(live_root(target) / run_id / "writer.lock")
    raise LogLockedError(f"run {run_id} is being written in {target}" + (f" by {holder}" if holder else "") + "; merge it when it ends")


def _check_no_event_id_of_another_run(con: duckdb.DuckDBPyConnection, source: Path, target: Path) -> None:
    """An event id is taken once (same id, same event): one that this log holds under another
    run can only be forged, and taking the rest of that run in without it would leave a gap
    in its chain here, though the source verifies."""
    clash = con.execute(
        "SELECT s.run_id, s.seq, s.event_id, m.run_id, m.seq FROM events s JOIN merged.events m USING (event_id) "
        "WHERE s.run_id <> m.run_id ORDER BY s.run_id, s.seq LIMIT 1"
    ).fetchall()
    if clash:
        run_id, seq, event_id, other_run, other_seq = clash[0]
        raise LogIntegrityError(
            f"{source} not merged: run {run_id}, seq {seq} ({event_id}): {target} holds that event id in run {other_run}, "
            f"seq {other_seq}; nothing was taken in"
        )


def _runs_in_both(con: duckdb.DuckDBPyConnection) -> list[str]:
    return [row[0] for row in con.execute(
        "SELECT DISTINCT run_id FROM events WHERE run_id IN (SELECT run_id FROM merged.events) ORDER BY 1"
    ).fetchall()]


def _unmerged_events(con: duckdb.DuckDBPyConnection, run_id: str) -> int:
    return con.execute(
        "SELECT count(*) FROM events WHERE run_id = ? AND event_id NOT IN (SELECT event_id FROM merged.events)", [run_id]
    ).fetchall()[0][0]


def _check_shards_of_one_run(con: duckdb.DuckDBPyConnection, run_id: str, source: Path) -> None:
    """Fold only another shard of the same sharded run: same release, cases and shard
    count, a shard index the run does not hold yet, scored by the same files, and run alike
    (`_check_same_settings`); anything else is a different run."""
    shape = (
        "SELECT payload->>'$.benchmark.release_id', payload->>'$.benchmark.sha256', "
        "(payload->>'$.benchmark.shard_count')::INTEGER, (payload->>'$.benchmark.shard_index')::INTEGER, "
        "payload::VARCHAR FROM {table} WHERE run_id = ? AND type = 'run.started'"
    )
    theirs = con.execute(shape.format(table="events"), [run_id]).fetchall()
    ours = con.execute(shape.format(table="merged.events"), [run_id]).fetchall()
    refusal = f"run {run_id} exists in both logs with different events"
    indexes = sorted({r[3] for r in theirs})
    if ours and len(indexes) > 1 and all((r[2] or 1) >= 2 for r in theirs):
        # A fold of folds: verify rebuilds one shard's own chain per log_shard record, never a record inside another's.
        shown = ", ".join(map(str, indexes[:-1])) + f" and {indexes[-1]}"
        raise EvisceneError(f"{refusal}: {source} holds shards {shown} of its {theirs[0][2]}, merged there already; "
                            "merge each shard's own log here, one at a time; not merged")
    if len(theirs) != 1 or not ours or (theirs[0][2] or 1) < 2:
        raise EvisceneError(f"{refusal}, and {source} is not one shard of it (--shard-count); not merged")
    release, cases, count, index, started = theirs[0]
    for held in ours:
        for name, shard_value, value in (("--shard-count", count, held[2]), ("release", release, held[0]), ("cases sha256", cases, held[1])):
            if shard_value != value:
                raise EvisceneError(f"{refusal}: {source} ran it with {name} {_shown(shard_value)}, here {_shown(value)}; not merged")
    if index in {r[3] for r in ours}:
        grown = con.execute(
            # the shard's events the target holds (by id) all come before those it lacks: the shard's own log grew since
            "SELECT max(seq) FILTER (WHERE event_id IN (SELECT event_id FROM merged.events)), "
            "min(seq) FILTER (WHERE event_id NOT IN (SELECT event_id FROM merged.events)) FROM events WHERE run_id = ?",
            [run_id],
        ).fetchall()[0]
        if grown[0] is not None and grown[1] is not None and grown[0] < grown[1]:
            raise EvisceneError(
                f"{refusal}: shard {index}/{count} is merged already, and {source} has grown since (events after seq {grown[0]}: "
                "a resume in its own log); a merged shard takes no more events: merge every shard's own log into a new log "
                "to hold them; not merged"
            )
        raise EvisceneError(f"{refusal}: shard {index}/{count} is merged already, with other events; not merged")
    _check_same_scoring_files(con, run_id, source, refusal)
    _check_same_settings(orjson.loads(started), [orjson.loads(r[4]) for r in ours], source, refusal)


# What the shards of one run may record differently in `run.started`: what each process did
# on its own machine, never what its episodes are or how they ran. Everything else must be
# equal, so a setting added later is compared without being named here. A key named `path`
# is where that machine keeps a file whose content is pinned (the sha256 beside it).
PER_SHARD = frozenset({
    "started_at",
    "scoring_files",  # each file's sha256 is compared by _check_same_scoring_files, which says which file
    "config.shard_index", "selection.shard_index", "benchmark.shard_index",
    "benchmark.sample_count", "benchmark.episode_count",  # the shard's own share of the cases
    "config.benchmark", "config.source_access_policy",  # paths: the cases' sha256 and the policy's are compared
    "config.concurrency", "agent.concurrency", "agent.max_inflight_requests",  # how fast it ran
    "config.provider_outage_timeout", "agent.provider_outage_timeout_seconds",  # how long it waited for a down server
    "agent.gemini_max_inflight_requests", "agent.gemini_eval_max_concurrency",
    "config.executor", "config.ray_address", "config.workers",  # where it ran
    "config.api_key_env", "config.vlm_api_key_env", "agent.api_key_env",  # which variable holds the key there
})


def _check_same_settings(theirs: dict, ours: list[dict], source: Path, refusal: str) -> None:
    """The shard's `run.started` (`theirs`) agrees with each the run holds (`ours`) on every
    key but PER_SHARD: the recorded flags (`config`), the resolved agent settings, the
    release and policy blocks, and the commit. Shards of two commits are refused: the agent
    may differ, and each episode's prompt_group_id (with several rollouts, its episode id
    too) derives from the commit, so one run would name two policy revisions. The first
    difference is named, flags first, as the user typed them."""
    shard = _settings(theirs)
    for held in ours:
        here = _settings(held)
        for key in [*shard, *(k for k in here if k not in shard)]:
            if shard.get(key, _UNRECORDED) != here.get(key, _UNRECORDED):
                raise EvisceneError(
                    f"{refusal}: {source} ran it with {_named(key)} {_shown(shard.get(key, _UNRECORDED))}, "
                    f"here {_shown(here.get(key, _UNRECORDED))}; not merged"
                )


_UNRECORDED = "(not recorded)"


def _settings(payload: dict, prefix: str = "") -> dict[str, object]:
    """`run.started`'s leaves by dotted key, `config` and `git_commit` first, less PER_SHARD."""
    if not prefix:
        payload = {"config": payload.get("config", {}), "git_commit": payload.get("git_commit"), **payload}
    leaves: dict[str, object] = {}
    for key, value in payload.items():
        name = prefix + key
        if name in PER_SHARD or key == "path":
            continue
        if isinstance(value, dict) and value:
            leaves.update(_settings(value, name + "."))
        else:
            leaves[name] = value
    return leaves


# Recorded flags whose option is spelled otherwise, and settings no flag sets (the environment's).
_FLAG_NAMES = {"case_ids": "--case-id", "tool_cache_enabled": "--tool-cache/--no-tool-cache", "tool_cache_ttl_seconds": "--tool-cache-ttl"}
_FROM_THE_ENVIRONMENT = {"perception_cache_enabled", "perception_cache_version", "ocr_cache_version"}


def _named(key: str) -> str:
    """A recorded flag as typed (`config.rollouts_per_case`: `--rollouts-per-case`), else the key."""
    if key.startswith("config."):
        name = key.removeprefix("config.")
        if name in _FROM_THE_ENVIRONMENT:
            return f"{name} (from the environment)"
        return _FLAG_NAMES.get(name, "--" + name.replace("_", "-"))
    return "git commit" if key == "git_commit" else key


def _shown(value: object) -> str:
    return value if isinstance(value, str) else orjson.dumps(value).decode()


def _check_same_scoring_files(con: duckdb.DuckDBPyConnection, run_id: str, source: Path, refusal: str) -> None:
    """A shard scored or policed by other files (gold, protocols, policy: `run.started` pins
    each one's sha256) would leave the run two of them, and its views would read whichever
    came last; a file pinned on one side only (a run recorded before pins) is not compared."""
    pins = (
        "SELECT p.key, p.value->>'sha256' FROM {table} e, json_each(e.payload->'scoring_files') p "
        "WHERE e.run_id = ? AND e.type = 'run.started'"
    )
    theirs = dict(con.execute(pins.format(table="events"), [run_id]).fetchall())
    for kind, digest in con.execute(pins.format(table="merged.events"), [run_id]).fetchall():
        if kind in theirs and theirs[kind] != digest:
            raise EvisceneError(
                f"{refusal}: {source} was scored by another {kind} (sha256 {theirs[kind]}, here {digest}); not merged"
            )


def _fold_shard(con: duckdb.DuckDBPyConnection, run_id: str, source: Path) -> int:
    """Append a verified shard's run after the run's events here, re-chained (module doc)."""
    rows = con.execute(
        "SELECT seq, event_id, epoch_us(ts), episode_id, attempt, type, step, payload::VARCHAR, hash, "
        "event_id IN (SELECT event_id FROM merged.events) FROM events WHERE run_id = ? ORDER BY seq",
        [run_id],
    ).fetchall()
    index, count = con.execute(
        "SELECT (payload->>'$.benchmark.shard_index')::INTEGER, (payload->>'$.benchmark.shard_count')::INTEGER "
        "FROM events WHERE run_id = ? AND type = 'run.started'", [run_id]
    ).fetchall()[0]
    seq, prev_hash = con.execute(
        "SELECT seq, hash FROM merged.events WHERE run_id = ? ORDER BY seq DESC LIMIT 1", [run_id]
    ).fetchall()[0]
    held = [[r[0], r[1], r[2], content_digest(run_id, *r[3:8])] for r in rows if r[9]]
    record = ArtifactImported(
        kind=SHARD_KIND, path=str(source), sha256=rows[-1][8], rows=len(rows),
        metadata={"shard_index": index, "shard_count": count, "last_seq": rows[-1][0], "held": held},
    ).model_dump_json()
    stamp = now_micros()
    content = content_digest(run_id, None, None, "artifact.imported", None, record)
    new = [(derived_event_id(content), stamp, None, None, "artifact.imported", None, record, content)]
    new += [(r[1], r[2], *r[3:8], content_digest(run_id, *r[3:8])) for r in rows if not r[9]]
    columns: dict[str, list] = {name: [] for name in EVENT_SCHEMA.names}
    for event_id, ts, episode_id, attempt, type_, step, payload, content in new:
        seq += 1
        columns["seq"].append(seq)
        columns["prev_hash"].append(prev_hash)
        prev_hash = event_hash(prev_hash, seq, event_id, ts, content)
        columns["hash"].append(prev_hash)
        for name, value in zip(("event_id", "ts", "run_id", "episode_id", "attempt", "type", "step", "payload"),
                               (event_id, ts, run_id, episode_id, attempt, type_, step, payload)):
            columns[name].append(value)
    table = pa.Table.from_pydict(columns, schema=EVENT_SCHEMA)
    con.register("folded_shard", table)
    try:
        con.execute(f"INSERT INTO merged.events SELECT {EVENT_COLUMNS} FROM folded_shard ORDER BY seq").fetchall()
    finally:
        con.unregister("folded_shard")
    first = columns["seq"][0]
    con.execute(
        f"INSERT INTO merged.sealed_segments ({RECORD_COLUMNS}, sealed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, now())",
        [run_id, f"shard-{index:06d}-of-{count:06d}.merged", len(new), rows[-1][8], first, seq, columns["prev_hash"][0], prev_hash],
    ).fetchall()
    return len(new)
