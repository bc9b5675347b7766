"""`eviscene dataset export`: seed 002's split-safe SFT dataset, computed by the
sql/70_dataset views over the event log and written byte-identically on every rerun.

Path inputs (run directories, an accepted release, a case split, gate directories) are
imported into the log first (a no-op when already there); the views then decide
eligibility, which rollouts to keep (every eligible one in derived mode, the best per case
in frozen mode or with --one-rollout-per-case), source-family groups, splits and routes; this
module checks the options, raises the first problem the views report, writes the files and
records a `dataset.exported` event.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eviscene.errors import EvisceneError, LogLockedError, no_run_message
from eviscene.events import DatasetExported
from eviscene.exports.dataset_files import FILES_READ, FORMATS, write_dataset
from eviscene.exports.staging import check_output_folder, staged_directory
from eviscene.exports.dataset_views import ExportSettings, open_export, release_unread, source_heads
from eviscene.imports import import_path
from eviscene.imports.files import sha256_bytes
from eviscene.log import EventLog
from eviscene.rules.blocking import run_blocking
from eviscene.rules.canonical import canonical_json
from eviscene.rules.commands import command_line
from eviscene.rules.dataset_split import SHORT_TRAJECTORY_MAX_TOKENS, SPLIT_SEED, TRAIN_RATIO, VALIDATION_RATIO
from eviscene.store import EventDraft
from eviscene.store.layout import check_not_the_log
from eviscene.store.verify import intact_heads

DEFAULT_FROZEN_MINIMUM_ACCEPTED_CASES = 40


class DatasetExportError(EvisceneError):
    """The export's options or inputs cannot give a split-safe dataset."""


@dataclass
class ExportOptions:
    """Seed 002's flags; `runs` names native runs (or imported run directories) in the log."""

    out_dir: Path
    runs: list[str] = field(default_factory=list)
    run_dirs: list[Path] = field(default_factory=list)
    accepted_release: Path | None = None
    case_split: Path | None = None
    eligibility_dir: Path | None = None
    semantic_reward_dir: Path | None = None
    minimum_accepted_cases: int | None = None
    require_all_validation_cases: bool = True
    # Derived mode keeps every eligible rollout; this keeps the best one per case instead.
    one_rollout_per_case: bool = False
    # Let sources whose release prohibits training (a development subset) contribute.
    allow_training_prohibited: bool = False
    train_ratio: float = TRAIN_RATIO
    validation_ratio: float = VALIDATION_RATIO
    seed: str = SPLIT_SEED
    short_max_tokens: int = SHORT_TRAJECTORY_MAX_TOKENS
    fmt: str = "jsonl"
    export_concurrency: int = 1  # files serialized and written at once (seed 002)


@dataclass
class ResolvedExport:
    settings: ExportSettings
    paths: dict[str, Path | None]


def _resolved(path: Path | None) -> Path | None:
    return None if path is None else Path(path).expanduser().resolve()


def check_options(options: ExportOptions) -> tuple[bool, int | None]:
    """Seed 002's option checks, in its order; returns (frozen, minimum accepted cases)."""
    if options.fmt not in FORMATS:
        raise DatasetExportError(f"unknown format {options.fmt!r}; one of {', '.join(FORMATS)}")
    frozen = False
    if options.accepted_release is not None:
        if options.runs or options.run_dirs:
            raise DatasetExportError("accepted-release mode cannot be combined with --run-dir or --run")
        canonical = _resolved(options.accepted_release) / "eligibility"
        if options.eligibility_dir is not None and _resolved(options.eligibility_dir) != canonical:
            raise DatasetExportError(
                "accepted-release mode owns its eligibility directory; do not pass a second --eligibility-dir"
            )
        frozen = True
    elif not options.runs and not options.run_dirs:
        raise DatasetExportError("at least one run is required: --run RUN, --run-dir DIR or --accepted-release DIR")
    if any(value is not None for value in (options.case_split, options.eligibility_dir, options.semantic_reward_dir)):
        frozen = True
    if frozen and options.case_split is None:
        raise DatasetExportError("frozen SFT export requires --case-split")
    if frozen and options.eligibility_dir is None and options.accepted_release is None:
        raise DatasetExportError("frozen SFT export requires --eligibility-dir")
    minimum = options.minimum_accepted_cases
    if minimum is not None and minimum < 0:
        raise DatasetExportError("minimum_accepted_cases must be non-negative")
    if frozen and minimum is None:
        minimum = DEFAULT_FROZEN_MINIMUM_ACCEPTED_CASES
    if options.train_ratio <= 0 or options.validation_ratio < 0:
        raise DatasetExportError("split ratios must be non-negative (and train_ratio positive)")
    if options.train_ratio + options.validation_ratio >= 1:
        raise DatasetExportError("train_ratio + validation_ratio must be below 1")
    if options.short_max_tokens < 1:
        raise DatasetExportError("short_max_tokens must be positive")
    if options.export_concurrency < 1:
        raise DatasetExportError("export_concurrency must be at least 1")
    out = Path(options.out_dir)
    check_output_folder(out, "dataset output directory")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise DatasetExportError(f"dataset output directory must be new or empty: {out}")
    return frozen, minimum


