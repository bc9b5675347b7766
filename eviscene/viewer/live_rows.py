"""The per-episode rows a live run's pages are computed from, kept in memory across looks
and brought up to each new snapshot by computing only the episodes that have new events.

A run's events in a snapshot are a prefix of its hash chain: its single writer gives them
gapless seqs and commits its segments in order, so a later snapshot holds the events of an
earlier one plus those after its head seq. The kept rows name the head they cover; a look
checks that the snapshot's event at that seq has that hash (the same prefix) before folding.

What is folded. Each view of a page's `local` views (EPISODE_LOCAL_VIEWS) gives an episode's
rows from that episode's own events and the run's events that belong to no episode (its
run.started and imported gold and policy): their SQL partitions and joins by (run_id,
episode_id) and reads the run-level rows by run and case. So when the events after the
covered seq all belong to episodes, the rows of every other episode are unchanged, and each
episode with a new event (a new episode, or another attempt of one retried or resumed) is
computed again from all of its events in the snapshot, its new rows replacing all of its
kept ones: each episode is in the rows once, as the views give it over the whole snapshot.
A new event of no episode (a resume's run.started, run.finished) or a different prefix
computes every row again. The views of the run's own events (RUN_VIEWS: its manifest, gold
and policy) are kept until then. post_rollout_rewards (GROUP_VIEWS) gives an episode's row
from the rows of its prompt group's episodes: it is computed again, by its own SQL over the
folded rows, for every episode of a group one of whose episodes has new events. The other
views a page reads (classification_metrics, runs, ...) are computed by their own SQL over
these rows and the run's events, as they would be over the views.

The events of the touched episodes are read once, by seq ranges around them (a scan skips
the rest of the log), into a table the episode-local views are computed over. A look folds
into a copy of what is kept, so two pages looking at once never see half a fold. The rows
live in the viewer's memory only: the log and `<log>.results/` are never written."""

from __future__ import annotations

from dataclasses import dataclass, field

import duckdb
import numpy as np
import pyarrow as pa

from eviscene.log import EventLog
from eviscene.viewer.results_cache import ResultCache, RunHead
from eviscene.views import KEPT_AS_VIEWS, VIEWS_EVENT_COLUMNS, copy_events, narrow_to_runs, remove_functions, views_needed_by

# The views whose rows for an episode come from its own events and the run's, never from
# another episode's (see the module's docstring); each has an episode_id column.
EPISODE_LOCAL_VIEWS = (
    "episodes", "tool_calls", "episode_evidence", "model_calls", "trace_audit_failures", "trace_audit",
    "episode_metrics", "sft_export_rejections", "trajectory_scores", "sft_eligibility",
)
# The views of the run's own events only (its run.started and imported artifacts).
RUN_VIEWS = ("run_manifests", "gold_labels", "gold_bridges", "gold_facts", "gold_sources", "source_policies")
# The views whose rows for an episode come from the episode-local rows of its prompt group.
GROUP_VIEWS = ("post_rollout_rewards",)
# Episode-local views kept in part: the dashboard reads `steps` (every event of a finished
# attempt) only for its gate decisions; a view computed over the kept rows may not read it.
KEPT_SUBSETS = {"steps": "type = 'gate.decided'"}
# Columns of episode-local views that nothing computed over the kept rows reads (the pages'
# queries, the views over the rows, post_rollout_rewards too): each call's arguments,
# observation, sources, data and hashes, each message's text, tool calls, hash and times.
# They were most of a live run's kept memory (100k episodes: tool_calls 494 and model_calls
# 268 of 1,119 MiB) and stay in the log; a view or query that named one over the kept rows
# would fail to bind.
UNKEPT_COLUMNS = {
    "tool_calls": ("call_id", "arguments", "arguments_sha256", "observation", "sources", "data"),
    "model_calls": ("provider", "model", "request_sha256", "content", "reasoning", "tool_calls", "started_at", "finished_at"),
}
_RUN_EVENTS = "run_events"  # the run's events, as views.narrow_to_runs names them


