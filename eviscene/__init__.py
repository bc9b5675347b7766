"""EviScene: run image fact-verification agents into an append-only DuckDB event log,
then score, audit and export training data with SQL views over it.

    import eviscene
    log = eviscene.open_log("eviscene.duckdb", create=True)  # create: the first run makes the log
    log.sql("SELECT * FROM runs")                       # pyarrow.Table
    summary = anyio.run(eviscene.start_run, log, eviscene.EvalOptions(benchmark="…/cases.jsonl"))
    eviscene.materialize_run(log, summary.run_id, Path("runs/demo"))

Names are imported on first use, so `import eviscene.store` alone does not load the agent,
its tools and their image and OCR libraries.
"""

from eviscene.rules.lazy_exports import lazy_getattr

__version__ = "0.1.0"

_EXPORTS = {
    "EvisceneError": "eviscene.errors",
    "EvalOptions": "eviscene.eval.options",
    "RunSummary": "eviscene.eval.run",
    "resume_run": "eviscene.eval.run",
    "start_run": "eviscene.eval.run",
    "materialize_run": "eviscene.exports.run_dir",
    "EventDraft": "eviscene.store",
    "EventLog": "eviscene.log",
    "RunWriter": "eviscene.store",
    "open_log": "eviscene.log",
}
__all__ = sorted(_EXPORTS) + ["__version__"]

__getattr__ = lazy_getattr(__name__, _EXPORTS)
