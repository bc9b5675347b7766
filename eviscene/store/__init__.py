"""The append-only event log: writer, snapshots, sealing, verification."""

from eviscene.store.log import EventLog, open_log
from eviscene.store.verify import ChainProblem, RangeProblem, RunNote, VerifyReport
from eviscene.store.writer import EventDraft, RunWriter

__all__ = ["ChainProblem", "EventDraft", "EventLog", "RangeProblem", "RunNote", "RunWriter", "VerifyReport", "open_log"]