@dataclass
class _Rows:
    """A view's rows for the run, in chunks, with each row's episode as a code."""

    chunks: list[pa.Table] = field(default_factory=list)
    codes: list[np.ndarray] = field(default_factory=list)

    def table(self, schema: pa.Schema) -> pa.Table:
        return pa.concat_tables(self.chunks) if self.chunks else schema.empty_table()

    def select(self, episodes: np.ndarray, *, keep: bool) -> "_Rows":
        """The rows of `episodes` (keep) or of every other episode; chunks without a change are shared."""
        chosen = _Rows()
        for chunk, codes in zip(self.chunks, self.codes):
            mask = np.isin(codes, episodes) == keep
            if mask.all():
                chosen.chunks.append(chunk)
                chosen.codes.append(codes)
            elif mask.any():
                chosen.chunks.append(chunk.filter(pa.array(mask)))
                chosen.codes.append(codes[mask])
        return chosen


@dataclass
class LiveRows:
    head: RunHead  # the events they were computed from: the run's, up to this seq
    run_tables: dict[str, pa.Table]  # RUN_VIEWS' rows
    rows: dict[str, _Rows]  # episode-local and group views' rows
    schemas: dict[str, pa.Schema]
    codes: dict[str, int] = field(default_factory=dict)  # episode id -> its code in `rows`

    def encode(self, episode_ids: list[str]) -> np.ndarray:
        return np.fromiter((self.codes.setdefault(e, len(self.codes)) for e in episode_ids), np.int64, len(episode_ids))

    def add(self, name: str, fresh: pa.Table, replaced: np.ndarray | None) -> None:
        """Fold `fresh` rows into `name`'s: the rows of the `replaced` episodes go (None: all)."""
        self.schemas.setdefault(name, fresh.schema)
        kept = _Rows() if replaced is None else self.rows[name].select(replaced, keep=False)
        if fresh.num_rows:
            kept.chunks.append(fresh.cast(self.schemas[name]))
            kept.codes.append(self.encode(fresh["episode_id"].to_pylist()))
        self.rows[name] = kept

    def table(self, name: str) -> pa.Table:
        return self.rows[name].table(self.schemas[name])


def _touched(con: duckdb.DuckDBPyConnection, kept: LiveRows | None, head: RunHead) -> set[str] | None:
    """The episodes with events after the kept rows' head, or None when every row must be
    computed: nothing kept, another prefix, or a new event of no episode."""
    if kept is None or kept.head.last_seq > head.last_seq:
        return None
    covered = {"seq": kept.head.last_seq}
    if con.execute(f"SELECT hash FROM {_RUN_EVENTS} WHERE seq = $seq", covered).fetchall() != [(kept.head.head,)]:
        return None
    episodes = {e for (e,) in con.execute(f"SELECT DISTINCT episode_id FROM {_RUN_EVENTS} WHERE seq > $seq", covered).fetchall()}
    return None if None in episodes else episodes


def _compute(con: duckdb.DuckDBPyConnection, log: EventLog, names: tuple[str, ...], given: dict[str, pa.Table]) -> dict[str, pa.Table]:
    """The rows of the views `names` computed in `con` over the `given` views' rows, then
    every view and function made for them removed again (so views can be applied again)."""
    for name, table in given.items():
        con.register(name, table)
    query = " ".join(names)
    log.add_views(con, materialize=True, for_query=query, provided=frozenset(given))
    found = {name: con.sql(_kept_part(name)).to_arrow_table() for name in names}
    for definition in views_needed_by(query):
        if definition.name not in given:
            con.execute(f"DROP {'VIEW' if definition.name in KEPT_AS_VIEWS else 'TABLE'} IF EXISTS {definition.name}")
    for name in given:
        con.unregister(name)
    remove_functions(con)
    return found


