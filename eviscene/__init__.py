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

import os

from eviscene.rules.lazy_exports import lazy_exports

# pyarrow's default allocator, mimalloc, backs its arenas with transparent huge pages; where the
# kernel compacts memory to find them (THP defrag "madvise", as on the machines this was measured
# on), writing the segment of a 1.4 GB imported file spent 12 of its 15-17 s in the kernel. The
# system allocator maps plain pages: 4-5 s (bench/dataset.py, ninth round). Read when pyarrow
# makes its default pool, so only where eviscene is imported first; a value already set wins.
os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")

__version__ = "0.1.0"

_EXPORTS = {
    # The errors a caller may catch (eviscene.errors; every one is an EvisceneError).
    **dict.fromkeys(
        ("EvisceneError", "LogNotFoundError", "NotALogError", "LogLockedError", "LogIntegrityError", "ArchiveDamagedError", "QueryRefusedError", "ReleaseError", "OptionsError", "InvalidRunIdError",
         "SelectionError", "DuplicateEventError", "ImportConflictError", "RunNotFoundError", "OutputFolderTakenError"),
        "eviscene.errors",
    ),
    "EvalOptions": "eviscene.eval.options",
    "RunInterrupted": "eviscene.eval.run",
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

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
