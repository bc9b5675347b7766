"""Reverse image search over the corpus: perceptual hashes, then a thumbnail alignment
scan, then the full `compare` — each stage cheaper and coarser than the next.

Built once per corpus: for every distinct image (by sha256), pHash and dHash of the
picture region (banners trimmed) and of six crops (`images.HASH_CROPS`), and a ~48x48-pixel
grey thumbnail. A query is hashed on four crops (`images.QUERY_CROPS`), as it is and mirrored; its distance to a
corpus image is the smallest pHash+dHash Hamming distance (0..128) over crop pairs.
1. The `PREFILTER` nearest by hash distance (all images of a small corpus) go on.
   Hashes alone separate copies from unrelated pictures poorly once a copy is cropped
   off-centre (distances overlap), so they only prefilter.
2. Thumbnail similarity, vectorized: each picture's thumbnail is also kept as small
   contrast-normalized descriptors (`DESCRIPTOR_SIDE`² pixels, whole and centre crops,
   `REFERENCE_CROPS`) in one array; one product with the query's descriptors (its
   windows, as it is and mirrored) ranks the prefiltered pictures, and the `SHORTLIST`
   best go on.
3. `image_align.scan_score` (multi-scale template matching on thumbnails) ranks those;
   the `VERIFY` best, and the `HASH_EXTRA` nearest by hash, are aligned and compared at
   working resolution (`compare` is nearly all of a query's time, so it runs on few).
4. Only `compare`'s decision makes a match; no hash or scan threshold decides.

The shortlist and `VERIFY` were chosen on the bundled release's 28 case images: every
copy the former search (scan of all 48, compare of 6 + 3) matched is among the compared
ones (a copy's descriptor rank among the 48 was at most 6, its scan rank at most 2, or
it was among the 3 nearest by hash), with 3.9 compares a query instead of 8; checked
again on a 16-case independent release (scripts/make_independent_release.py, seed 3): the
same matches, with the same similarities, for every case.

The hashes and thumbnails are computed once per corpus (in parallel threads) and cached in
the runtime directory (`eviscene.rules.runtime`), in a file named by the corpus key: the
sha256 of the index format and of every image's sha256, size and modification time. A
changed corpus (an image added, removed, replaced or touched) has another key, so a stale
index is never read; a cached one loads in well under a second. Beside it, a cached index
keeps its search answers (`image_store`): a query picture's candidates and its comparisons,
found again by the picture's digest, so a picture asked about before (another rollout of the
case, another run, the `compare` tool after a search) costs no scan and no `compare`.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import threading
import weakref
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Optional, Sequence

import numpy as np

from eviscene.errors import ReleaseError
from eviscene.release.case_image import PictureFileTooLarge, read_picture
from eviscene.rules.blocking import unless_abandoned
from eviscene.rules.runtime import mark_used, prune_unused, runtime_dir, write_replacing
from eviscene.tools.image_align import DESCRIPTOR_SIDE, SCAN_SIDE, descriptors, query_windows, scan_score, thumbnail
from eviscene.tools.image_compare import METHOD, Comparison, compare, mirrored
from eviscene.tools.image_store import AnswerStore, picture_digest
from eviscene.tools.images import HASH_CROPS, QUERY_CROPS, ImageTooLarge, PreparedImage, UndecodableImage, crop_hashes, prepare

if TYPE_CHECKING:
    from eviscene.tools.pages import CorpusEntries, CorpusImage

PREFILTER = 48
SHORTLIST = 10
VERIFY = 3
HASH_EXTRA = 3
_PREPARED_CACHE = 48
_COMPARED_CACHE = 256
# Parts of a corpus thumbnail described (x0, y0, x1, y1): the whole, and centre crops for
# a query that shows only the middle of the picture.
REFERENCE_CROPS = ((0.0, 0.0, 1.0, 1.0), (0.1, 0.1, 0.9, 0.9), (0.2, 0.2, 0.8, 0.8))
# Part of the cache key: change it when the hashes, thumbnails or descriptors change in a
# way the key's other parts (the crops, the thumbnail side) do not show.
INDEX_FORMAT = "image-index-v5"  # v3: nested frames and turned edges trimmed (images.find_content_box); v4: 16-bit grey and transparency read as shown (images._as_rgb); v5: damaged picture data refused, no longer hashed as a blank picture

Groups = Sequence[tuple[str, tuple["CorpusImage", ...]]]


@dataclass(frozen=True)
class ImageMatch:
    """A corpus picture compared with the query; `entries` are every page showing it."""

    sha256: str
    entries: tuple["CorpusImage", ...]
    hash_distance: int
    comparison: Comparison


class ImageIndex:
    def __init__(self, groups: Sequence[tuple[str, tuple["CorpusImage", ...]]], hashes: np.ndarray,
                 thumbs: Sequence[np.ndarray], descriptors: Optional[np.ndarray] = None) -> None:
        self._groups = tuple(groups)
        self._hashes = hashes  # (images, len(HASH_CROPS), 2) uint64
        # The same, crop by crop and hash by hash (crops, 2, images): the prefilter reads
        # contiguous columns and never holds an (images x query crops x crops) array.
        self._columns = np.ascontiguousarray(hashes.transpose(1, 2, 0))
        self._thumbs = tuple(thumbs)
        # (images, len(REFERENCE_CROPS), DESCRIPTOR_SIDE²) float32, unit vectors
        self._descriptors = descriptors if descriptors is not None else _stack_descriptors(self._thumbs)
        self._position = {sha: index for index, (sha, _) in enumerate(self._groups)}
        self._cache: OrderedDict[str, PreparedImage] = OrderedDict()
        # (id(query), sha256, compare method) -> (a weak reference to the query, the
        # comparison): a dead reference means the id now names another picture; the cache
        # holds no picture alive.
        self._compared: OrderedDict[tuple[int, str, str], tuple[weakref.ref, Comparison]] = OrderedDict()
        self._cache_lock = threading.Lock()
        # Search answers and comparisons kept on disk (`cached` sets it): none for an index
        # built in memory.
        self._answers: Optional[AnswerStore] = None

    @classmethod
    def build(cls, corpus: "CorpusEntries", workers: Optional[int] = None) -> "ImageIndex":
        """Hash and thumbnail every distinct corpus picture (each file checked against its sha256)."""
        return cls._build(image_groups(corpus), workers)

    @classmethod
    def cached(cls, corpus: "CorpusEntries", folder: Optional[Path] = None) -> "ImageIndex":
        """The index from the cache in `folder` (default: the runtime directory's
        `image-index/`) under the corpus key, else built and cached there."""
        groups = image_groups(corpus)
        folder = folder or runtime_dir() / "image-index"
        path = folder / f"{corpus_key(groups)}.npz"
        try:
            index = cls._load(groups, path)
            mark_used(path)
        except (OSError, ValueError, KeyError):  # none yet, or unreadable: build it
            index = cls._build(groups)
            index._save(path)
            prune_unused(folder)  # other corpora's indexes and answers, unused for weeks
        index._answers = AnswerStore(path.with_suffix(".answers"))
        return index

    @classmethod
    def _build(cls, groups: Groups, workers: Optional[int] = None) -> "ImageIndex":
        def describe(group: tuple[str, tuple["CorpusImage", ...]]) -> tuple[np.ndarray, np.ndarray]:
            sha, entries = group
            image = _load_verified(sha, entries[0])
            return crop_hashes(image, HASH_CROPS), thumbnail(image)

        workers = workers or min(8, os.cpu_count() or 1)
        with ThreadPoolExecutor(max_workers=workers) as pool:
            described = list(pool.map(describe, groups))
        hashes = np.stack([h for h, _ in described]) if described else np.zeros((0, len(HASH_CROPS), 2), np.uint64)
        return cls(groups, hashes, [t for _, t in described])

    @classmethod
    def _load(cls, groups: Groups, path: Path) -> "ImageIndex":
        with np.load(path, allow_pickle=False) as stored:
            if stored["sha256"].tolist() != [sha for sha, _ in groups]:
                raise ValueError(f"{path}: holds another corpus")
            shapes, pixels = stored["thumb_shapes"], stored["thumb_pixels"]
            ends = np.cumsum(shapes.prod(axis=1))
            thumbs = [pixels[end - h * w:end].reshape(h, w) for (h, w), end in zip(shapes.tolist(), ends.tolist())]
            return cls(groups, stored["hashes"], thumbs, stored["descriptors"])

    def _save(self, path: Path) -> None:
        """The cache file (one that cannot be written costs only the next build)."""
        thumbs = self._thumbs
        write_replacing(path, lambda out: np.savez(
            out, sha256=np.array([sha for sha, _ in self._groups], dtype="U64"), hashes=self._hashes,
            thumb_shapes=np.array([t.shape for t in thumbs], dtype=np.int64).reshape(len(thumbs), 2),
            thumb_pixels=np.concatenate([t.ravel() for t in thumbs]) if thumbs else np.zeros(0, np.float32),
            descriptors=self._descriptors,
        ))

    def __len__(self) -> int:
        return len(self._groups)

    def prepared(self, sha256: str) -> PreparedImage:
        """The corpus picture with this sha256, decoded and trimmed (kept in a small LRU)."""
        with self._cache_lock:
            if sha256 in self._cache:
                self._cache.move_to_end(sha256)
                return self._cache[sha256]
        _, entries = self._groups[self._position[sha256]]
        image = prepare(entries[0].file, find_bands=False)
        with self._cache_lock:
            self._cache[sha256] = image
            while len(self._cache) > _PREPARED_CACHE:
                self._cache.popitem(last=False)
        return image

    def compared(self, sha256: str, query: PreparedImage) -> Comparison:
        """`compare` of the corpus picture with this sha256 and `query`, kept per query picture,
        corpus picture and compare method (a small LRU): the rollouts of a case share its
        prepared picture, and the `compare` tool usually follows a search with the same pair."""
        key = (id(query), sha256, METHOD)
        with self._cache_lock:
            found = self._compared.get(key)
            if found is not None and found[0]() is query:
                self._compared.move_to_end(key)
                return found[1]
        unless_abandoned()  # a search its episode left behind (past its timeout) stops before the costly part
        stored_name = f"compared {sha256} {picture_digest(query)}"
        comparison = self._answers.get(stored_name, Comparison.model_validate_json) if self._answers else None
        if comparison is None:
            comparison = compare(self.prepared(sha256), query)
            if self._answers:
                self._answers.put(stored_name, comparison.model_dump_json())
        with self._cache_lock:
            self._compared[key] = (weakref.ref(query), comparison)
            while len(self._compared) > _COMPARED_CACHE:
                self._compared.popitem(last=False)
        return comparison

    def entries(self, sha256: str) -> tuple["CorpusImage", ...]:
        position = self._position.get(sha256.lower())
        return self._groups[position][1] if position is not None else ()

    def hash_distances(self, query: PreparedImage) -> np.ndarray:
        """Per corpus picture, the smallest pHash+dHash distance over crop pairs (0..128), the
        query taken as it is or mirrored."""
        if not self._groups:
            return np.zeros(0, dtype=np.int64)
        # The query's crops, and the same crops of it mirrored (a flipped re-post).
        q = np.concatenate([crop_hashes(query, QUERY_CROPS), crop_hashes(mirrored(query), QUERY_CROPS)])  # (A, 2)
        best = np.full(len(self._groups), 128, dtype=np.uint8)
        for phash, dhash in self._columns:
            for query_phash, query_dhash in q:
                np.minimum(best, np.bitwise_count(phash ^ query_phash) + np.bitwise_count(dhash ^ query_dhash), out=best)
        return best.astype(np.int64)

    def candidates(self, query: PreparedImage, limit: int = VERIFY) -> list[tuple[str, int, float]]:
        """(sha256, hash distance, scan score) of the most promising corpus pictures: of the
        hash-nearest, the SHORTLIST most alike by thumbnail descriptors are scanned, and the
        `limit` best by scan score go on, then the HASH_EXTRA nearest by hash not among them
        (the signals fail on different pictures: the scan on partial overlaps it does not
        try, the hash on off-centre crops)."""
        stored_name = f"candidates {limit} {picture_digest(query)}"
        stored = self._answers.get(stored_name, _parse_candidates) if self._answers else None
        if stored is not None:
            return stored
        found = self._candidates(query, limit)
        if self._answers:
            self._answers.put(stored_name, json.dumps(found))
        return found

    def _candidates(self, query: PreparedImage, limit: int) -> list[tuple[str, int, float]]:
        distance = self.hash_distances(query)
        nearest = np.lexsort((np.arange(len(distance)), distance))[:PREFILTER]
        query_thumb, flipped_thumb, windows = thumbnail(query), thumbnail(mirrored(query)), query_windows(query)
        # One product of the prefiltered pictures' descriptors with the query's (each window,
        # as it is and mirrored): the best correlation per picture.
        described = np.concatenate([descriptors(query_thumb, windows), descriptors(flipped_thumb, windows)])
        similarity = (self._descriptors[nearest] @ described.T).reshape(len(nearest), -1).max(axis=1)
        shortlist = nearest[np.lexsort((np.arange(len(nearest)), -similarity))[:SHORTLIST]]
        scanned = [int(i) for i in shortlist] + [int(i) for i in nearest[:HASH_EXTRA] if i not in shortlist]
        templates: tuple[dict, dict] = ({}, {})  # each orientation's windows, resized and normalized once per size
        scores = {i: max(scan_score(self._thumbs[i], query_thumb, windows, templates[0]),
                         scan_score(self._thumbs[i], flipped_thumb, windows, templates[1]))
                  for i in scanned}
        chosen = sorted(scanned[:len(shortlist)], key=lambda i: (-scores[i], distance[i], i))[:limit]
        chosen += [int(i) for i in nearest[:HASH_EXTRA] if int(i) not in chosen]
        return [(self._groups[i][0], int(distance[i]), round(scores[i], 4)) for i in chosen]

    def similar(self, query: PreparedImage, verify: int = VERIFY) -> list[ImageMatch]:
        """The most promising corpus pictures, each verified by `compare`; matches first, then by similarity."""
        results = []
        for sha, distance, _ in self.candidates(query, verify):
            comparison = self.compared(sha, query)
            results.append(ImageMatch(sha, self._groups[self._position[sha]][1], distance, comparison))
        results.sort(key=lambda m: (not m.comparison.match, -m.comparison.similarity, m.hash_distance, m.sha256))
        return results


def _parse_candidates(text: str) -> list[tuple[str, int, float]]:
    return [(str(sha), int(distance), float(score)) for sha, distance, score in json.loads(text)]


def _stack_descriptors(thumbs: Sequence[np.ndarray]) -> np.ndarray:
    if not thumbs:
        return np.zeros((0, len(REFERENCE_CROPS), DESCRIPTOR_SIDE**2), np.float32)
    return np.stack([descriptors(thumb, REFERENCE_CROPS) for thumb in thumbs])


def image_groups(corpus: "CorpusEntries") -> list[tuple[str, tuple["CorpusImage", ...]]]:
    """The corpus's distinct pictures (by sha256, in first-seen order), each with every entry showing it."""
    grouped: dict[str, list["CorpusImage"]] = {}
    for entry in corpus.images:
        grouped.setdefault(entry.image.sha256.lower(), []).append(entry)
    return [(sha, tuple(entries)) for sha, entries in grouped.items()]


