"""The import errors: a file the user gave cannot be taken into the log as it is."""

from eviscene.errors import EvisceneError


class ArtifactError(EvisceneError):
    """An imported file or directory is malformed, inconsistent or unsafe."""
