"""Collecting and checking each kind of importable source (seed 002's loaders and checks)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import orjson

from eviscene.imports.errors import ArtifactError
from eviscene.imports.files import (
    count_jsonl_objects, inside_import, iter_jsonl_objects, jsonl_field, parse_json_object, refuse_special_files,
    refuse_undecodable_name, text,
)
from eviscene.imports.plan import ImportedFile, ImportPlan
from eviscene.imports.runtime_store import runtime_store_file
from eviscene.redaction import CredentialFinder
from eviscene.rules.canonical import canonical_json_exact

ACCEPTED_RELEASE_SCHEMAS = frozenset(
    {"ifv-accepted-teacher-release-v2", "ifv-accepted-teacher-release-v3", "ifv-accepted-teacher-release-v4"}
)
GATE_SUFFIXES = {".sft_eligibility.json": "sft_eligibility", ".semantic_reward.json": "semantic_reward"}
# Optional JSONL files of a run directory, by kind.
RUN_JSONL_FILES = ("trajectory_scores", "perception_trajectories", "trajectory_sft")
# The seed runner's other run-directory files (`<kind>.jsonl`, summary.json), each checked
# row by row; any further file is kept verbatim as a `run_file`.
RUN_TABLE_FILES = (
    "predictions", "episode_predictions", "run_results", "process_metrics", "reference_chain_metrics",
    "rollout_groups", "post_rollout_rewards",
)


def detect_kind(path: Path) -> str:
    if path.is_file():
        if path.name.endswith(".jsonl"):
            return "case_split"
        raise ArtifactError(f"cannot import the file {path}: only a case split (.jsonl) is imported as a single file")
    if not path.is_dir():
        raise ArtifactError(f"no such file or directory: {path}")
    if (path / "accepted_release_manifest.json").is_file():
        return "accepted_release"
    if (path / "run_manifest.json").is_file():
        return "run_dir"
    if any(any(path.rglob(f"*{suffix}")) for suffix in GATE_SUFFIXES):
        return "gate_artifacts"
    raise ArtifactError(
        f"cannot tell what {path} is: expected a run directory (run_manifest.json), an accepted release "
        "(accepted_release_manifest.json), a directory of *.sft_eligibility.json / *.semantic_reward.json "
        "files, or a case split (.jsonl)"
    )


def plan_import(path: Path, kind: str | None = None) -> ImportPlan:
    path = path.expanduser().resolve()
    refuse_undecodable_name(path)  # a UTF-8 name can link to a folder whose name is not: the log records where it leads
    refuse_special_files(path)
    kind = kind or detect_kind(path)
    collect = {
        "run_dir": collect_run_dir,
        "accepted_release": collect_accepted_release,
        "case_split": collect_case_split,
        "gate_artifacts": collect_gate_artifacts,
    }.get(kind)
    if collect is None:
        raise ArtifactError(f"unknown import kind {kind!r}")
    plan = collect(path)
    refuse_credentials(plan.files)
    return plan


def _path_order(path: Path) -> tuple[str, ...]:
    """Path's own order (part by part), as a key: sorting with Path.__lt__ cost seconds at 100k files."""
    return path.parts


def _read(root: Path, path: Path, kind: str, relative: str | None = None, **metadata: Any) -> ImportedFile:
    relative = path.relative_to(root).as_posix() if relative is None else relative
    inside_import(root, relative)
    return ImportedFile(kind, path, relative, path.read_bytes(), metadata=metadata)


def _files_in_order(root: Path, skip: set[str]) -> list[tuple[str, str]]:
    """(relative path, path as text) of every file under `root` but those in `skip`, as
    `sorted(root.rglob("*"))` orders them (part by part; symlinked folders listed, not
    entered), read with os.walk: pathlib's globbing, relative_to and a Path per file cost
    seconds at 100k files."""
    found = []
    for folder, _, names in os.walk(root):
        parts = Path(folder).relative_to(root).parts
        prefix = "".join(f"{part}/" for part in parts)
        found += [((*parts, name), folder, name) for name in names if prefix + name not in skip]
    found.sort(key=lambda item: item[0])
    return [("/".join(parts), os.path.join(folder, name)) for parts, folder, name in found]


def _episode_of_trace(trace: dict[str, Any], name: str) -> str:
    """Seed: `str(trace.get("image_id") or trace_path.stem).strip()`."""
    return text(trace.get("image_id") or Path(name).stem)