def corpus_key(groups: Groups) -> str:
    """The cache key of the index of these pictures: the index format, the crops and thumbnail
    size it uses, and each picture's sha256 with the size and modification time of the file read."""
    digest = hashlib.sha256(f"{INDEX_FORMAT}\n{HASH_CROPS!r}\n{SCAN_SIDE}\n{REFERENCE_CROPS!r}\n{DESCRIPTOR_SIDE}".encode())
    for sha, entries in groups:
        stat = entries[0].file.stat()
        digest.update(f"\n{sha} {stat.st_size} {stat.st_mtime_ns}".encode())
    return digest.hexdigest()


def _load_verified(sha256: str, entry: "CorpusImage") -> PreparedImage:
    where = f"{entry.row}: " if entry.row else ""
    try:
        data = read_picture(entry.file)
    except PictureFileTooLarge as exc:
        raise ReleaseError(f"{where}corpus image {entry.image.path!r} is {exc.detail}") from None
    actual = hashlib.sha256(data).hexdigest()
    if actual != sha256:
        raise ReleaseError(f"{where}corpus image {entry.image.path!r} (page {entry.page.url}): sha256 is {actual}, pages.jsonl says {sha256}")
    try:
        return prepare(io.BytesIO(data), find_bands=False)
    except (UndecodableImage, ImageTooLarge) as exc:  # an unreadable image is a release defect, reported as such
        raise ReleaseError(f"{where}corpus image {entry.image.path!r} is {exc.detail}") from None
    except Exception as exc:
        raise ReleaseError(f"{where}corpus image {entry.image.path!r}: cannot be decoded ({exc})") from None