def _native_or_imported_run(log: EventLog, run: str) -> tuple[str, bool]:
    """(source id, is native) for a --run value: a native run id, or an imported run
    directory named by its import id or by the run_id in its manifest, which must name one."""
    if log.sql("SELECT count(*) AS n FROM run_manifests WHERE run_id = ?", [run])["n"][0].as_py():
        return run, True
    found = log.sql(
        "SELECT import_id, path FROM import_sources WHERE source_kind = 'run_dir' AND (import_id = ? OR metadata->>'run_id' = ?) "
        "ORDER BY import_id",
        [run, run],
    ).to_pylist()
    if not found:
        known = log.sql("SELECT run_id FROM run_manifests UNION SELECT import_id FROM import_sources WHERE source_kind = 'run_dir' "
                        "UNION SELECT metadata->>'run_id' FROM import_sources WHERE source_kind = 'run_dir'")["run_id"].to_pylist()
        listing = f"`{command_line('runs', log=log.path)}` lists native runs, `{command_line('import', log=log.path)}` adds run directories"
        raise DatasetExportError(no_run_message(run, log.path, filter(None, known), listing=listing))
    if len(found) > 1:  # two directories of one run id (a run and an edited copy, say): which one is the user's to say
        named = ", ".join(f"{r['import_id']} ({r['path']})" for r in found)
        raise DatasetExportError(f"run {run!r} names {len(found)} imported run directories: {named}; name one by its import id")
    return found[0]["import_id"], False


def resolve_inputs(log: EventLog, options: ExportOptions) -> ResolvedExport:
    """Check the options, import every path input (no-op when already imported) and name
    the log sources the views read."""
    frozen, minimum = check_options(options)
    sources: list[str] = []
    named: dict[str, list[str]] = {}  # each source as the user named it, for a source named twice
    native: list[str] = []
    roots: dict[str, str] = {}  # import id -> the path given: the same files elsewhere are one import, named where given

    def imported(path: Path, kind: str) -> str:
        result = import_path(log, path, kind)
        roots[result.import_id] = result.path
        return result.import_id

    for run in options.runs:
        source, is_native = _native_or_imported_run(log, run)
        sources.append(source)
        named.setdefault(source, []).append(f"--run {run}")
        if is_native:
            native.append(source)
    for run_dir in options.run_dirs:
        sources.append(imported(run_dir, "run_dir"))
        named.setdefault(sources[-1], []).append(f"--run-dir {run_dir}")
    accepted = None
    if options.accepted_release is not None:
        accepted = imported(options.accepted_release, "accepted_release")
        sources.append(accepted)
        named.setdefault(accepted, []).append(f"--accepted-release {options.accepted_release}")
    case_split = imported(options.case_split, "case_split") if options.case_split else None
    eligibility = None
    if options.eligibility_dir is not None and accepted is None:
        eligibility = imported(options.eligibility_dir, "gate_artifacts")
    semantic = imported(options.semantic_reward_dir, "gate_artifacts") if options.semantic_reward_dir else None
    twice = next((source for source in sources if len(named[source]) > 1), None)
    if twice is not None:  # one directory twice, or two directories of the same bytes (one import)
        raise DatasetExportError(f"{' and '.join(named[twice])} name the same source ({twice}, the same files): name it once")
    settings = ExportSettings(
        seed=options.seed,
        train_ratio=float(options.train_ratio),
        validation_ratio=float(options.validation_ratio),
        short_max_tokens=int(options.short_max_tokens),
        frozen=frozen,
        minimum_accepted_cases=minimum,
        require_all_validation_cases=options.require_all_validation_cases,
        one_rollout_per_case=options.one_rollout_per_case,
        allow_training_prohibited=options.allow_training_prohibited,
        case_split_import=case_split,
        eligibility_import=eligibility,
        semantic_import=semantic,
        accepted_release_import=accepted,
        sources=tuple(sources),
        native_runs=tuple(native),
        source_roots=tuple(sorted(roots.items())),
    )
    release = _resolved(options.accepted_release)
    paths = {
        "case_split": _resolved(options.case_split),
        "eligibility_dir": release / "eligibility" if release else _resolved(options.eligibility_dir),
        "semantic_reward_dir": _resolved(options.semantic_reward_dir),
        "accepted_release": release,
    }
    return ResolvedExport(settings, paths)


