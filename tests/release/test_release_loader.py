import hashlib
import json
import os
import re
import shutil
from pathlib import Path

import pytest

from eviscene.errors import ReleaseError
from eviscene.release import (
    Case,
    CaseImage,
    file_descriptor,
    load_cases,
    load_release,
    sha256_file,
    verify_case_images,
)
from eviscene.release.case_image import PictureFileTooLarge
from eviscene.release.gold import load_gold
from eviscene.tools.policy import load_source_policy


def _hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _row(case_id: str, image_path: str | None = None, sha: str | None = None) -> dict:
    return {
        "case_id": case_id,
        "image_path": image_path or f"runtime_input/images/{case_id}.jpg",
        "image_sha256": sha or _hash(b"x"),
    }


# --- load_release -------------------------------------------------------------------


def test_loads_runtime_release(make_release) -> None:
    cases_path = make_release()
    release = load_release(cases_path)
    root = cases_path.parent.parent.resolve()
    assert release.root == root
    assert release.manifest_path == root / "manifest.json"
    assert release.cases_path == cases_path.resolve()
    assert release.schema_version == "ifv-runtime-release-v0.3"
    assert release.release_id == "demo-release"
    assert release.release_stage == "development_subset"
    assert release.runtime_contract_version == "ifv-runtime-contract-v1"
    assert release.input_mode == "image_only"
    assert release.decision_policy_version == "unified-react-v1"
    assert release.label_set == ("authentic", "out_of_context", "manipulated", "unverifiable")
    assert release.is_scoring_package is False
    assert release.artifacts.evaluation_gold == root / "private" / "evaluation_gold.jsonl"
    assert release.artifacts.classification_protocol is None
    assert release.artifacts.corpus is None
    assert release.manifest["release_id"] == "demo-release"


def test_scoring_package_is_accepted(make_release, base_manifest) -> None:
    release = load_release(make_release(manifest=base_manifest(schema_version="ifv-scoring-gold-v1")))
    assert release.is_scoring_package is True
    assert release.schema_version == "ifv-scoring-gold-v1"


def test_optional_artifacts_resolve(make_release, base_manifest, tmp_path: Path) -> None:
    root = tmp_path / "release"
    (root / "private").mkdir(parents=True)
    (root / "private" / "classification_protocol.json").write_text("{}")
    (root / "private" / "source_access_policy.json").write_text("{}")
    (root / "corpus" / "images").mkdir(parents=True)
    manifest = base_manifest(
        artifacts={
            "evaluation_gold": "private/evaluation_gold.jsonl",
            "classification_protocol": "private/classification_protocol.json",
            "process_reference_protocol": None,
            "source_access_policy": "./private/source_access_policy.json",
            "corpus": "corpus",
        }
    )
    release = load_release(make_release(manifest=manifest))
    resolved_root = root.resolve()
    assert release.artifacts.classification_protocol == resolved_root / "private" / "classification_protocol.json"
    assert release.artifacts.source_access_policy == resolved_root / "private" / "source_access_policy.json"
    assert release.artifacts.process_reference_protocol is None
    assert release.artifacts.corpus == resolved_root / "corpus"


def test_unknown_schema_version_names_value_and_accepted(make_release, base_manifest) -> None:
    cases_path = make_release(manifest=base_manifest(schema_version="ifv-runtime-release-v0.2"))
    with pytest.raises(ReleaseError) as error:
        load_release(cases_path)
    message = str(error.value)
    assert "'ifv-runtime-release-v0.2'" in message
    assert "ifv-runtime-release-v0.3" in message and "ifv-scoring-gold-v1" in message


def test_missing_manifest(make_release) -> None:
    cases_path = make_release()
    (cases_path.parent.parent / "manifest.json").unlink()
    with pytest.raises(ReleaseError, match="manifest not found"):
        load_release(cases_path)