def _run_files(root: Path) -> tuple[list[ImportedFile], dict[str, Any]]:
    """A run directory's files (manifest, traces, JSONL files, each checked) and its manifest."""
    manifest_path = root / "run_manifest.json"
    if not manifest_path.is_file():
        raise ArtifactError(f"run directory has no run_manifest.json: {root}")
    manifest_file = _read(root, manifest_path, "run_manifest")
    manifest = parse_json_object(manifest_path, manifest_file.content)
    files = [manifest_file]
    trace_files: dict[str, ImportedFile] = {}
    traces_folder = root / "traces"
    names = _trace_names(root, traces_folder) if traces_folder.is_dir() else []
    folder_text = str(traces_folder)
    for name in names:
        path = os.path.join(folder_text, name)
        with open(path, "rb") as handle:
            item = ImportedFile("trace", path, f"traces/{name}", handle.read())
        trace = parse_json_object(path, item.content)  # by orjson where that provably reads as Python does
        episode_id = _episode_of_trace(trace, name)
        if episode_id in trace_files:
            raise ArtifactError(
                f"duplicate episode {episode_id} in {os.path.basename(trace_files[episode_id].path)} and {name} ({root})"
            )
        item.metadata["episode_id"] = episode_id
        trace_files[episode_id] = item
        files.append(item)
    for kind in RUN_JSONL_FILES:
        path = root / f"{kind}.jsonl"
        if not path.is_file():
            continue
        item = _read(root, path, kind)
        if kind in ("perception_trajectories", "trajectory_sft"):
            item.rows = _count_episode_rows(path, item.content, kind)
        else:
            item.rows = count_jsonl_objects(path, item.content)
        files.append(item)
    return files, manifest


def _trace_names(root: Path, folder: Path) -> list[str]:
    """The seed's sorted(glob("traces/*.json")), without pathlib's per-path cost: the names
    of the trace files in `folder`, each link among them checked to stay inside `root`. Only
    a link can lead out of a folder that is inside, so only links are resolved (resolving
    every trace would cost seconds at 100k files)."""
    inside_import(root, "traces")
    entries = sorted((entry.name, entry.is_symlink()) for entry in os.scandir(folder) if entry.name.endswith(".json"))
    for name, is_link in entries:
        if is_link:
            inside_import(root, f"traces/{name}")
    return [name for name, _ in entries]


def _count_episode_rows(path: Path, content: bytes, kind: str) -> int:
    """Rows of a file with one row per episode: each names its episode, once. Seed 002 keys a
    perception example by its episode_id as written (` a-r0 ` is not `a-r0`: it matches no
    trace); a trajectory row's is read as the traces' are, stripped."""
    seen: dict[str, int] = {}
    perception = kind == "perception_trajectories"
    what = "perception episode" if perception else "trajectory episode"
    for number, fields in jsonl_field(path, content, ("episode_id", "case_id", "perception") if perception else ("episode_id",)):
        value = fields[0]
        episode_id = value if perception and isinstance(value, str) and value.strip() else text(value)
        if not episode_id:
            raise ArtifactError(f"{path}:{number}: {what} row lacks episode_id")
        if perception and (problem := _perception_example_problem(*fields)):
            raise ArtifactError(f"{path}:{number}: {what} {problem}")
        if episode_id in seen:
            raise ArtifactError(f"{path}:{number}: duplicate {what} {episode_id} (first on line {seen[episode_id]})")
        seen[episode_id] = number
    return len(seen)


def _perception_example_problem(episode_id: Any, case_id: Any, perception: Any) -> str | None:
    """What seed 002's `PerceptionExample.model_validate(row)` refuses in a row that names its
    episode: an id or case id that is no string (17 would reach the dataset, and turn a Parquet
    column into JSON), no case id, or no perception report with its `ocr_text` (the example's
    target: without it the row teaches nothing)."""
    if not isinstance(episode_id, str):
        return f"row has episode_id {_short(episode_id)}: it must be a string"
    if case_id is None:
        return f"{episode_id} lacks case_id"
    if not isinstance(case_id, str):
        return f"{episode_id} has case_id {_short(case_id)}: it must be a string"
    if perception is None:
        return f"{episode_id} lacks perception (the report the example teaches)"
    if not isinstance(perception, dict) or not isinstance(perception.get("ocr_text"), str):
        return f"{episode_id} has perception {_short(perception)}: it must be an object holding an ocr_text string"
    return None


def _short(value: Any) -> str:
    shown = canonical_json_exact(value)  # an integer past 64 bits too
    return shown if len(shown) <= 80 else shown[:77] + "..."


