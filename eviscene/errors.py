"""The project's error types. Every user mistake raises one of these; the CLI prints its
message on one line and exits 2, never a traceback."""


class EvisceneError(Exception):
    """Base for errors that are the user's to fix (bad input, a busy log, a wrong flag)."""


class ReleaseError(EvisceneError):
    """A benchmark release is malformed, incomplete or unsafe (paths escaping its root)."""


class SelectionError(EvisceneError):
    """Case selection or rollout flags do not fit the release."""


class LogLockedError(EvisceneError):
    """Another process holds the log (or one run of it) for writing."""


class LogIntegrityError(EvisceneError):
    """The log's hash chain or order is broken."""


class DuplicateEventError(EvisceneError):
    """An event_id was appended with content that differs from the stored event."""


class ImportConflictError(EvisceneError):
    """An artifact being imported conflicts with what the log already holds."""


class LogNotFoundError(EvisceneError):
    """A command that only reads was pointed at a path holding no log."""


class QueryRefusedError(EvisceneError):
    """A query asked the read-only SQL sandbox to write, or to read outside what it may."""
