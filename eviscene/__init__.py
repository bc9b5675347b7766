"""EviScene: run image fact-verification agents into an append-only DuckDB event log,
then score, audit and export training data with SQL views over it."""

from eviscene.errors import EvisceneError
from eviscene.store import EventDraft, EventLog, RunWriter, open_log

__version__ = "0.1.0"
__all__ = ["EventDraft", "EventLog", "EvisceneError", "RunWriter", "open_log", "__version__"]