def _kept_part(name: str) -> str:
    """The query of what is kept of view `name`'s rows."""
    unkept = f" EXCLUDE ({', '.join(UNKEPT_COLUMNS[name])})" if name in UNKEPT_COLUMNS else ""
    return f"SELECT *{unkept} FROM {name}" + (f" WHERE {KEPT_SUBSETS[name]}" if name in KEPT_SUBSETS else "")


def _bring_up(con: duckdb.DuckDBPyConnection, log: EventLog, head: RunHead, kept: LiveRows | None, touched: set[str] | None,
              local: tuple[str, ...], groups: tuple[str, ...], queries: str) -> LiveRows:
    """The kept rows brought up to `head` (new ones when `touched` is None)."""
    if touched is None:
        needed = {d.name for d in views_needed_by(" ".join([*local, *groups, queries]))}
        run_tables = _compute(con, log, tuple(name for name in RUN_VIEWS if name in needed), {})
        live = LiveRows(head, run_tables, {}, {})
    else:  # the touched episodes' events only (the columns the views read), and the run's own: read once
        live = LiveRows(head, kept.run_tables, dict(kept.rows), dict(kept.schemas), dict(kept.codes))  # kept stays as it was
        con.execute("CREATE TEMP TABLE touched_episodes AS SELECT unnest($ids::VARCHAR[]) AS episode_id", {"ids": sorted(touched)})
        copy_events(con, _RUN_EVENTS, "episode_id IS NULL OR episode_id IN (SELECT episode_id FROM touched_episodes)", "touched_events",
                    VIEWS_EVENT_COLUMNS)
        con.execute("CREATE OR REPLACE VIEW events AS SELECT * FROM touched_events")
    replaced = None if touched is None else live.encode(sorted(touched))
    for name, fresh in _compute(con, log, local, live.run_tables).items():
        live.add(name, fresh, replaced)
    con.execute(f"CREATE OR REPLACE VIEW events AS SELECT * FROM {_RUN_EVENTS}")
    if groups:
        members = None
        if touched is not None:  # every episode of a prompt group with a touched episode
            episodes = live.table("episodes")
            touched_groups = episodes.filter(pa.array(np.isin(live.encode(episodes["episode_id"].to_pylist()), replaced)))
            wanted = set(touched_groups["prompt_group_id"].to_pylist())
            in_groups = [e for e, g in zip(episodes["episode_id"].to_pylist(), episodes["prompt_group_id"].to_pylist()) if g in wanted]
            members = live.encode(in_groups)
        inputs = {name: (live.rows[name] if members is None else live.rows[name].select(members, keep=True)).table(live.schemas[name])
                  for name in local}
        for name, fresh in _compute(con, log, groups, {**live.run_tables, **inputs}).items():
            live.add(name, fresh, members)
    return live


def prepare(
    con: duckdb.DuckDBPyConnection, log: EventLog, head: RunHead, cache: ResultCache, kind: str,
    local: tuple[str, ...], groups: tuple[str, ...], queries: str,
) -> None:
    """Make `con` (a snapshot without views, where `head` is the run's head) answer `queries`
    about the run: `events` narrowed to the run, the `local` and `groups` views' rows (and
    RUN_VIEWS') from those kept for (`kind`, run) brought up to `head`, every other view they
    need computed once over them."""
    narrow_to_runs(con, (head.run_id,))
    kept = cache.live_rows(kind, head.run_id)
    touched = _touched(con, kept, head)
    live = kept if kept is not None and touched == set() else _bring_up(con, log, head, kept, touched, local, groups, queries)
    given = {**live.run_tables, **{name: live.table(name) for name in live.rows}}
    for definition in views_needed_by(queries):
        if definition.name not in given and definition.reads & set(KEPT_SUBSETS):
            raise AssertionError(f"{definition.name} would read the part of {sorted(definition.reads & set(KEPT_SUBSETS))} kept")
    for name, table in given.items():
        con.register(name, table)
    log.add_views(con, materialize=True, for_query=queries, provided=frozenset(given))
    cache.keep_live_rows(kind, live)
