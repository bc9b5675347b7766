"""Reverse image search over the corpus: perceptual hashes, then a thumbnail alignment
scan, then the full `compare` — each stage cheaper and coarser than the next.

Built once per corpus: for every distinct image (by sha256), pHash and dHash of the
picture region (banners trimmed) and of six crops (`images.HASH_CROPS`), and a ~48x48-pixel
grey thumbnail. A query is hashed on four crops (`images.QUERY_CROPS`), as it is and mirrored; its distance to a
corpus image is the smallest pHash+dHash Hamming distance (0..128) over crop pairs.
1. The `PREFILTER` nearest by hash distance (all images of a small corpus) go on.
   Hashes alone separate copies from unrelated pictures poorly once a copy is cropped
   off-centre (distances overlap), so they only prefilter.
2. `image_align.scan_score` (multi-scale template matching on thumbnails) ranks those;
   the `VERIFY` best, and the `HASH_EXTRA` nearest by hash, are aligned and compared at
   working resolution.
3. Only `compare`'s decision makes a match; no hash or scan threshold decides.
"""

from __future__ import annotations

import hashlib
import io
import os
import threading
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional, Sequence

import numpy as np

from eviscene.errors import ReleaseError
from eviscene.tools.image_align import query_windows, scan_score, thumbnail
from eviscene.tools.image_compare import Comparison, compare, mirrored
from eviscene.tools.images import HASH_CROPS, QUERY_CROPS, PreparedImage, crop_hashes, prepare

if TYPE_CHECKING:
    from eviscene.tools.pages import CorpusEntries, CorpusImage

PREFILTER = 48
VERIFY = 6
HASH_EXTRA = 3
_PREPARED_CACHE = 48


@dataclass(frozen=True)
class ImageMatch:
    """A corpus picture compared with the query; `entries` are every page showing it."""

    sha256: str
    entries: tuple["CorpusImage", ...]
    hash_distance: int
    comparison: Comparison


class ImageIndex:
    def __init__(self, groups: Sequence[tuple[str, tuple["CorpusImage", ...]]], hashes: np.ndarray,
                 thumbs: Sequence[np.ndarray]) -> None:
        self._groups = tuple(groups)
        self._hashes = hashes  # (images, len(HASH_CROPS), 2) uint64
        self._thumbs = tuple(thumbs)
        self._position = {sha: index for index, (sha, _) in enumerate(self._groups)}
        self._cache: OrderedDict[str, PreparedImage] = OrderedDict()
        self._cache_lock = threading.Lock()

    @classmethod
    def build(cls, corpus: "CorpusEntries", workers: Optional[int] = None) -> "ImageIndex":
        grouped: dict[str, list["CorpusImage"]] = {}
        for entry in corpus.images:
            grouped.setdefault(entry.image.sha256.lower(), []).append(entry)
        groups = [(sha, tuple(entries)) for sha, entries in grouped.items()]

        def describe(group: tuple[str, tuple["CorpusImage", ...]]) -> tuple[np.ndarray, np.ndarray]:
            sha, entries = group
            image = _load_verified(sha, entries[0])
            return crop_hashes(image, HASH_CROPS), thumbnail(image)

        workers = workers or min(8, os.cpu_count() or 1)
        with ThreadPoolExecutor(max_workers=workers) as pool:
            described = list(pool.map(describe, groups))
        hashes = np.stack([h for h, _ in described]) if described else np.zeros((0, len(HASH_CROPS), 2), np.uint64)
        return cls(groups, hashes, [t for _, t in described])

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
        xor = self._hashes[:, None, :, :] ^ q[None, :, None, :]  # (N, A, B, 2)
        return np.bitwise_count(xor).sum(axis=-1).min(axis=(1, 2)).astype(np.int64)

    def candidates(self, query: PreparedImage, limit: int = VERIFY) -> list[tuple[str, int, float]]:
        """(sha256, hash distance, scan score) of the most promising corpus pictures: the
        `limit` best by scan score, then the HASH_EXTRA nearest by hash not among them
        (the two signals fail on different pictures: the scan on partial overlaps it does
        not try, the hash on off-centre crops)."""
        distance = self.hash_distances(query)
        nearest = np.lexsort((np.arange(len(distance)), distance))[:PREFILTER]
        query_thumb, flipped_thumb, windows = thumbnail(query), thumbnail(mirrored(query)), query_windows(query)
        scores = {int(i): max(scan_score(self._thumbs[i], query_thumb, windows), scan_score(self._thumbs[i], flipped_thumb, windows))
                  for i in nearest}
        chosen = sorted(scores, key=lambda i: (-scores[i], distance[i], i))[:limit]
        chosen += [int(i) for i in nearest[:HASH_EXTRA] if int(i) not in chosen]
        return [(self._groups[i][0], int(distance[i]), round(scores[i], 4)) for i in chosen]

    def similar(self, query: PreparedImage, verify: int = VERIFY) -> list[ImageMatch]:
        """The most promising corpus pictures, each verified by `compare`; matches first, then by similarity."""
        results = []
        for sha, distance, _ in self.candidates(query, verify):
            comparison = compare(self.prepared(sha), query)
            results.append(ImageMatch(sha, self._groups[self._position[sha]][1], distance, comparison))
        results.sort(key=lambda m: (not m.comparison.match, -m.comparison.similarity, m.hash_distance, m.sha256))
        return results


def _load_verified(sha256: str, entry: "CorpusImage") -> PreparedImage:
    data = entry.file.read_bytes()
    actual = hashlib.sha256(data).hexdigest()
    if actual != sha256:
        raise ReleaseError(f"corpus image {entry.image.path!r} (page {entry.page.url}): sha256 is {actual}, pages.jsonl says {sha256}")
    try:
        return prepare(io.BytesIO(data), find_bands=False)
    except Exception as exc:  # an unreadable image is a release defect, reported as such
        raise ReleaseError(f"corpus image {entry.image.path!r}: cannot be decoded ({exc})") from None