def test_a_release_file_given_for_the_cases_names_where_the_cases_are(make_release) -> None:
    cases = make_release()
    picture = cases.parent / "images" / "demo-0001.jpg"
    with pytest.raises(ReleaseError) as error:
        load_release(picture)
    assert str(error.value) == (
        f"{cases.parent.resolve() / 'manifest.json'}: release manifest not found; {picture} should be a release's "
        "runtime_input/cases.jsonl, two levels below its manifest.json"
    )
    # The release's folder and its manifest.json name its own cases, as `--benchmark` takes them.
    for release in (cases.parent.parent, cases.parent.parent / "manifest.json"):
        assert load_release(release).cases_path == cases.resolve()


def test_missing_cases_file(tmp_path: Path) -> None:
    with pytest.raises(ReleaseError, match="cases file not found"):
        load_release(tmp_path / "release" / "runtime_input" / "cases.jsonl")


@pytest.mark.parametrize("text", ["{not json", "[1, 2]", '{"a": 1, "a": 2}'])
def test_malformed_manifest(make_release, text: str) -> None:
    cases_path = make_release()
    manifest_path = cases_path.parent.parent / "manifest.json"
    manifest_path.write_text(text)
    with pytest.raises(ReleaseError) as error:
        load_release(cases_path)
    assert str(manifest_path.resolve()) in str(error.value)


@pytest.mark.parametrize(
    "field",
    ["release_id", "release_stage", "runtime_contract_version", "input_mode", "decision_policy_version"],
)
def test_missing_required_string_field(make_release, base_manifest, field: str) -> None:
    manifest = base_manifest()
    del manifest[field]
    with pytest.raises(ReleaseError, match=f"field '{field}' must be a non-empty string"):
        load_release(make_release(manifest=manifest))


@pytest.mark.parametrize(("stage", "known"), [("Development_Subset", "development_subset"), ("development-subset", "development_subset"),
                                             ("frozen-eval", "frozen_eval")])
def test_a_known_stage_spelled_otherwise_is_refused(make_release, base_manifest, stage: str, known: str) -> None:
    """`Development_Subset` read as no development subset: its episodes were exported for training."""
    path = make_release(manifest=base_manifest(release_stage=stage))
    with pytest.raises(ReleaseError) as refused:
        load_release(path)
    assert str(refused.value).endswith(f"release_stage {stage!r} is no stage EviScene knows; write {known!r}")
    assert load_release(make_release(manifest=base_manifest(release_stage="pilot_batch"))).release_stage == "pilot_batch"


@pytest.mark.parametrize("label_set", [None, [], ["authentic", ""], "authentic", ["a", "a"]])
def test_bad_label_set(make_release, base_manifest, label_set) -> None:
    manifest = base_manifest(label_set=label_set)
    if label_set is None:
        del manifest["label_set"]
    with pytest.raises(ReleaseError, match="label_set"):
        load_release(make_release(manifest=manifest))


def test_missing_artifacts_block(make_release, base_manifest) -> None:
    manifest = base_manifest()
    del manifest["artifacts"]
    with pytest.raises(ReleaseError, match="'artifacts' must be an object"):
        load_release(make_release(manifest=manifest))


def test_evaluation_gold_is_required(make_release, base_manifest) -> None:
    with pytest.raises(ReleaseError, match="required artifact 'evaluation_gold' is not declared"):
        load_release(make_release(manifest=base_manifest(artifacts={})))


def test_declared_artifact_that_does_not_exist(make_release, base_manifest) -> None:
    manifest = base_manifest(
        artifacts={
            "evaluation_gold": "private/evaluation_gold.jsonl",
            "classification_protocol": "private/missing_protocol.json",
        }
    )
    with pytest.raises(ReleaseError) as error:
        load_release(make_release(manifest=manifest))
    assert "'classification_protocol'" in str(error.value)
    assert "private/missing_protocol.json" in str(error.value)
    assert "does not exist" in str(error.value)


