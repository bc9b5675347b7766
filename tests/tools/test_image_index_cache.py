"""The reverse-image index is cached on disk under the corpus key: a cached index searches
exactly as a freshly built one, its vectorized hash prefilter gives the distances a plain
per-image loop gives, a changed corpus gets a new key (a stale index is never read), and
other corpora's indexes unused for weeks are removed when one is built."""

from __future__ import annotations

import hashlib
import io
import os
import time
from pathlib import Path

import numpy as np
import pytest

from eviscene.errors import ReleaseError
from eviscene.tools.corpus import Corpus
from eviscene.tools.image_align import QUERY_WINDOWS, descriptors, thumbnail
from eviscene.tools.image_compare import mirrored
from eviscene.tools.image_index import PREFILTER, REFERENCE_CROPS, ImageIndex, corpus_key, image_groups
from eviscene.tools.images import HASH_CROPS, QUERY_CROPS, crop_hashes, prepare

from tools_fixtures import CorpusBuilder
from tools_images import caption_banner, crop_fraction, jpeg, paste_object, scene

PICTURES = PREFILTER + 8  # more than the prefilter keeps, so it prunes


def write_corpus(root: Path, seeds: range) -> Path:
    builder = CorpusBuilder(root)
    for seed in seeds:
        image = builder.image(f"s{seed}.jpg", scene(seed, (320, 213)), alt=f"scene {seed}")
        builder.page(f"https://pics.example/{seed}", f"Scene {seed}", f"Picture number {seed}.", images=[image])
    return builder.write()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Corpus:
    return Corpus.load(write_corpus(tmp_path_factory.mktemp("corpus"), range(100, 100 + PICTURES)))


def queries() -> list:
    edited = caption_banner(crop_fraction(paste_object(scene(103, (320, 213)), (0.5, 0.5, 0.6, 0.65)), 0.1, 0.05, 0.05, 0.1), "A caption")
    return [prepare(jpeg(edited, 55)), prepare(jpeg(scene(999, (320, 213)), 60))]


def test_a_cached_index_searches_exactly_as_a_fresh_one(corpus, tmp_path):
    fresh = ImageIndex.build(corpus)
    ImageIndex.cached(corpus, tmp_path)  # builds and writes the cache
    assert [p.suffix for p in tmp_path.iterdir()] == [".npz"]
    cached = ImageIndex.cached(corpus, tmp_path)  # reads it
    for query in queries():
        assert cached.candidates(query) == fresh.candidates(query)
        ranked = [(m.sha256, m.hash_distance, m.comparison) for m in cached.similar(query)]
        assert ranked == [(m.sha256, m.hash_distance, m.comparison) for m in fresh.similar(query)]
    # The edited copy of scene 103 is the one match, in both.
    best = cached.similar(queries()[0])[0]
    assert best.comparison.match and [e.page.url for e in best.entries] == ["https://pics.example/103"]


def test_thumbnail_descriptors_rank_a_copy_above_other_pictures():
    reference = descriptors(thumbnail(prepare(scene(103, (320, 213)))), REFERENCE_CROPS)
    assert np.allclose(np.linalg.norm(reference, axis=1), 1.0)  # unit vectors: a product is a correlation

    def best(picture) -> float:
        query = prepare(picture)
        described = np.concatenate([descriptors(thumbnail(query), QUERY_WINDOWS), descriptors(thumbnail(mirrored(query)), QUERY_WINDOWS)])
        return float((reference @ described.T).max())

    assert best(jpeg(scene(103, (320, 213)), 40)) > 0.95
    cropped = best(jpeg(crop_fraction(scene(103, (320, 213)), 0.15, 0.15, 0.15, 0.15), 60))
    assert cropped > max(best(jpeg(scene(104, (320, 213)), 60)), best(jpeg(scene(150, (320, 213)), 60))) + 0.2