def _run_metadata(manifest: dict[str, Any]) -> dict[str, Any]:
    benchmark = manifest.get("benchmark") if isinstance(manifest.get("benchmark"), dict) else {}
    return {
        "run_id": manifest.get("run_id"),
        "git_commit": manifest.get("git_commit"),
        "release_id": benchmark.get("release_id"),
    }


def refuse_credentials(files: Iterable[ImportedFile]) -> None:
    """Refuse files holding what looks like a credential, naming the first by file and line:
    an import keeps its files byte for byte (`materialize` gives them back so), so a key in
    one would reach the log, `runs`, reports and every export. A run manifest, a
    configuration, is read field by field; the rest (trajectories, traces) by the nets that
    take nothing but credentials (`CredentialFinder`)."""
    finder = CredentialFinder()
    for item in files:
        line = finder.first_line(item.content, json_text=item.relative_path.endswith((".json", ".jsonl")))
        if line is None and item.kind == "run_manifest" and (at := _credential_field(finder, item.content)) is not None:
            line = item.content.count(b"\n", 0, at) + 1
        if line is not None:
            raise ArtifactError(
                f"{item.path}:{line}: holds what looks like a credential (an API key, a token); an import keeps its files "
                "as they are, so it would reach the log and every export: remove it from the file (nothing was imported)"
            )


def _credential_field(finder: CredentialFinder, content: bytes) -> int | None:
    """Where a run manifest's first credential is (its value as the file spells it, else the
    file's start), or None; a manifest that is no JSON is its parser's to report."""
    try:
        found = finder.in_document(orjson.loads(content))
    except orjson.JSONDecodeError:
        return None
    if found is None:
        return None
    at = content.find(orjson.dumps(found)[1:-1])
    return max(at, 0)


def collect_run_dir(root: Path) -> ImportPlan:
    if not root.is_dir():
        raise ArtifactError(f"not a run directory: {root}")
    files, manifest = _run_files(root)
    files += _other_run_files(root, {f.relative_path for f in files})
    return ImportPlan("run_dir", root, files, _run_metadata(manifest))


def _other_run_files(root: Path, taken: set[str]) -> list[ImportedFile]:
    """Every file of a run directory `_run_files` did not read, so the import holds the whole
    directory (`materialize` writes it back byte for byte); links must stay inside it (`_read`)."""
    found = []
    for relative, path_text in _files_in_order(root, taken):
        path = Path(path_text)
        if not path.is_file():
            continue
        if path.name == "summary.json" and path.parent == root:
            item = _read(root, path, "summary", relative)
            parse_json_object(path, item.content)
        elif path.suffix == ".jsonl" and path.parent == root and path.stem in RUN_TABLE_FILES:
            item = _read(root, path, path.stem, relative)
            item.rows = count_jsonl_objects(path, item.content)
        else:
            item = _read(root, path, "run_file", relative)
        found.append(item)
    return found


def collect_case_split(path: Path) -> ImportPlan:
    """Seed `_load_fixed_case_split`: case_id, a train/validation split and split_group_id on
    every row, each case once, at least one row."""
    if not path.is_file():
        raise ArtifactError(f"no such case split file: {path}")
    item = ImportedFile("case_split", path, "", path.read_bytes())
    seen: set[str] = set()
    for number, row in iter_jsonl_objects(path, item.content):
        case_id = text(row.get("case_id", ""))
        if not case_id or text(row.get("split", "")) not in {"train", "validation"} or not text(row.get("split_group_id", "")):
            raise ArtifactError(
                f"{path}:{number}: fixed case split rows require case_id, train/validation split, and split_group_id"
            )
        if case_id in seen:
            raise ArtifactError(f"{path}:{number}: duplicate fixed case split case_id: {case_id}")
        seen.add(case_id)
    if not seen:
        raise ArtifactError(f"fixed case split is empty: {path}")
    item.rows = len(seen)  # one case per row
    return ImportPlan("case_split", path, [item], {"cases": len(seen)})


def _gate_files(root: Path, base: Path) -> list[ImportedFile]:
    """Seed `_load_gate_artifacts` for each suffix: every artifact names its episode, once."""
    files = []
    for suffix, kind in GATE_SUFFIXES.items():
        seen: dict[str, Path] = {}
        for path in sorted(base.rglob(f"*{suffix}"), key=_path_order):
            item = _read(root, path, kind)
            payload = parse_json_object(path, item.content)
            rollout = payload.get("rollout") if isinstance(payload.get("rollout"), dict) else {}
            episode_id = text(payload.get("episode_id") or rollout.get("episode_id", ""))
            if not episode_id:
                raise ArtifactError(f"gate artifact lacks episode_id: {path}")
            if episode_id in seen:
                raise ArtifactError(f"duplicate gate artifact episode_id: {episode_id} ({seen[episode_id]} and {path})")
            seen[episode_id] = path
            item.metadata["episode_id"] = episode_id
            files.append(item)
    return files


