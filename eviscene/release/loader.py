"""Load a benchmark release: its manifest, its public cases, and checks on their images.

Layout (DESIGN §2): ``<release>/manifest.json``, ``<release>/runtime_input/cases.jsonl``,
``<release>/runtime_input/images/…``, ``<release>/private/…``. Every path a release
names, and its own manifest and cases file, must stay inside the release root, symlinks included. Only the public fields of a
case row (``case_id``, ``image_path``, ``image_sha256``) ever leave this module.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from eviscene.errors import ReleaseError
from eviscene.release.case_image import over_file_limit
from eviscene.release.jsonl import read_jsonl_numbered
from eviscene.rules.jsonl import parse_json
from eviscene.rules.paths import PathEscapeError, not_a_file, resolve_inside, special_file_kind

RUNTIME_RELEASE_SCHEMA_VERSION = "ifv-runtime-release-v0.3"
SCORING_PACKAGE_SCHEMA_VERSION = "ifv-scoring-gold-v1"
ACCEPTED_SCHEMA_VERSIONS = (RUNTIME_RELEASE_SCHEMA_VERSION, SCORING_PACKAGE_SCHEMA_VERSION)

REQUIRED_MANIFEST_STRINGS = (
    "release_id",
    "release_stage",
    "runtime_contract_version",
    "input_mode",
    "decision_policy_version",
)
# Artifacts that are single files; `corpus` may be a directory (pages.jsonl + images/).
FILE_ARTIFACTS = (
    "evaluation_gold",
    "classification_protocol",
    "process_reference_protocol",
    "source_access_policy",
)
REQUIRED_ARTIFACTS = ("evaluation_gold",)

_SHA256_HEX = re.compile(r"[0-9a-fA-F]{64}")
_CHUNK = 1024 * 1024


@dataclass(frozen=True)
class ReleaseArtifacts:
    """Resolved paths of the release's declared artifacts; None when not declared."""

    evaluation_gold: Path | None
    classification_protocol: Path | None
    process_reference_protocol: Path | None
    source_access_policy: Path | None
    corpus: Path | None


@dataclass(frozen=True)
class Release:
    """A loaded release manifest. `root`, `manifest_path` and `cases_path` are resolved."""

    root: Path
    manifest_path: Path
    manifest: dict[str, Any] = field(hash=False)
    schema_version: str
    release_id: str
    release_stage: str
    runtime_contract_version: str
    input_mode: str
    decision_policy_version: str
    label_set: tuple[str, ...]
    artifacts: ReleaseArtifacts
    cases_path: Path
    is_scoring_package: bool


@dataclass(frozen=True)
class Case:
    """One public case: all the agent may ever see of a row in cases.jsonl."""

    case_id: str
    image_path: str
    """As written in the row, relative to the release root."""
    image_file: Path
    """Resolved; inside the release root."""
    image_sha256: str
    """Lower-case hex."""
    row: str = field(default="", compare=False, repr=False)
    """`CASES_FILE:LINE` it was read from, for an error about it (not shown to the agent)."""


