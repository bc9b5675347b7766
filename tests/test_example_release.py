"""The bundled demo release `examples/eviscene-demo-v1`: formats (DESIGN §2), the
reference chains behind every case, the source-access policy, and that the generator
reproduces the committed files byte for byte."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import imagehash
import pytest
from PIL import Image

REPO = Path(__file__).resolve().parent.parent
RELEASE = REPO / "examples" / "eviscene-demo-v1"
GENERATOR = REPO / "scripts" / "make_example_release.py"
LABELS = ["authentic", "out_of_context", "manipulated", "unverifiable"]
LABEL_WORDS = ("authentic", "out_of_context", "out-of-context", "out of context", "manipulated", "unverifiable")
ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
SHA256 = re.compile(r"[0-9a-f]{64}")


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


def sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def load_generator():
    spec = importlib.util.spec_from_file_location("make_example_release", GENERATOR)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve their module through sys.modules
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def generator():
    return load_generator()


@pytest.fixture(scope="module")
def manifest() -> dict[str, Any]:
    return json.loads((RELEASE / "manifest.json").read_text("utf-8"))


@pytest.fixture(scope="module")
def cases() -> list[dict[str, Any]]:
    return read_jsonl(RELEASE / "runtime_input" / "cases.jsonl")


@pytest.fixture(scope="module")
def gold() -> dict[str, dict[str, Any]]:
    return {row["case_id"]: row for row in read_jsonl(RELEASE / "private" / "evaluation_gold.jsonl")}


@pytest.fixture(scope="module")
def pages() -> list[dict[str, Any]]:
    return read_jsonl(RELEASE / "corpus" / "pages.jsonl")


@pytest.fixture(scope="module")
def pages_by_url(pages) -> dict[str, dict[str, Any]]:
    return {page["url"]: page for page in pages}


@pytest.fixture(scope="module")
def policy() -> dict[str, Any]:
    return json.loads((RELEASE / "private" / "source_access_policy.json").read_text("utf-8"))


def blocked_by(policy: dict[str, Any], url: str, content_sha256: str) -> bool:
    host = url.split("/")[2]
    return (
        any(host == domain or host.endswith("." + domain) for domain in policy["blocked_domains"])
        or any(url.startswith(prefix) for prefix in policy["blocked_url_prefixes"])
        or content_sha256 in policy["blocked_content_sha256"]
    )


def case_image(case: dict[str, Any]) -> Image.Image:
    return Image.open(RELEASE / case["image_path"]).convert("RGB")


def corpus_image(path: str) -> Image.Image:
    return Image.open(RELEASE / "corpus" / path).convert("RGB")


# --- manifest, protocols, policy --------------------------------------------------------


def test_manifest_declares_the_release_and_its_artifacts(manifest):
    assert manifest["schema_version"] == "ifv-runtime-release-v0.3"
    assert manifest["release_id"] == "eviscene-demo-v1"
    assert manifest["release_stage"] == "development_subset"
    assert manifest["runtime_contract_version"]
    assert manifest["input_mode"] == "image_only"
    assert manifest["decision_policy_version"] == "unified-react-v1"
    assert manifest["label_set"] == LABELS
    assert set(manifest["artifacts"]) == {
        "evaluation_gold", "classification_protocol", "process_reference_protocol", "source_access_policy", "corpus"}
    for relative in manifest["artifacts"].values():
        assert not Path(relative).is_absolute() and ".." not in Path(relative).parts
        assert (RELEASE / relative).exists(), relative


def test_release_loads_with_the_project_loader(manifest, gold):
    from eviscene.release.gold import load_gold
    from eviscene.release.loader import load_cases, load_release, verify_case_images

    release = load_release(RELEASE / "runtime_input" / "cases.jsonl")
    loaded = load_cases(release)
    verify_case_images(loaded)
    assert [case.case_id for case in loaded] == sorted(gold)
    assert set(load_gold(release)) == set(gold)


def test_protocols_have_their_fields(manifest):
    artifacts = manifest["artifacts"]
    classification = json.loads((RELEASE / artifacts["classification_protocol"]).read_text("utf-8"))
    assert set(classification) == {"protocol_version", "label_set", "labels", "metrics", "abstention"}
    assert classification["label_set"] == LABELS and list(classification["labels"]) == LABELS
    assert all(classification["labels"].values()) and classification["metrics"]
    process = json.loads((RELEASE / artifacts["process_reference_protocol"]).read_text("utf-8"))
    assert set(process) == {"process_reference_protocol_version", "url_matching", "bridge_matching",
                            "benchmark_origin"}


def test_policy_uses_domains_prefixes_and_content_hashes(policy):
    assert set(policy) == {"policy_id", "blocked_domains", "blocked_url_prefixes", "blocked_content_sha256",
                           "cache_partition"}
    assert policy["policy_id"] and policy["cache_partition"]
    assert len(policy["blocked_domains"]) >= 2
    assert len(policy["blocked_url_prefixes"]) >= 2
    assert len(policy["blocked_content_sha256"]) >= 2
    assert all(SHA256.fullmatch(digest) for digest in policy["blocked_content_sha256"])


# --- public cases -----------------------------------------------------------------------


def test_case_rows_carry_only_public_fields_and_true_hashes(cases):
    assert len(cases) >= 28
    assert len({case["case_id"] for case in cases}) == len(cases)
    for case in cases:
        assert set(case) == {"case_id", "image_path", "image_sha256"}
        assert re.fullmatch(r"demo-\d{4}", case["case_id"])
        assert case["image_path"] == f"runtime_input/images/{case['case_id']}.jpg"
        assert sha256_file(RELEASE / case["image_path"]) == case["image_sha256"]
        assert case_image(case).width == 640


def test_labels_are_balanced_and_not_grouped_by_case_order(cases, gold):
    labels = [gold[case["case_id"]]["label"] for case in cases]
    counts = Counter(labels)
    assert set(counts) == set(LABELS) and min(counts.values()) >= 7
    assert len(set(counts.values())) == 1
    changes = sum(a != b for a, b in zip(labels, labels[1:]))
    assert changes >= len(labels) // 2, labels  # a grouped order would change label 3 times


# --- corpus -----------------------------------------------------------------------------


def test_pages_have_the_corpus_fields_and_true_hashes(pages):
    assert len({page["page_id"] for page in pages}) == len(pages)
    assert len({page["url"] for page in pages}) == len(pages)
    image_paths = set()
    for page in pages:
        assert list(page) == ["page_id", "url", "domain", "site_name", "title", "published", "author", "text",
                              "content_sha256", "images"]
        assert page["url"].startswith("https://") and page["url"].split("/")[2] == page["domain"]
        assert page["domain"].endswith(".example")
        assert page["published"] is None or ISO_DATE.fullmatch(page["published"])
        assert page["author"] is None or page["author"].strip()
        assert page["title"].strip() and page["text"].strip()
        assert hashlib.sha256(page["text"].encode("utf-8")).hexdigest() == page["content_sha256"]
        for image in page["images"]:
            assert set(image) == {"path", "sha256", "alt", "width", "height"}
            assert image["path"] not in image_paths
            image_paths.add(image["path"])
            assert sha256_file(RELEASE / "corpus" / image["path"]) == image["sha256"]
            assert corpus_image(image["path"]).size == (image["width"], image["height"])
            assert image["alt"].strip()
    on_disk = {f"images/{path.name}" for path in (RELEASE / "corpus" / "images").iterdir()}
    assert on_disk == image_paths
    assert sum(page["published"] is None for page in pages) >= 2
    assert sum(page["author"] is None for page in pages) >= 2


def test_corpus_copies_are_never_the_case_files(cases, pages):
    case_hashes = {case["image_sha256"] for case in cases}
    assert not case_hashes & {image["sha256"] for page in pages for image in page["images"]}


def test_nothing_an_agent_may_see_names_a_label(cases, pages, policy):
    visible = [case["case_id"] + " " + case["image_path"] for case in cases]
    for page in pages:
        if blocked_by(policy, page["url"], page["content_sha256"]):
            continue
        visible += [page["url"], page["title"], page["text"]]
        visible += [image["path"] + " " + image["alt"] for image in page["images"]]
    for text in visible:
        lowered = text.lower()
        assert not any(word in lowered for word in LABEL_WORDS), text


# --- gold reference chains --------------------------------------------------------------


def test_gold_rows_have_the_reference_chain_shape(cases, gold):
    assert set(gold) == {case["case_id"] for case in cases}
    for case_id, row in gold.items():
        assert set(row) == {"case_id", "label", "reference_chain"}
        assert row["label"] in LABELS
        chain = row["reference_chain"]
        assert set(chain) == {"sources", "facts", "bridges", "benchmark_origin"}
        source_ids = [source["source_id"] for source in chain["sources"]]
        assert len(set(source_ids)) == len(source_ids)
        assert all(source["role"] in {"origin", "bridge", "context"} for source in chain["sources"])
        assert 2 <= len(chain["facts"]) <= 4, case_id
        for fact in chain["facts"]:
            assert fact["statement"] and fact["source_ids"]
            assert set(fact["source_ids"]) <= set(source_ids)


def test_gold_sources_are_corpus_pages_with_the_same_content(gold, pages_by_url, policy):
    for row in gold.values():
        for source in row["reference_chain"]["sources"]:
            page = pages_by_url[source["url"]]
            assert page["content_sha256"] == source["content_sha256"]
            assert not blocked_by(policy, page["url"], page["content_sha256"]), source


def test_bridges_point_at_an_image_on_their_source_page(gold, pages_by_url):
    for row in gold.values():
        chain = row["reference_chain"]
        sources = {source["source_id"]: source for source in chain["sources"]}
        for bridge in chain["bridges"]:
            page = pages_by_url[sources[bridge["source_id"]]["url"]]
            assert bridge["reference_image_sha256"] in {image["sha256"] for image in page["images"]}


def test_chains_fit_their_labels(gold):
    for case_id, row in gold.items():
        chain = row["reference_chain"]
        roles = Counter(source["role"] for source in chain["sources"])
        if row["label"] == "unverifiable":
            assert not chain["bridges"] and roles["origin"] == 0, case_id
        else:
            assert roles["origin"] == 1 and chain["bridges"], case_id
            origin_id = next(s["source_id"] for s in chain["sources"] if s["role"] == "origin")
            assert origin_id in {bridge["source_id"] for bridge in chain["bridges"]}
            assert chain["benchmark_origin"], case_id


def test_every_fact_check_is_blocked_and_only_fact_checks_are(gold, pages, pages_by_url, policy):
    answers = set()
    for row in gold.values():
        for origin in row["reference_chain"]["benchmark_origin"]:
            page = pages_by_url[origin["url"]]
            assert page["content_sha256"] == origin["content_sha256"]
            assert blocked_by(policy, page["url"], page["content_sha256"])
            answers.add(page["url"])
    blocked = {page["url"] for page in pages if blocked_by(policy, page["url"], page["content_sha256"])}
    assert blocked == answers
    labelled = sum(bool(row["reference_chain"]["benchmark_origin"]) for row in gold.values())
    assert labelled >= len(gold) - 4


def test_there_are_more_distractor_pages_than_cases(gold, pages, policy):
    in_chains = {source["url"] for row in gold.values() for source in row["reference_chain"]["sources"]}
    free = [page for page in pages
            if page["url"] not in in_chains and not blocked_by(policy, page["url"], page["content_sha256"])]
    assert len(free) >= len(gold)
    assert sum(bool(page["images"]) for page in free) >= len(gold) // 2


# --- pictures ---------------------------------------------------------------------------


def test_perceptual_hashes_separate_copies_from_other_pictures(generator, cases, gold, pages):
    corpus = {image["sha256"]: imagehash.phash(corpus_image(image["path"]))
              for page in pages for image in page["images"]}
    for case in cases:
        row = gold[case["case_id"]]
        picture = case_image(case)
        # A post's white strip under the photo is trimmed, as any reverse-image search does.
        digests = {imagehash.phash(picture), imagehash.phash(generator.photo_region(picture))}
        if row["label"] == "unverifiable":
            nearest = min(d - other for d in digests for other in corpus.values())
            assert nearest > 12, (case["case_id"], nearest)
        else:
            references = [corpus[b["reference_image_sha256"]] for b in row["reference_chain"]["bridges"]]
            nearest = min(d - other for d in digests for other in references)
            assert nearest <= 16, (case["case_id"], nearest)


def test_claims_are_printed_legibly(generator, cases, gold):
    """OCR reads the printed claim back (spaces aside: the engine often drops them)."""
    rapidocr = pytest.importorskip("rapidocr_onnxruntime")
    import numpy as np

    engine = rapidocr.RapidOCR()
    claims = {case_id: story.claim for case_id, story in generator.assign_case_ids(generator.STORIES)}
    # Two posts (strip below the photo, taller than 3:2) and two bands over the photo; the
    # generator's --check-ocr reads all of them.
    posts = [case for case in cases if case_image(case).height > 480][:2]
    bands = [case for case in cases if case_image(case).height <= 480][:2]
    for case in posts + bands:
        result, _ = engine(np.asarray(case_image(case)))
        read = generator.squeeze(" ".join(line[1] for line in result or []))
        assert generator.squeeze(claims[case["case_id"]]) in read, (case["case_id"], read)


# --- reproducibility --------------------------------------------------------------------


# How far a picture may stray from the committed one through float rounding alone: numpy picks
# its kernels for powers, sines and exponentials by what the CPU offers (with AVX512, Intel's
# SVML for some), their last bits differ, and a value that rounds the other way moves a few
# pixels by a few levels once the picture is painted and JPEG-encoded. On a CI-like machine
# without AVX512, four of the committed pictures came out moved: at most 7 levels, on 0.16% of a
# picture's pixels. A changed caption, layout or colour moves far more.
ROUNDING_MAX_LEVELS = 16
ROUNDING_MAX_PIXELS = 0.01


def _rounding_only(committed: Path, regenerated: Path) -> bool:
    """Whether two pictures are the same up to float rounding (the same size, few pixels a few
    levels apart)."""
    import numpy as np

    old, new = (np.asarray(Image.open(path).convert("RGB"), dtype=np.int16) for path in (committed, regenerated))
    if old.shape != new.shape:
        return False
    moved = np.abs(old - new).max(axis=-1)
    return int(moved.max()) <= ROUNDING_MAX_LEVELS and float((moved > 0).mean()) <= ROUNDING_MAX_PIXELS


def test_generator_reproduces_the_committed_release(generator, tmp_path):
    """Byte for byte on a machine whose float math is the build machine's. Elsewhere every file
    but the pictures that rounding moved is the same once those pictures' new sha256 replace
    their old ones, and each of those pictures is the committed one up to rounding."""
    built_with = (RELEASE / "README.md").read_text("utf-8").rsplit("Built with: ", 1)[-1].strip()
    if built_with != generator.BUILD_LIBRARIES:
        pytest.skip(f"release built with {built_with}; this machine has {generator.BUILD_LIBRARIES}")
    out = tmp_path / "eviscene-demo-v1"
    generator.write_release(generator.build_release(), out)
    committed = {p.relative_to(RELEASE).as_posix(): sha256_file(p) for p in RELEASE.rglob("*") if p.is_file()}
    regenerated = {p.relative_to(out).as_posix(): sha256_file(p) for p in out.rglob("*") if p.is_file()}
    assert regenerated.keys() == committed.keys()
    differing = sorted(name for name in committed if regenerated[name] != committed[name])
    moved = [name for name in differing if name.endswith(".jpg")]
    for name in moved:
        assert _rounding_only(RELEASE / name, out / name), f"{name} differs by more than float rounding"
    for name in sorted(set(differing) - set(moved)):
        text = (RELEASE / name).read_text("utf-8")
        for picture in moved:
            text = text.replace(committed[picture], regenerated[picture])
        assert text == (out / name).read_text("utf-8"), f"{name} differs beyond the moved pictures' sha256"


def test_rounding_tolerance_refuses_a_changed_picture(tmp_path):
    """The tolerance above lets a picture's rounding through, not an edit: a caption's worth of
    changed pixels is refused, a few pixels a few levels off are not."""
    import numpy as np

    picture = RELEASE / "runtime_input" / "images" / "demo-0004.jpg"
    pixels = np.asarray(Image.open(picture).convert("RGB"), dtype=np.int16)
    rounded, edited = pixels.copy(), pixels.copy()
    rounded[100:104, 100:104] += np.where(rounded[100:104, 100:104] < 250, 3, -3).astype(np.int16)
    edited[100:140, 100:400] = 255 - edited[100:140, 100:400]  # a band of new lettering
    for name, array in (("rounded.png", rounded), ("edited.png", edited)):
        Image.fromarray(array.astype(np.uint8)).save(tmp_path / name)  # lossless: only the change differs
    reference = tmp_path / "reference.png"
    Image.fromarray(pixels.astype(np.uint8)).save(reference)
    assert _rounding_only(reference, tmp_path / "rounded.png")
    assert not _rounding_only(reference, tmp_path / "edited.png")
