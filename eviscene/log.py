"""`EventLog`: the one object the CLI and Python users hold to read, query and append: the
store (`eviscene.store.EventStore`) with the SQL views (`eviscene.views`) over it, composed
here so that the store imports nothing above it."""

from __future__ import annotations

import os

import duckdb

from eviscene.rules.commands import command_line, output_dir_words
from eviscene.store import EventStore
from eviscene.store.layout import RECORDED_OUTPUT_DIRS
from eviscene.views import apply_views, inline_views, view_definitions


class EventLog(EventStore):
    """A log on disk: the DuckDB archive plus its live runs, and every view over them. Made
    from a path whether or not a log is there (a writer's first run creates it); `open_log`
    refuses a path holding none, so a mistyped path is not read as an empty log.

    >>> log = open_log("eviscene.duckdb")
    >>> log.sql("SELECT type, count(*) FROM events GROUP BY type").to_pandas()
    """

    def add_views(
        self,
        con: duckdb.DuckDBPyConnection,
        *,
        materialize: bool,
        for_query: str | None,
        provided: frozenset[str] = frozenset(),
        drop_unnamed: bool = False,
    ) -> None:
        apply_views(con, materialize=materialize, for_query=for_query, provided=provided, drop_unnamed=drop_unnamed)

    def inline_views(self, con: duckdb.DuckDBPyConnection, query: str) -> str:
        return inline_views(con, query)

    def relation_names(self) -> tuple[str, ...]:
        return (*super().relation_names(), *(d.name for d in view_definitions()))

    def run_standing(self, run_id: str) -> tuple[str, int]:
        """The run's status and how many of its episodes have not finished, as its `runs`
        row says (one rule for every report of a run: the view's)."""
        row = self.sql(
            "SELECT status, episodes_planned - episodes_finished AS unfinished FROM runs WHERE run_id = ?", [run_id]
        ).to_pylist()[0]
        return row["status"], row["unfinished"]

    def output_dir_of(self, run_id: str) -> str | None:
        """The run directory `eval run` was given (`run.started`'s output_dir), None if none was recorded."""
        given = self.sql(f"SELECT output_dir FROM ({RECORDED_OUTPUT_DIRS}) WHERE run_id = ?", [run_id])["output_dir"].to_pylist()
        return given[0] if given else None

    def resume_line(self, run_id: str, *more: object) -> str:
        """The `eval resume` that finishes the run, pasted as printed (`more`: its further
        words): its log (`--db`) and its run directory, where not the defaults."""
        if "--output-dir" not in more:
            more = (*more, *output_dir_words(self.output_dir_of(run_id), run_id))
        return command_line("eval", "resume", run_id, *more, log=self.path)


def open_log(path: str | os.PathLike[str] | None = None, *, create: bool = False) -> EventLog:
    """The log at `path` (default `$EVISCENE_DB`, else ./eviscene.duckdb); `LogNotFoundError`
    when there is none, unless `create` (a run then writes the first events)."""
    log = EventLog(path)
    return log if create else log.require()