def sha256_file(path: str | Path) -> str:
    """Hex sha256 of a file's bytes, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        for chunk in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def file_descriptor(path: str | Path | None) -> dict[str, str] | None:
    """``{"path": <resolved>, "sha256": …}`` for an existing file, else None (seed semantics)."""
    if path is None:
        return None
    path = Path(path)
    if not path.is_file():
        return None
    return {"path": str(path.resolve()), "sha256": sha256_file(path)}


def _path_inside(root: Path, relative: Any, *, what: str) -> Path:
    """`relative` resolved inside the release root (`resolve_inside`), else a ReleaseError."""
    try:
        return resolve_inside(root, relative, root_name="release root")
    except PathEscapeError as exc:
        raise ReleaseError(f"{what}: {exc}") from None


def named_cases_file(given: str | Path) -> Path:
    """The cases file the user names: a release's cases file, or the release's folder, its
    runtime_input folder or its manifest.json, each naming the release's own (`--benchmark`
    and `EvalOptions.benchmark` alike)."""
    path = Path(given).expanduser()
    if path.is_dir():
        found = [cases for cases in (path / "runtime_input" / "cases.jsonl", path / "cases.jsonl") if cases.is_file()]
        if not found:
            raise ReleaseError(f"{given} is a folder with no runtime_input/cases.jsonl: give a release's cases file")
        return found[0]
    if path.name == "manifest.json" and (path.parent / "runtime_input" / "cases.jsonl").is_file():
        return path.parent / "runtime_input" / "cases.jsonl"
    return path


def _release_files(cases_path: str | Path) -> tuple[Path, Path]:
    """The release root (the cases file's grandparent as named, that folder itself resolved)
    and the cases file inside it, links followed. The release's own files stay inside it as
    every path it names does: a cases file or runtime_input folder that is a link out of it is
    refused, never followed (to another release's manifest, gold and images)."""
    named = Path(os.path.abspath(named_cases_file(cases_path)))  # `..` taken out: its last two parts are names
    root = named.parent.parent.resolve()
    return root, _path_inside(root, named.relative_to(named.parent.parent).as_posix(), what=f"{named}: benchmark cases file")


def cases_file(cases_path: str | Path) -> Path:
    """A release's cases file named by the user, resolved (`_release_files`): what a run records."""
    return _release_files(cases_path)[1]


def _read_manifest(root: Path, cases_path: Path) -> tuple[Path, dict[str, Any]]:
    """The release manifest's path (inside the release, `_path_inside`) and its object."""
    manifest_path = _path_inside(root, "manifest.json", what=f"{root / 'manifest.json'}: release manifest")
    kind = special_file_kind(manifest_path)
    if kind:
        raise ReleaseError(f"{manifest_path}: the release manifest is {kind}, not a regular file")
    try:
        text = manifest_path.read_text(encoding="utf-8")
    except FileNotFoundError:
        # Most often the cases path given is some other file of the release (its manifest, say).
        raise ReleaseError(
            f"{manifest_path}: release manifest not found; {cases_path} should be a release's "
            "runtime_input/cases.jsonl, two levels below its manifest.json"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ReleaseError(f"{manifest_path}: cannot read release manifest: {exc}") from None
    try:
        manifest = parse_json(text)
    except ValueError as exc:
        raise ReleaseError(f"{manifest_path}: malformed JSON: {exc}") from None
    if not isinstance(manifest, dict):
        raise ReleaseError(f"{manifest_path}: release manifest must be a JSON object")
    return manifest_path, manifest


def _required_string(manifest: dict[str, Any], key: str, manifest_path: Path) -> str:
    value = manifest.get(key)
    if not isinstance(value, str) or not value.strip():
        raise ReleaseError(
            f"{manifest_path}: field {key!r} must be a non-empty string, got {value!r}"
        )
    return value


def _label_set(manifest: dict[str, Any], manifest_path: Path) -> tuple[str, ...]:
    labels = manifest.get("label_set")
    if (
        not isinstance(labels, list)
        or not labels
        or not all(isinstance(label, str) and label.strip() for label in labels)
    ):
        raise ReleaseError(
            f"{manifest_path}: field 'label_set' must be a non-empty list of non-empty strings, got {labels!r}"
        )
    if len(labels) != len(set(labels)):
        raise ReleaseError(f"{manifest_path}: field 'label_set' repeats a label: {labels!r}")
    return tuple(labels)


def _artifacts(manifest: dict[str, Any], root: Path, manifest_path: Path) -> ReleaseArtifacts:
    declared = manifest.get("artifacts")
    if not isinstance(declared, dict):
        raise ReleaseError(f"{manifest_path}: field 'artifacts' must be an object, got {declared!r}")
    resolved: dict[str, Path | None] = {}
    for name in (*FILE_ARTIFACTS, "corpus"):
        relative = declared.get(name)
        if relative is None:
            if name in REQUIRED_ARTIFACTS:
                raise ReleaseError(f"{manifest_path}: required artifact {name!r} is not declared")
            resolved[name] = None
            continue
        what = f"{manifest_path}: artifact {name!r}"
        path = _path_inside(root, relative, what=what)
        if name in FILE_ARTIFACTS and not path.is_file():
            raise ReleaseError(f"{what}: file {relative!r} {not_a_file(path)} ({path})")
        if name == "corpus" and not path.exists():
            raise ReleaseError(f"{what}: path {relative!r} does not exist ({path})")
        resolved[name] = path
    return ReleaseArtifacts(**resolved)


def load_release(cases_path: str | Path) -> Release:
    """Load the release whose public cases are at ``<release>/runtime_input/cases.jsonl``.

    Accepts schema versions ``ifv-runtime-release-v0.3`` and ``ifv-scoring-gold-v1`` (a
    reviewed scoring package: same layout, ``is_scoring_package=True``).
    """
    root, cases_path = _release_files(cases_path)
    if not cases_path.is_file():
        kind = special_file_kind(cases_path)
        raise ReleaseError(f"{cases_path}: benchmark cases file " + (f"is {kind}, not a regular file" if kind else "not found"))
    manifest_path, manifest = _read_manifest(root, cases_path)

    schema_version = manifest.get("schema_version")
    if schema_version not in ACCEPTED_SCHEMA_VERSIONS:
        raise ReleaseError(
            f"{manifest_path}: unsupported schema_version {schema_version!r}; "
            f"accepted: {', '.join(ACCEPTED_SCHEMA_VERSIONS)}"
        )
    strings = {key: _required_string(manifest, key, manifest_path) for key in REQUIRED_MANIFEST_STRINGS}
    _check_stage_spelling(strings["release_stage"], manifest_path)
    return Release(
        root=root,
        manifest_path=manifest_path,
        manifest=manifest,
        schema_version=schema_version,
        label_set=_label_set(manifest, manifest_path),
        artifacts=_artifacts(manifest, root, manifest_path),
        cases_path=cases_path,
        is_scoring_package=schema_version == SCORING_PACKAGE_SCHEMA_VERSION,
        **strings,
    )


# The stages rules read by name: `development_subset` keeps a release's episodes out of training.
KNOWN_STAGES = ("development_subset", "frozen_eval")


def _check_stage_spelling(stage: str, manifest_path: Path) -> None:
    """A stage is free text, but one spelled as a known stage's variant (`Development_Subset`,
    `development-subset`) would be read as no such stage: a development subset made trainable."""
    for known in KNOWN_STAGES:
        if stage != known and stage.strip().lower().replace("-", "_").replace(" ", "_") == known:
            raise ReleaseError(f"{manifest_path}: release_stage {stage!r} is no stage EviScene knows; write {known!r}")


def _private_locations(release: Release) -> list[Path]:
    """Places an image must never point into: a case row naming them would hand
    private material (gold, protocols, policy) to the agent as its input. The corpus is
    the agent's offline web, not private, so it is not listed."""
    artifacts = release.artifacts
    declared = (
        artifacts.evaluation_gold,
        artifacts.classification_protocol,
        artifacts.process_reference_protocol,
        artifacts.source_access_policy,
    )
    return [release.root / "private", release.manifest_path, *(p for p in declared if p is not None)]


def load_cases(release: Release) -> list[Case]:
    """Read and check the release's cases.jsonl, in file order.

    Each row needs a ``case_id`` (a string without surrounding whitespace), an
    ``image_path`` inside the release root and outside ``private/`` and the declared
    artifacts, and a 64-hex ``image_sha256``. Other fields are ignored and never forwarded.
    """
    path = release.cases_path
    private = _private_locations(release)
    first_line: dict[str, int] = {}
    cases: list[Case] = []
    for line_number, row in read_jsonl_numbered(path):
        where = f"{path}:{line_number}"
        case_id = row.get("case_id")
        if not isinstance(case_id, str) or not case_id.strip():
            raise ReleaseError(f"{where}: 'case_id' must be a non-empty string, got {case_id!r}")
        if case_id != case_id.strip():
            raise ReleaseError(f"{where}: 'case_id' {case_id!r} has leading or trailing whitespace")
        if "\x1e" in case_id or "\x1f" in case_id:  # the log's hash chain keeps these two to itself (store/chain.py)
            raise ReleaseError(f"{where}: 'case_id' {case_id!r} holds U+001E or U+001F, which a case id may not")
        if case_id in first_line:
            raise ReleaseError(
                f"{where}: duplicate case_id {case_id!r} (first on line {first_line[case_id]})"
            )
        first_line[case_id] = line_number
        image_sha256 = row.get("image_sha256")
        if not isinstance(image_sha256, str) or not _SHA256_HEX.fullmatch(image_sha256):
            raise ReleaseError(
                f"{where}: case {case_id!r}: 'image_sha256' must be 64 hex characters, got {image_sha256!r}"
            )
        image_path = row.get("image_path")
        image_file = _path_inside(release.root, image_path, what=f"{where}: case {case_id!r} image_path")
        for location in private:
            if image_file == location or image_file.is_relative_to(location):
                raise ReleaseError(
                    f"{where}: case {case_id!r} image_path {image_path!r} points into private "
                    f"release material ({location})"
                )
        cases.append(
            Case(
                case_id=case_id,
                image_path=image_path,
                image_file=image_file,
                image_sha256=image_sha256.lower(),
                row=where,
            )
        )
    return cases


def named(case: Case) -> str:
    """A case in an error: the row it was read from, and its id."""
    return f"{case.row}: case {case.case_id!r}" if case.row else f"case {case.case_id!r}"


def verify_case_images(cases: Iterable[Case]) -> None:
    """Check every case's image exists, is a file of a size read at all (`over_file_limit`) and
    matches its sha256.

    Hashes all images (streamed) and reports every problem in one ReleaseError, so a
    broken release is fixed in one pass rather than one image per run.
    """
    problems: list[str] = []
    for case in cases:
        if not case.image_file.is_file():
            problems.append(f"{named(case)}: image {case.image_path!r} {not_a_file(case.image_file, 'a picture')} ({case.image_file})")
            continue
        try:
            too_large = over_file_limit(case.image_file.stat().st_size)  # unread: a sparse file costs nothing on disk
            if too_large:
                problems.append(f"{named(case)}: image {case.image_path!r} is {too_large}: downscale or recompress it")
                continue
            actual = sha256_file(case.image_file)
        except OSError as exc:
            problems.append(f"{named(case)}: cannot read image {case.image_file}: {exc.strerror or exc}")
            continue
        if actual != case.image_sha256:
            problems.append(
                f"{named(case)}: image {case.image_path!r} sha256 mismatch: "
                f"expected {case.image_sha256}, actual {actual}"
            )
    if problems:
        shown = "; ".join(problems[:10])
        more = f"; and {len(problems) - 10} more" if len(problems) > 10 else ""
        raise ReleaseError(f"{len(problems)} case image(s) failed verification: {shown}{more}")