@pytest.mark.parametrize("escape", ["../outside.json", "private/../../outside.json", "ABSOLUTE", "SYMLINK"])
def test_artifact_escaping_root(make_release, base_manifest, tmp_path: Path, escape: str) -> None:
    outside = tmp_path / "outside.json"
    outside.write_text("{}")
    root = tmp_path / "release"
    if escape == "ABSOLUTE":
        escape = str(outside)
    elif escape == "SYMLINK":
        (root / "private").mkdir(parents=True)
        os.symlink(outside, root / "private" / "policy.json")
        escape = "private/policy.json"
    manifest = base_manifest(
        artifacts={"evaluation_gold": "private/evaluation_gold.jsonl", "source_access_policy": escape}
    )
    with pytest.raises(ReleaseError) as error:
        load_release(make_release(manifest=manifest))
    assert "'source_access_policy'" in str(error.value)
    assert repr(escape) in str(error.value)


def test_artifact_symlink_inside_root_is_fine(make_release, base_manifest, tmp_path: Path) -> None:
    root = tmp_path / "release"
    (root / "private").mkdir(parents=True)
    (root / "private" / "real_policy.json").write_text("{}")
    os.symlink(root / "private" / "real_policy.json", root / "private" / "policy.json")
    manifest = base_manifest(
        artifacts={"evaluation_gold": "private/evaluation_gold.jsonl", "source_access_policy": "private/policy.json"}
    )
    release = load_release(make_release(manifest=manifest))
    assert release.artifacts.source_access_policy == (root / "private" / "real_policy.json").resolve()


def _release_beside_another(make_release, base_manifest, tmp_path: Path) -> tuple[Path, Path]:
    """(tmp_path/release, tmp_path/other): two releases, the second's id `other-release`."""
    make_release(manifest=base_manifest(release_id="other-release")).parent.parent.rename(tmp_path / "other")
    return make_release().parent.parent.resolve(), (tmp_path / "other").resolve()


@pytest.mark.parametrize("link", ["runtime_input/cases.jsonl", "runtime_input"])
def test_a_cases_file_leading_out_of_its_release_is_refused(make_release, base_manifest, tmp_path: Path, link: str) -> None:
    """Links were followed before the release root was taken (the cases file's grandparent):
    a run over the release read another folder's manifest, gold and images, and imported that gold."""
    root, other = _release_beside_another(make_release, base_manifest, tmp_path)
    shutil.rmtree(root / link) if (root / link).is_dir() else (root / link).unlink()
    os.symlink(other / link, root / link)
    with pytest.raises(ReleaseError) as refused:
        load_release(root / "runtime_input" / "cases.jsonl")
    assert str(refused.value) == (
        f"{root}/runtime_input/cases.jsonl: benchmark cases file: path 'runtime_input/cases.jsonl' resolves to "
        f"{other}/runtime_input/cases.jsonl, outside the release root {root}"
    )


def test_a_manifest_leading_out_of_its_release_is_refused(make_release, base_manifest, tmp_path: Path) -> None:
    """It was read wherever it led: the run was another release's, by its id."""
    root, other = _release_beside_another(make_release, base_manifest, tmp_path)
    (root / "manifest.json").unlink()
    os.symlink(other / "manifest.json", root / "manifest.json")
    with pytest.raises(ReleaseError) as refused:
        load_release(root / "runtime_input" / "cases.jsonl")
    assert str(refused.value) == (
        f"{root}/manifest.json: release manifest: path 'manifest.json' resolves to {other}/manifest.json, "
        f"outside the release root {root}"
    )


def test_a_release_reached_through_links_above_its_files_loads(make_release, tmp_path: Path) -> None:
    """Only a release's own files leading out of it are refused: the folder above it, or the
    release folder itself, may be a link (as /tmp is on macOS)."""
    root = make_release().parent.parent.resolve()
    os.symlink(tmp_path, tmp_path.parent / f"{tmp_path.name}-link")
    os.symlink(root, tmp_path / "release-link")
    for named in (tmp_path.parent / f"{tmp_path.name}-link" / "release", tmp_path / "release-link"):
        release = load_release(named / "runtime_input" / "cases.jsonl")
        assert (release.root, release.manifest_path, release.cases_path, release.release_id) == (
            root, root / "manifest.json", root / "runtime_input" / "cases.jsonl", "demo-release"
        )


