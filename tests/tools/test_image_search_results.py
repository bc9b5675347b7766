"""Reverse image search finds the same copies, in the same order, with the same verdicts,
however its work is shared: the bundled release's case images and a query against
`bench/tools.py`'s 10k-picture synthetic corpus, against expectations written out by hand
(a corpus picture by its sha256 prefix; the release's gold says case 1 has no earlier copy
and cases 2, 19 and 28 have). Then the sharing itself: a compared pair is computed once per
query picture, and a picture's derived grey versions are its own (a mirrored copy starts
without them)."""

from __future__ import annotations

import gc
import importlib.util
import weakref
from pathlib import Path

import numpy as np
import pytest

from eviscene.tools.corpus import Corpus
from eviscene.tools.image_align import grey_at, normalized_at
from eviscene.tools.image_compare import compare, mirrored
from eviscene.tools.image_index import ImageIndex
from eviscene.tools.images import prepare

ROOT = Path(__file__).resolve().parents[2]
RELEASE = ROOT / "examples" / "eviscene-demo-v1"

# case -> every compared corpus picture, in the order the search returns them:
# (sha256 prefix, compare's verdict, similarity to 2 decimals). Matches come first.
EXPECTED = {
    "demo-0001": [("49c7b088", False, 0.25), ("62b0728a", False, 0.20), ("66e2accd", False, 0.16),
                  ("1f5ecf41", False, 0.14), ("ddc63f42", False, 0.0), ("1da1eb7e", False, 0.0)],
    "demo-0002": [("1da1eb7e", True, 1.00), ("b3535951", True, 0.96), ("04b19709", False, 0.30), ("13e3c156", False, 0.11)],
    "demo-0019": [("dba35ece", True, 0.99), ("4608df55", True, 0.75), ("62b0728a", False, 0.23),
                  ("5318edc9", False, 0.11), ("4a0f5c95", False, 0.06)],
    # A non-match more alike (0.64) than the second copy (0.57) still comes after it.
    "demo-0028": [("5318edc9", True, 0.98), ("6ed82931", True, 0.57), ("96d7774c", False, 0.64)],
}
# demo-0003 among 10k pictures: its three copies in the release and a padding picture that
# borrows the pixels of one of them (d98191f9), itself a copy.
EXPECTED_10K = [("dc258738", True, 0.99), ("d98191f9", True, 0.99), ("e2767e68", True, 0.99), ("1dfb9a4b", True, 0.99)]


def summary(matches) -> list[tuple[str, bool, float]]:
    return [(m.sha256[:8], m.comparison.match, round(m.comparison.similarity, 2)) for m in matches]


@pytest.fixture(scope="module")
def release_index(tmp_path_factory) -> ImageIndex:
    return ImageIndex.cached(Corpus.load(RELEASE / "corpus"), tmp_path_factory.mktemp("image-index"))


def case_image(case: str):
    return prepare(RELEASE / "runtime_input" / "images" / f"{case}.jpg")


@pytest.mark.parametrize("case", sorted(EXPECTED))
def test_the_bundled_release_finds_the_expected_copies(release_index, case):
    assert summary(release_index.similar(case_image(case))) == EXPECTED[case]


def test_a_query_among_10k_synthetic_pictures_finds_the_expected_copies(release_index):
    spec = importlib.util.spec_from_file_location("bench_tools", ROOT / "bench" / "tools.py")
    bench_tools = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench_tools)
    index = bench_tools.synthetic_index(release_index, 10_000)
    assert len(index) == 10_000
    assert summary(index.similar(case_image("demo-0003"))) == EXPECTED_10K


def test_a_pair_is_compared_once_per_query_picture(release_index):
    query = case_image("demo-0002")
    first = release_index.similar(query)
    again = release_index.similar(query)
    assert [m.comparison for m in again] == [m.comparison for m in first]
    assert all(a.comparison is b.comparison for a, b in zip(first, again))  # kept, not recomputed
    # What the `compare` tool asks for after the search is the same object, and equals a
    # fresh compare of the two pictures.
    sha = first[0].sha256
    assert release_index.compared(sha, query) is first[0].comparison
    assert compare(release_index.prepared(sha), query) == first[0].comparison
    # Another query picture (even of the same file) is compared afresh.
    other = case_image("demo-0002")
    assert release_index.compared(sha, other) is not first[0].comparison
    assert release_index.compared(sha, other) == first[0].comparison
    # The cache holds no query picture alive.
    gone = weakref.ref(other)
    del other
    gc.collect()
    assert gone() is None


def test_derived_grey_pictures_belong_to_their_picture(release_index):
    query = case_image("demo-0019")
    grey, scale = grey_at(query, 256)
    assert grey_at(query, 256)[0] is grey and not grey.flags.writeable  # shared, so nobody may write it
    assert normalized_at(query, 256) is normalized_at(query, 256)
    flipped = mirrored(query)
    assert flipped.derived == {}  # a copy does not inherit the original's grey pictures
    assert mirrored(query) is flipped  # made once per picture: the search and each compare share it
    assert np.allclose(grey_at(flipped, 256)[0], grey[:, ::-1], atol=1.0)
    assert grey_at(flipped, 256)[1] == scale
