"""Bringing existing artifacts into the event log: seed-style run directories, accepted
teacher releases, fixed case splits and gate artifacts, each file as an `artifact.imported`
event with its content in a blob."""

from eviscene.imports.errors import ArtifactError
from eviscene.imports.plan import SOURCE_KINDS, ImportedFile, ImportPlan
from eviscene.imports.record import ImportResult, import_path, record_import
from eviscene.imports.sources import plan_import

__all__ = [
    "SOURCE_KINDS",
    "ArtifactError",
    "ImportPlan",
    "ImportResult",
    "ImportedFile",
    "import_path",
    "plan_import",
    "record_import",
]
