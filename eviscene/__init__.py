"""EviScene: run image fact-verification agents into an append-only DuckDB event log,
then score, audit and export training data with SQL views over it.

    import eviscene
    log = eviscene.open_log("eviscene.duckdb")
    log.sql("SELECT * FROM runs")                       # pyarrow.Table
    summary = anyio.run(eviscene.start_run, log, eviscene.EvalOptions(benchmark="…/cases.jsonl"))
    eviscene.materialize_run(log, summary.run_id, Path("runs/demo"))
"""

from eviscene.errors import EvisceneError
from eviscene.eval.options import EvalOptions
from eviscene.eval.run import RunSummary, resume_run, start_run
from eviscene.exports.run_dir import materialize_run
from eviscene.store import EventDraft, EventLog, RunWriter, open_log

__version__ = "0.1.0"
__all__ = [
    "EvalOptions",
    "EventDraft",
    "EventLog",
    "EvisceneError",
    "RunSummary",
    "RunWriter",
    "__version__",
    "materialize_run",
    "open_log",
    "resume_run",
    "start_run",
]