# --- load_cases ---------------------------------------------------------------------


def test_load_cases_keeps_file_order_and_only_public_fields(make_release) -> None:
    cases_path = make_release(images={"b-2": b"two", "a-1": b"one"})
    rows = [json.loads(line) for line in cases_path.read_text().splitlines()]
    rows[0]["label"] = "authentic"  # a gold-like extra field must not be carried
    rows[1]["image_sha256"] = rows[1]["image_sha256"].upper()
    cases_path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    release = load_release(cases_path)
    cases = load_cases(release)
    assert [case.case_id for case in cases] == ["b-2", "a-1"]
    assert cases[0] == Case(
        case_id="b-2",
        image_path="runtime_input/images/b-2.jpg",
        image_file=release.root / "runtime_input" / "images" / "b-2.jpg",
        image_sha256=_hash(b"two"),
    )
    assert cases[1].image_sha256 == _hash(b"one")  # normalised to lower case
    assert not hasattr(cases[0], "label")


def test_malformed_cases_jsonl_names_file_and_line(make_release) -> None:
    cases_path = make_release()
    with cases_path.open("a") as handle:
        handle.write('{"case_id": "demo-0003",\n')
    release = load_release(cases_path)
    with pytest.raises(ReleaseError, match="^" + re.escape(f"{release.cases_path}:3: malformed JSON")):
        load_cases(release)


def test_non_object_case_row(make_release) -> None:
    cases_path = make_release(cases=[_row("demo-0001"), ["demo-0002"]])
    release = load_release(cases_path)
    with pytest.raises(ReleaseError, match="^" + re.escape(f"{release.cases_path}:2: expected a JSON object")):
        load_cases(release)


@pytest.mark.parametrize(
    ("row", "fragment"),
    [
        ({"image_path": "runtime_input/images/a.jpg", "image_sha256": "0" * 64}, "'case_id' must be a non-empty string"),
        ({"case_id": "", "image_path": "runtime_input/images/a.jpg", "image_sha256": "0" * 64}, "'case_id' must be"),
        ({"case_id": 7, "image_path": "runtime_input/images/a.jpg", "image_sha256": "0" * 64}, "'case_id' must be"),
        ({"case_id": " a ", "image_path": "runtime_input/images/a.jpg", "image_sha256": "0" * 64}, "whitespace"),
        # the log's hash chain keeps these to itself (a NULL episode id hashes as U+001E)
        ({"case_id": "a\x1fb", "image_path": "runtime_input/images/a.jpg", "image_sha256": "0" * 64}, "holds U+001E or U+001F"),
        ({"case_id": "a\x1eb", "image_path": "runtime_input/images/a.jpg", "image_sha256": "0" * 64}, "holds U+001E or U+001F"),
        ({"case_id": "a", "image_sha256": "0" * 64}, "path must be a non-empty string"),
        ({"case_id": "a", "image_path": "", "image_sha256": "0" * 64}, "path must be a non-empty string"),
        ({"case_id": "a", "image_path": "runtime_input/images/a.jpg"}, "'image_sha256' must be 64 hex"),
        ({"case_id": "a", "image_path": "runtime_input/images/a.jpg", "image_sha256": "0" * 63}, "64 hex"),
        ({"case_id": "a", "image_path": "runtime_input/images/a.jpg", "image_sha256": "g" * 64}, "64 hex"),
    ],
)
def test_bad_case_rows_name_file_and_line(make_release, row: dict, fragment: str) -> None:
    release = load_release(make_release(cases=[_row("ok-1"), row]))
    with pytest.raises(ReleaseError) as error:
        load_cases(release)
    assert str(error.value).startswith(f"{release.cases_path}:2: ")
    assert fragment in str(error.value)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("case_id", "demo-0002\ud800", "\\ud800 is half of a character (a lone surrogate), which no UTF-8 text holds: line 1 column 23 (char 22)"),
        ("image_path", "runtime_input/images/\udc00.jpg",
         "\\udc00 is half of a character (a lone surrogate), which no UTF-8 text holds: line 1 column 62 (char 61)"),
    ],
)
def test_a_lone_surrogate_escape_in_a_case_is_refused_by_file_and_line(make_release, field: str, value: str, message: str) -> None:
    """`\\ud800` without its pair is valid JSON that reads as text no log, episode id hash or file
    name can hold: refused where it is written, not by a traceback after the episodes."""
    cases_path = make_release()
    rows = [json.loads(line) for line in cases_path.read_text(encoding="utf-8").splitlines()]
    rows[1][field] = value
    cases_path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")  # ASCII: the escape as written
    release = load_release(cases_path)
    with pytest.raises(ReleaseError) as error:
        load_cases(release)
    assert str(error.value) == f"{release.cases_path}:2: malformed JSON: {message}"


