"""A query with its views inlined (`EventStore.query(..., inline_views=True)`, what `eviscene
runs` uses: the views bind once, not at creation and again in the query) returns what the
same query over created views returns, on a log with a sealed and a live run."""

from __future__ import annotations

import re

import duckdb
import pytest

import sandbox_log
from eviscene.log import EventLog
from eviscene.views import inline_views, views_needed_by

RUNS = "SELECT * FROM runs ORDER BY started_at DESC NULLS LAST, run_id"


@pytest.fixture(scope="module")
def log(tmp_path_factory) -> EventLog:
    return EventLog(sandbox_log.build(tmp_path_factory.mktemp("log")))


def rows(log: EventLog, query: str, **options) -> tuple[list[str], list[tuple]]:
    with log.query(query, as_rows=True, **options) as result:
        return result.columns, list(result.rows)


def test_runs_inlined_equals_runs_over_created_views(log):
    columns, inlined = rows(log, RUNS, inline_views=True)
    assert (columns, inlined) == rows(log, RUNS)
    by_run = {row[0]: dict(zip(columns, row)) for row in inlined}
    # Written by hand from the log's contents: each run's event count, no episode planned,
    # and no run.finished event yet.
    assert {run: row["events"] for run, row in by_run.items()} == {"live": 21, "sealed": 41}
    assert {row["episodes_planned"] for row in by_run.values()} == {0}
    assert {row["status"] for row in by_run.values()} == {"running_or_interrupted"}


@pytest.mark.parametrize("query", [
    "SELECT run_id, count(*) AS n FROM episodes GROUP BY run_id ORDER BY run_id",
    "SELECT count(*) AS n FROM events",  # no view at all: the query runs as it is
])
def test_other_queries_inlined_equal_the_same_over_created_views(log, query):
    assert rows(log, query, inline_views=True) == rows(log, query)


def test_each_view_read_is_inlined_once_in_creation_order():
    con = duckdb.connect()
    sql = inline_views(con, RUNS)
    names = [d.name for d in views_needed_by(RUNS)]
    assert names[-1] == "runs" and "episodes" in names
    starts = [re.findall(rf"(?:^WITH |,\n){name} AS NOT MATERIALIZED \(", sql) for name in names]
    assert all(len(found) == 1 for found in starts)  # each view once
    positions = [sql.index(found[0]) for found in starts]
    assert positions == sorted(positions)  # a view after every view it reads
    assert sql.endswith("\n" + RUNS) and "CREATE" not in sql
    assert inline_views(con, "SELECT 1 AS one") == "SELECT 1 AS one"
