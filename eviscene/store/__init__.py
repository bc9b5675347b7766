"""The append-only event log: writer, snapshots, sealing, verification (the views over it:
`eviscene.log.EventLog`).

Names are imported on first use: a command that only reads the log loads neither the writer
(pydantic event models, pyarrow) nor verification."""

from importlib import import_module
from typing import Any

_EXPORTS = {
    "ChainProblem": "eviscene.store.verify",
    "EventDraft": "eviscene.store.writer",
    "EventStore": "eviscene.store.log",
    "RangeProblem": "eviscene.store.verify",
    "RunNote": "eviscene.store.verify",
    "RunWriter": "eviscene.store.writer",
    "VerifyReport": "eviscene.store.verify",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'eviscene.store' has no attribute {name!r}")