def test_duplicate_case_id_names_it_and_both_lines(make_release) -> None:
    release = load_release(make_release(cases=[_row("dup-1"), _row("other"), _row("dup-1")]))
    with pytest.raises(ReleaseError) as error:
        load_cases(release)
    message = str(error.value)
    assert message.startswith(f"{release.cases_path}:3: ")
    assert "duplicate case_id 'dup-1'" in message
    assert "line 1" in message


@pytest.mark.parametrize("image_path", ["../outside.jpg", "runtime_input/../../outside.jpg", "ABSOLUTE", "SYMLINK"])
def test_image_path_escaping_root(make_release, tmp_path: Path, image_path: str) -> None:
    outside = tmp_path / "outside.jpg"
    outside.write_bytes(b"x")
    if image_path == "ABSOLUTE":
        image_path = str(outside)
    elif image_path == "SYMLINK":
        link = tmp_path / "release" / "runtime_input" / "images" / "link.jpg"
        link.parent.mkdir(parents=True)
        os.symlink(outside, link)
        image_path = "runtime_input/images/link.jpg"
    release = load_release(make_release(cases=[_row("esc-1", image_path, _hash(b"x"))]))
    with pytest.raises(ReleaseError) as error:
        load_cases(release)
    assert "'esc-1'" in str(error.value)
    assert repr(image_path) in str(error.value)


def test_symlinked_images_directory_escaping_root(make_release, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "a.jpg").write_bytes(b"x")
    (tmp_path / "release" / "runtime_input").mkdir(parents=True)
    os.symlink(outside, tmp_path / "release" / "runtime_input" / "images")
    release = load_release(make_release(images={}, cases=[_row("a", "runtime_input/images/a.jpg", _hash(b"x"))]))
    with pytest.raises(ReleaseError, match="outside the release root"):
        load_cases(release)


def test_image_path_into_private_material_is_refused(make_release) -> None:
    release = load_release(make_release(cases=[_row("leak", "private/evaluation_gold.jsonl")]))
    with pytest.raises(ReleaseError, match="'leak'.*private release material"):
        load_cases(release)


def test_image_symlink_inside_root_is_fine(make_release, tmp_path: Path) -> None:
    cases_path = make_release(images={"a": b"one"})
    link = tmp_path / "release" / "runtime_input" / "images" / "alias.jpg"
    os.symlink("a.jpg", link)
    cases_path.write_text(json.dumps(_row("a", "runtime_input/images/alias.jpg", _hash(b"one"))) + "\n")
    cases = load_cases(load_release(cases_path))
    assert cases[0].image_file == (tmp_path / "release" / "runtime_input" / "images" / "a.jpg").resolve()
    verify_case_images(cases)


# --- verify_case_images, sha256_file, file_descriptor --------------------------------