def test_the_vectorized_prefilter_matches_a_per_image_loop(corpus, tmp_path):
    index = ImageIndex.cached(corpus, tmp_path)
    for query in queries():
        query_hashes = [int(v) for row in np.concatenate([crop_hashes(query, QUERY_CROPS), crop_hashes(mirrored(query), QUERY_CROPS)]) for v in row]
        expected = []
        for _, entries in image_groups(corpus):
            picture = [int(v) for row in crop_hashes(prepare(entries[0].file, find_bands=False), HASH_CROPS) for v in row]
            expected.append(min(
                bin(picture[2 * b] ^ query_hashes[2 * a]).count("1") + bin(picture[2 * b + 1] ^ query_hashes[2 * a + 1]).count("1")
                for a in range(len(query_hashes) // 2) for b in range(len(HASH_CROPS))
            ))
        assert index.hash_distances(query).tolist() == expected


def test_a_changed_corpus_gets_a_new_cache_key(tmp_path, monkeypatch):
    root = write_corpus(tmp_path / "corpus", range(10, 13))
    cache = tmp_path / "cache"
    first = Corpus.load(root)
    key = corpus_key(image_groups(first))
    ImageIndex.cached(first, cache)
    assert sorted(p.name for p in cache.iterdir()) == [f"{key}.npz"]

    # Unchanged: the same key, and the index is read, not built.
    def no_build(*_args, **_kwargs):
        raise AssertionError("an unchanged corpus was indexed again")

    monkeypatch.setattr(ImageIndex, "_build", no_build)
    assert corpus_key(image_groups(Corpus.load(root))) == key
    assert len(ImageIndex.cached(Corpus.load(root), cache)) == 3
    monkeypatch.undo()

    # A picture replaced (new bytes, pages.jsonl rewritten): a new key, and a new index.
    builder = CorpusBuilder(root)
    for seed in (10, 11, 14):
        image = builder.image(f"s{seed}.jpg", scene(seed, (320, 213)))
        builder.page(f"https://pics.example/{seed}", f"Scene {seed}", f"Picture number {seed}.", images=[image])
    changed = Corpus.load(builder.write())
    new_key = corpus_key(image_groups(changed))
    assert new_key != key
    index = ImageIndex.cached(changed, cache)
    assert sorted(p.name for p in cache.iterdir()) == sorted([f"{key}.npz", f"{new_key}.npz"])
    new_picture = prepare(root / "images" / "s14.jpg", find_bands=False)
    assert index.hash_distances(new_picture).min() == 0

    # The same bytes written again (a file touched or copied): the key changes too.
    os.utime(root / "images" / "s10.jpg", ns=(1, 1))
    assert corpus_key(image_groups(Corpus.load(root))) not in (key, new_key)


def test_building_an_index_removes_those_unused_for_weeks_and_reading_one_keeps_it(tmp_path):
    root = write_corpus(tmp_path / "corpus", range(20, 22))
    cache = tmp_path / "cache"
    cache.mkdir()
    weeks_ago, days_ago = time.time() - 15 * 86_400, time.time() - 13 * 86_400
    for name, when in (("stale.npz", weeks_ago), ("stale.answers", weeks_ago), ("recent.npz", days_ago)):
        (cache / name).mkdir() if name.endswith(".answers") else (cache / name).write_bytes(b"")
        os.utime(cache / name, (when, when))
    key = corpus_key(image_groups(Corpus.load(root)))

    ImageIndex.cached(Corpus.load(root), cache)  # built: the folder is pruned
    assert sorted(p.name for p in cache.iterdir()) == sorted(["recent.npz", f"{key}.npz"])

    os.utime(cache / f"{key}.npz", (weeks_ago, weeks_ago))
    ImageIndex.cached(Corpus.load(root), cache)  # read: marked used
    assert (cache / f"{key}.npz").stat().st_mtime > days_ago


def test_a_corpus_picture_whose_data_is_damaged_is_named_by_its_pages_row(tmp_path):
    """Read as a blank picture (Pillow's `LOAD_TRUNCATED_IMAGES`), it matched nothing and said
    nothing; its error, when it had one, named no row of pages.jsonl."""
    builder = CorpusBuilder(tmp_path)
    builder.page("https://pics.example/1", "Scene 1", "Picture one.", images=[builder.image("s1.jpg", scene(1, (320, 213)))])
    png = io.BytesIO()
    scene(2, (320, 213)).save(png, "PNG")
    damaged = bytearray(png.getvalue())
    damaged[200:400] = bytes(byte ^ 0xFF for byte in damaged[200:400])
    (tmp_path / "images" / "s2.png").write_bytes(bytes(damaged))
    builder.page("https://pics.example/2", "Scene 2", "Picture two.",
                 images=[{"path": "images/s2.png", "sha256": hashlib.sha256(bytes(damaged)).hexdigest(), "alt": ""}])
    with pytest.raises(ReleaseError) as refused:
        ImageIndex.build(Corpus.load(builder.write()))
    assert str(refused.value) == (f"{tmp_path / 'pages.jsonl'}:2: corpus image 'images/s2.png' is damaged picture data "
                                  "Pillow cannot read (broken data stream when reading image file)")


def test_a_corpus_picture_file_over_the_size_limit_is_refused_by_its_pages_row(tmp_path):
    """The index read each corpus picture whole, whatever its size: a picture followed by padding
    decodes all the same, so a sparse 3 GB file (96 KB on disk) cost 3 GB of memory."""
    builder = CorpusBuilder(tmp_path)
    builder.page("https://pics.example/1", "Scene 1", "Picture one.", images=[builder.image("s1.jpg", scene(1, (320, 213)))])
    padded = builder.image("s2.jpg", scene(2, (320, 213)))
    os.truncate(tmp_path / "images" / "s2.jpg", 64 * 1024**2 + 1)  # sparse: the JPEG, then zeros
    padded["sha256"] = hashlib.sha256((tmp_path / "images" / "s2.jpg").read_bytes()).hexdigest()
    builder.page("https://pics.example/2", "Scene 2", "Picture two.", images=[padded])
    with pytest.raises(ReleaseError) as refused:
        ImageIndex.build(Corpus.load(builder.write()))
    assert str(refused.value) == (f"{tmp_path / 'pages.jsonl'}:2: corpus image 'images/s2.jpg' is 67,108,865 bytes, "
                                  "above the file size limit of 67,108,864 bytes (64 MiB)")