def raise_first_problem(con) -> None:
    found = con.execute("SELECT message FROM dataset_problems ORDER BY ordinal, position, subject, message LIMIT 1").fetchall()
    if found:
        raise DatasetExportError(found[0][0])


def _record(log: EventLog, out_dir: Path, manifest: dict[str, Any], settings: ExportSettings, heads: dict[str, list[Any]]) -> None:
    """The export's `dataset.exported` event, once: a rerun of an export recorded before it
    was cut short records the same event, under the same stream id, which the log holds (the
    same sources' heads: the same payload; a source that changed since makes another)."""
    payload = DatasetExported(out_dir=str(out_dir), manifest=manifest, inputs={**settings.as_dict(), "source_heads": heads})
    run_id = "dataset-" + sha256_bytes(canonical_json(payload.model_dump(mode="json")).encode("utf-8"))[:32]
    if log.sql("SELECT count(*) AS n FROM events WHERE run_id = ?", [run_id])["n"][0].as_py():
        return

    async def append() -> None:
        async with log.writer(run_id) as writer:
            await writer.emit(EventDraft(payload))

    run_blocking(append)
    try:
        log.seal([run_id])
    except LogLockedError:
        pass  # readers see live segments too; `eviscene log seal` catches up later


def export_dataset(log: EventLog, options: ExportOptions) -> tuple[dict[str, Any], dict[str, int]]:
    """Write the dataset; returns (manifest, rows written per file)."""
    log.require_writable()  # the export is recorded in the log: refused before any file is written
    out_dir = check_not_the_log("dataset output directory", Path(options.out_dir), log.path, output_folder="new")
    resolved = resolve_inputs(log, options)
    con = log.connect(views=False)
    try:
        # Where this snapshot's streams end, each proven to hold there the hash the walk computes:
        # what the export reads and records is what `log verify` passes, never an edit's leftover.
        read = source_heads(con, resolved.settings.streams_read)
        intact_heads(log.path, resolved.settings.streams_read, {run: (seq, head) for run, (seq, head) in read.items()})
        heads = {source: read[source] for source in sorted(resolved.settings.sources) if source in read}
        open_export(log, resolved.settings, con)
        raise_first_problem(con)
        release_unread(con, FILES_READ)
        with staged_directory(out_dir, "dataset output directory") as staging:
            manifest, written = write_dataset(con, staging, resolved.settings, resolved.paths, log_path=log.path, fmt=options.fmt,
                                              export_concurrency=options.export_concurrency)
            con.close()  # its snapshot holds the archive, which the record's seal writes
            # Recorded before the folder is in place: a folder is never there unrecorded (a
            # rerun could not record it: the folder must be new), and a record whose folder a
            # kill kept out is recorded again, once, by the rerun that writes the folder.
            _record(log, out_dir, manifest, resolved.settings, heads)
    finally:
        con.close()
    return manifest, written
