"""The append-only event log: writer, snapshots, sealing, verification (the views over it:
`eviscene.log.EventLog`).

Names are imported on first use: a command that only reads the log loads neither the writer
(pydantic event models, pyarrow) nor verification."""

from eviscene.rules.lazy_exports import lazy_exports

_EXPORTS = {
    "ChainProblem": "eviscene.store.verify",
    "EventDraft": "eviscene.store.writer",
    "EventStore": "eviscene.store.log",
    "HeadProblem": "eviscene.store.verify",
    "RangeProblem": "eviscene.store.verify",
    "RunNote": "eviscene.store.verify",
    "RunWriter": "eviscene.store.writer",
    "VerifyReport": "eviscene.store.verify",
}
__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