def test_verify_case_images_passes_for_true_hashes(make_release) -> None:
    verify_case_images(load_cases(load_release(make_release())))


def test_verify_case_images_reports_mismatch_with_both_hashes(make_release) -> None:
    wrong = _hash(b"something else")
    release = load_release(
        make_release(
            images={"a": b"one"},
            cases=[_row("a", "runtime_input/images/a.jpg", wrong)],
        )
    )
    with pytest.raises(ReleaseError) as error:
        verify_case_images(load_cases(release))
    message = str(error.value)
    assert "'a'" in message and f"expected {wrong}" in message and f"actual {_hash(b'one')}" in message


def test_verify_case_images_reports_missing_file(make_release) -> None:
    release = load_release(make_release(images={}, cases=[_row("gone", "runtime_input/images/gone.jpg")]))
    with pytest.raises(ReleaseError, match="'gone'.*does not exist"):
        verify_case_images(load_cases(release))


def test_verify_case_images_says_a_folder_is_no_picture(make_release) -> None:
    """A folder named as a case's picture was said not to exist, which it plainly did."""
    release = load_release(make_release(images={}, cases=[_row("dir", "runtime_input/images")]))
    (release.root / "runtime_input" / "images").mkdir(parents=True)
    with pytest.raises(ReleaseError) as refused:
        verify_case_images(load_cases(release))
    assert "case 'dir': image 'runtime_input/images' is a folder, not a picture (" in str(refused.value)


def test_verify_case_images_reports_every_problem_at_once(make_release) -> None:
    images = {f"c{i:02d}": bytes([i]) for i in range(12)}
    cases = [_row(case_id, sha=_hash(b"wrong")) for case_id in images]
    release = load_release(make_release(images=images, cases=cases))
    with pytest.raises(ReleaseError, match=r"^12 case image\(s\) failed verification: .*and 2 more$"):
        verify_case_images(load_cases(release))


def test_verify_case_images_refuses_a_picture_file_over_the_limit_before_hashing_it(make_release) -> None:
    """A picture followed by padding decodes all the same, and a case's file was read whole: a
    sparse 3 GB "JPEG" (96 KB on disk) cost 3.6 GB of memory."""
    release = load_release(make_release(images={"a": b"one", "b": b"two"}))
    os.truncate(release.root / "runtime_input" / "images" / "a.jpg", 64 * 1024**2 + 1)  # sparse: nothing written
    with pytest.raises(ReleaseError) as refused:
        verify_case_images(load_cases(release))
    assert str(refused.value) == (
        f"1 case image(s) failed verification: {release.cases_path}:1: case 'a': image 'runtime_input/images/a.jpg' is "
        "67,108,865 bytes, above the file size limit of 67,108,864 bytes (64 MiB): downscale or recompress it"
    )


def test_a_picture_file_is_read_up_to_the_limit_and_refused_past_it(tmp_path: Path) -> None:
    """An episode and the tools read a case's picture whole (`CaseImage.of_file`, its bytes held
    while the episode runs), whatever its size."""
    picture = tmp_path / "a.jpg"
    picture.touch()
    os.truncate(picture, 64 * 1024**2)
    assert len(CaseImage.of_file(picture).data) == 67_108_864
    os.truncate(picture, 64 * 1024**2 + 1)
    with pytest.raises(PictureFileTooLarge) as refused:
        CaseImage.of_file(picture)
    assert str(refused.value) == f"{picture}: picture file is 67,108,865 bytes, above the file size limit of 67,108,864 bytes (64 MiB)"


def test_sha256_file_streams_large_files(tmp_path: Path) -> None:
    data = os.urandom(3 * 1024 * 1024 + 17)  # spans several 1 MiB chunks
    path = tmp_path / "big.bin"
    path.write_bytes(data)
    assert sha256_file(path) == hashlib.sha256(data).hexdigest()
    empty = tmp_path / "empty.bin"
    empty.write_bytes(b"")
    assert sha256_file(empty) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


