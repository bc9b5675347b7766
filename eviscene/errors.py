"""The project's error types. Every user mistake raises one of these (SQL a query gets wrong
raises DuckDB's own `duckdb.Error`, its message given the sandbox's hints); the CLI prints its
message on one line and exits 2, never a traceback."""

from __future__ import annotations

import difflib
import errno
import os
from collections.abc import Iterable
from pathlib import Path

import duckdb

from eviscene.rules.commands import command_line


class EvisceneError(Exception):
    """Base for errors that are the user's to fix (bad input, a busy log, a wrong flag)."""


class ReleaseError(EvisceneError):
    """A benchmark release is malformed, incomplete or unsafe (paths escaping its root)."""


class OptionsError(EvisceneError, ValueError):
    """`EvalOptions` given a name it does not know or a value of the wrong type."""


class InvalidRunIdError(EvisceneError, ValueError):
    """A run id that cannot name a folder of the log (`a/b`, `..`, a space)."""


class SelectionError(EvisceneError):
    """Case selection or rollout flags do not fit the release."""


class LogLockedError(EvisceneError):
    """Another process holds the log (or one run of it) for writing."""


class OutputFolderTakenError(EvisceneError):
    """An output folder that must be new or empty holds something: before the write, or put there
    by another write to it that finished first (`exports/staging.py`)."""


class LogIntegrityError(EvisceneError):
    """The log's hash chain or order is broken."""


class ArchiveDamagedError(LogIntegrityError):
    """The log's archive lacks a table every log has (dropped): `log verify` reports it, every
    other command refuses the log."""


class DuplicateEventError(EvisceneError):
    """An event_id was appended with content that differs from the stored event."""


class ImportConflictError(EvisceneError):
    """An artifact being imported conflicts with what the log already holds."""


class LogNotFoundError(EvisceneError):
    """A command that only reads was pointed at a path holding no log."""


class NotALogError(EvisceneError):
    """A log path holds a file that is not an EviScene log (a run's summary.json, say)."""


class QueryRefusedError(EvisceneError):
    """A query asked the read-only SQL sandbox to write, or to read outside what it may."""


class BackendOutage(Exception):
    """A backend the run depends on (a model endpoint, the search service) can serve none of
    its calls: unreachable past the run's outage timeout, or refusing its credentials. Not an
    episode's failure: the run stops, its in-flight episodes stay unfinished for `eval resume`,
    which can finish them `resume_when`. Its message names the backend, masked."""

    resume_when = "when the server is back"


def outage_in(exc: BaseException | None) -> BackendOutage | None:
    """The `BackendOutage` `exc` is or holds: bare, or inside (nested) exception groups, as task
    groups and Ray's wrapping of a worker's error deliver it."""
    if isinstance(exc, BaseExceptionGroup):
        return next(filter(None, map(outage_in, exc.exceptions)), None)
    return exc if isinstance(exc, BackendOutage) else None


class RunNotFoundError(EvisceneError):
    """A run name the log does not hold (the viewer answers it 404)."""


def no_run_message(run_id: str, log_path: str | os.PathLike[str], known: Iterable[str] = (), *, listing: str | None = None) -> str:
    """A run name that is not in the log (a typo, another --db): every command says it alike,
    with the closest of the `known` run ids and where to look (`listing`, else `runs`). Never
    the name asked for: a list that holds it (the archive's records of a run folder that held
    blobs alone) does not make it a run."""
    known = sorted(set(known) - {run_id})
    close = difflib.get_close_matches(run_id, known, n=1) or [k for k in known if _one_edit_apart(run_id, k)][:1]
    return (f"no run {run_id!r} in {log_path}" + (f" (did you mean {close[0]!r}?)" if close else "")
            + "; " + (listing or f"`{command_line('runs', log=Path(log_path))}` lists the runs"))


def _one_edit_apart(a: str, b: str) -> bool:
    """One character changed, added or removed: `r2` for `r1`, which difflib's ratio (0.5 for
    two characters) does not call close."""
    if abs(len(a) - len(b)) > 1 or a == b:
        return False
    start = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    return a[start + (len(a) >= len(b)):] == b[start + (len(b) >= len(a)):]


def no_run_error(run_id: str, log_path: str | os.PathLike[str], known: Iterable[str] = ()) -> RunNotFoundError:
    return RunNotFoundError(no_run_message(run_id, log_path, known))


def is_interruption(exc: BaseException) -> bool:
    """Ctrl-C (or SIGTERM, which the CLI raises as Ctrl-C): a KeyboardInterrupt, or what DuckDB
    raises in its place when one lands inside a query, the KeyboardInterrupt swallowed, or when
    the CLI stops the query (`interrupt_queries`); alone or in the group a task group raises
    (whatever else failed with it)."""
    if isinstance(exc, BaseExceptionGroup):
        return any(is_interruption(inner) for inner in exc.exceptions)
    return isinstance(exc, (KeyboardInterrupt, duckdb.InterruptException)) or (
        type(exc) is RuntimeError and str(exc) == "Query interrupted"
    )


_WRITE_FAULTS = {"ENOSPC", "EFBIG", "EROFS", "EDQUOT"}


def os_fault(exc: OSError, *, path: object = None, verb: str | None = None) -> EvisceneError:
    """A failed file operation as one line naming the path and the cause
    (`cannot write runs/x/predictions.jsonl: No space left on device`); `verb` is what was
    being done, else read from the cause."""
    where = path if path is not None else (exc.filename if exc.filename is not None else "?")
    cause = os.strerror(exc.errno) if exc.errno else (exc.strerror or str(exc))
    if exc.errno == errno.EEXIST and exc.filename is not None and os.path.lexists(exc.filename) and not os.path.isdir(exc.filename):
        cause = "a file is there, where a folder was to be made"  # `--out afile/sub`: "File exists" said not which
    verb = verb or ("write" if errno.errorcode.get(exc.errno or 0) in _WRITE_FAULTS else "access")
    return EvisceneError(f"cannot {verb} {where}: {cause}")