def collect_gate_artifacts(root: Path) -> ImportPlan:
    if not root.is_dir():
        raise ArtifactError(f"not a directory of gate artifacts: {root}")
    files = _gate_files(root, root)
    counts = {kind: sum(f.kind == kind for f in files) for kind in GATE_SUFFIXES.values()}
    return ImportPlan("gate_artifacts", root, files, counts)


def _selected_episodes(root: Path, manifest: dict[str, Any]) -> tuple[ImportedFile, dict[str, dict[str, Any]]]:
    """Seed `_load_canonical_accepted_release`: the selected rows, each episode and case once,
    each with a passing deterministic gate, as many cases as the manifest says."""
    path = root / "selected_episodes.jsonl"
    content = inside_import(root, path.name).read_bytes() if path.is_file() else b""
    item = ImportedFile("selected_episodes", path, "selected_episodes.jsonl", content)
    selected: dict[str, dict[str, Any]] = {}
    cases: set[str] = set()
    for number, row in iter_jsonl_objects(path, content):
        episode_id, case_id = text(row.get("episode_id", "")), text(row.get("case_id", ""))
        if not episode_id or not case_id or not text(row.get("source_trace_sha256", "")):
            raise ArtifactError(
                f"{path}:{number}: accepted-release selected episode requires case_id, episode_id and source_trace_sha256"
            )
        if episode_id in selected:
            raise ArtifactError(f"accepted-release has duplicate episode_id: {episode_id}")
        if case_id in cases:
            raise ArtifactError(f"accepted-release has duplicate selected case_id: {case_id}")
        if row.get("deterministic_hard_gate_pass") is not True:
            raise ArtifactError(f"accepted-release contains a selected episode without a passing deterministic gate: {episode_id}")
        selected[episode_id] = row
        cases.add(case_id)
    try:
        expected = int(manifest.get("accepted_case_count", -1))
    except (TypeError, ValueError):
        raise ArtifactError(f"accepted-release accepted_case_count is not an integer: {manifest.get('accepted_case_count')!r}") from None
    if expected != len(cases):
        raise ArtifactError(f"accepted-release accepted_case_count does not match selected episodes: {expected} != {len(cases)}")
    if not selected:
        raise ArtifactError("accepted-release selected_episodes.jsonl is empty")
    item.rows = len(selected)
    return item, selected


def collect_accepted_release(root: Path) -> ImportPlan:
    manifest_file = _read(root, root / "accepted_release_manifest.json", "accepted_release_manifest")
    manifest = parse_json_object(manifest_file.path, manifest_file.content)
    schema = manifest.get("schema_version")
    if schema not in ACCEPTED_RELEASE_SCHEMAS:
        raise ArtifactError(f"accepted-release has unsupported schema: {schema!r}")
    if not (root / "run_manifest.json").is_file():
        raise ArtifactError("accepted-release is missing run_manifest.json")
    if not (root / "eligibility").is_dir():
        raise ArtifactError("accepted-release is missing eligibility/")
    selected_file, selected = _selected_episodes(root, manifest)
    files, run_manifest = _run_files(root)
    files += [manifest_file, selected_file]
    for trace_file in [f for f in files if f.kind == "trace"]:
        episode_id = trace_file.metadata["episode_id"]
        row = selected.get(episode_id)
        if row is None:
            raise ArtifactError(f"accepted-release trace is not listed as selected: {episode_id}")
        if text(row.get("source_trace_sha256", "")) != trace_file.sha256:
            raise ArtifactError(f"accepted-release trace SHA-256 mismatch: {episode_id}")
        required = schema == "ifv-accepted-teacher-release-v4" and text(row.get("decision_policy_version", "")) == "unified-react-v1"
        store = runtime_store_file(root, row, required=required)
        if store is not None:
            files.append(store)
    action_only = root / "action_only.jsonl"
    if action_only.is_file():
        item = _read(root, action_only, "action_only")
        item.rows = count_jsonl_objects(action_only, item.content)
        files.append(item)
    files += _gate_files(root, root / "eligibility")
    metadata = {**_run_metadata(run_manifest), "schema_version": schema, "selected_episodes": len(selected)}
    return ImportPlan("accepted_release", root, files, metadata)