def test_file_descriptor(tmp_path: Path) -> None:
    path = tmp_path / "sub" / ".." / "f.txt"
    (tmp_path / "sub").mkdir()
    (tmp_path / "f.txt").write_bytes(b"abc")
    assert file_descriptor(path) == {
        "path": str((tmp_path / "f.txt").resolve()),
        "sha256": "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
    }
    assert file_descriptor(None) is None
    assert file_descriptor(tmp_path / "absent") is None
    assert file_descriptor(tmp_path / "sub") is None  # a directory is not a file


@pytest.mark.parametrize(("case_id", "image_path"), [("nul", "runtime_input/images/a\x00.jpg"), ("loop", "runtime_input/images/loop.jpg")])
def test_unresolvable_image_path(make_release, tmp_path: Path, case_id: str, image_path: str) -> None:
    images = tmp_path / "release" / "runtime_input" / "images"
    images.mkdir(parents=True)
    os.symlink("loop.jpg", images / "loop.jpg")
    release = load_release(make_release(images={}, cases=[_row(case_id, image_path)]))
    with pytest.raises(ReleaseError, match=f"'{case_id}' image_path: path .* cannot be resolved"):
        load_cases(release)


# --- special files --------------------------------------------------------------------

# Each file a release is read from, replaced by a named pipe, and how loading it is refused:
# naming what it is, not calling it missing.
# Opening a pipe for reading waits for a writer, forever here: each is refused before it is
# opened, or the deadline fails the test.
PIPED = {
    "manifest.json": "{root}/manifest.json: the release manifest is a named pipe (FIFO), not a regular file",
    "runtime_input/cases.jsonl": "{root}/runtime_input/cases.jsonl: benchmark cases file is a named pipe (FIFO), not a regular file",
    "runtime_input/images/demo-0001.jpg": (
        "1 case image(s) failed verification: {root}/runtime_input/cases.jsonl:1: case 'demo-0001': image 'runtime_input/images/demo-0001.jpg' "
        "is a named pipe (FIFO), not a regular file ({root}/runtime_input/images/demo-0001.jpg)"
    ),
    "private/evaluation_gold.jsonl": (
        "{root}/manifest.json: artifact 'evaluation_gold': file 'private/evaluation_gold.jsonl' is a named pipe "
        "(FIFO), not a regular file ({root}/private/evaluation_gold.jsonl)"
    ),
    "private/source_access_policy.json": (
        "{root}/manifest.json: artifact 'source_access_policy': file 'private/source_access_policy.json' is a "
        "named pipe (FIFO), not a regular file ({root}/private/source_access_policy.json)"
    ),
}


@pytest.mark.parametrize("relative", PIPED)
def test_a_named_pipe_in_a_release_is_refused_without_being_opened(make_release, base_manifest, deadline, relative) -> None:
    artifacts = {"evaluation_gold": "private/evaluation_gold.jsonl", "source_access_policy": "private/source_access_policy.json"}
    cases_path = make_release(manifest=base_manifest(artifacts=artifacts))
    root = cases_path.parent.parent.resolve()
    (root / "private" / "source_access_policy.json").write_text('{"blocked_domains": ["a.org"]}', encoding="utf-8")
    (root / relative).unlink()
    os.mkfifo(root / relative)
    with deadline(60), pytest.raises(ReleaseError) as refused:
        release = load_release(cases_path)
        verify_case_images(load_cases(release))
        load_gold(release)
        load_source_policy(release.artifacts.source_access_policy)
    assert str(refused.value) == PIPED[relative].format(root=root)


def test_a_named_pipe_given_as_the_policy_is_refused_without_being_opened(tmp_path, deadline) -> None:
    os.mkfifo(tmp_path / "policy.json")
    with deadline(60), pytest.raises(ReleaseError) as refused:
        load_source_policy(tmp_path / "policy.json")
    assert str(refused.value) == f"{tmp_path / 'policy.json'}: the source access policy is a named pipe (FIFO), not a regular file"
