"""`EventLog`: the one object the CLI and Python users hold to read, query and append: the
store (`eviscene.store.EventStore`) with the SQL views (`eviscene.views`) over it, composed
here so that the store imports nothing above it."""

from __future__ import annotations

import os
import warnings

import duckdb

from eviscene.store import EventStore
from eviscene.views import apply_views


class EventLog(EventStore):
    """A log on disk: the DuckDB archive plus its live runs, and every view over them.

    >>> log = EventLog("eviscene.duckdb")
    >>> log.sql("SELECT type, count(*) FROM events GROUP BY type").to_pandas()
    """

    def add_views(self, con: duckdb.DuckDBPyConnection, *, materialize: bool, for_query: str | None) -> None:
        apply_views(con, materialize=materialize, for_query=for_query)

    def seal(self, run_ids: list[str] | None = None) -> list[str]:
        """Move finished runs' live segments into the DuckDB archive, then file each sealed
        run's viewer numbers beside the log (`eviscene.viewer.data.precompute`), so `eviscene
        view` shows a large run at once; the runs named that were sealed before get theirs too."""
        from eviscene.viewer.data import precompute

        sealed = super().seal(run_ids)
        try:
            precompute(self, [*sealed, *(run_id for run_id in run_ids or [] if run_id not in sealed)])
        except (duckdb.Error, OSError) as exc:  # the seal stands; the viewer computes the numbers itself
            warnings.warn(f"viewer numbers not filed beside {self.path}: {exc}", stacklevel=2)
        return sealed


def open_log(path: str | os.PathLike[str] | None = None, *, create: bool = False) -> EventLog:
    """The log at `path` (default `$EVISCENE_DB`, else ./eviscene.duckdb); `LogNotFoundError`
    when there is none, unless `create` (a run then writes the first events)."""
    log = EventLog(path)
    return log if create else log.require()
