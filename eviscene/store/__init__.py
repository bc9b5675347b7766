"""The append-only event log: writer, snapshots, sealing, verification (the views over it:
`eviscene.log.EventLog`)."""

from eviscene.store.log import EventStore
from eviscene.store.verify import ChainProblem, RangeProblem, RunNote, VerifyReport
from eviscene.store.writer import EventDraft, RunWriter

__all__ = ["ChainProblem", "EventDraft", "EventStore", "RangeProblem", "RunNote", "RunWriter", "VerifyReport"]
