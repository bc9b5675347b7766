"""The release corpus: the offline "web" (`corpus/pages.jsonl` + `corpus/images/`).

Loaded once per run and shared read-only by every episode. The search and image indexes
are built lazily, once, under a lock, so any number of threads or tasks may use one Corpus.
Its rows (`Page`, `PageImage`, `CorpusImage`) live in `eviscene.tools.pages`, below the indexes.

Image URLs: a corpus image is addressed as `<page url>#image=<path>`, where `path` is the
image's path relative to the corpus directory as written in pages.jsonl (e.g.
`https://news.example/story#image=images/a1.jpg`). The fragment keeps it a URL of the
page that shows the image (so the source-access policy and scoring see the page), and
the path makes it unambiguous when a page shows several images or an image appears on
several pages. `resolve_image` also accepts a bare corpus path (`images/a1.jpg`) and a
page URL (meaning every image on that page).
"""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Optional

from pydantic import ValidationError

from eviscene.errors import ReleaseError
from eviscene.rules.jsonl import JsonlError, iter_jsonl_bytes, read_file_bytes
from eviscene.rules.paths import PathEscapeError, not_a_file, resolve_inside
from eviscene.rules.urls import normalize_url, without_scheme
from eviscene.tools.pages import IMAGE_FRAGMENT, CorpusImage, Page, PageImage

if TYPE_CHECKING:
    from eviscene.tools.image_index import ImageIndex
    from eviscene.tools.search import SearchIndex

class Corpus:
    """Pages indexed by normalized URL and images by path; immutable after `load`."""

    def __init__(self, root: Path, pages: list[Page], source: str, rows: list[str]) -> None:
        """`rows[i]`: where `pages[i]` was read (`pages.jsonl:LINE`), which errors about its images name."""
        self.root = root
        self.pages: tuple[Page, ...] = tuple(pages)
        self.source = source
        self._rows = {page.page_id: row for page, row in zip(pages, rows)}
        self._by_url: dict[str, Page] = {}
        by_loose_url: dict[str, list[Page]] = {}
        self._images_by_path: dict[str, list[CorpusImage]] = {}
        images: list[CorpusImage] = []
        for page in self.pages:
            self._by_url[normalize_url(page.url)] = page
            by_loose_url.setdefault(without_scheme(normalize_url(page.url)), []).append(page)
            for image in page.images:
                entry = self._entry(page, image)
                images.append(entry)
                self._images_by_path.setdefault(_path_key(image.path), []).append(entry)
        # http/https or scheme-less forms of a URL reach its page only when unambiguous.
        self._by_loose_url = {key: found[0] for key, found in by_loose_url.items() if len(found) == 1}
        self.images: tuple[CorpusImage, ...] = tuple(images)
        self._lock = threading.Lock()
        self._search_index: Optional["SearchIndex"] = None
        self._image_index: Optional["ImageIndex"] = None

    @classmethod
    def load(cls, corpus_dir: str | Path) -> "Corpus":
        """Read `<corpus_dir>/pages.jsonl` (or the given pages.jsonl), validating every row. The
        file stays inside its corpus directory as its images do: a link leading out is refused."""
        path = Path(corpus_dir)
        pages_file = path if path.is_file() else path / "pages.jsonl"
        root = pages_file.parent.resolve()
        try:
            inside = resolve_inside(root, pages_file.name, root_name="corpus directory")  # read as checked
        except PathEscapeError as exc:
            raise ReleaseError(f"{pages_file}: corpus pages file {exc}") from None
        if not pages_file.is_file():
            raise ReleaseError(f"{pages_file}: corpus pages file {not_a_file(pages_file)}")
        pages: list[Page] = []
        where_read: list[str] = []
        seen_urls: dict[str, int] = {}
        seen_ids: dict[str, int] = {}
        try:
            rows = list(iter_jsonl_bytes(read_file_bytes(inside), pages_file))
        except JsonlError as exc:
            raise ReleaseError(_corpus_message(exc)) from None
        for lineno, row in rows:
            where = f"{pages_file}:{lineno}"
            page = _parse_page(row, where)
            _check_page(page, root, where)
            key = normalize_url(page.url)
            if key in seen_urls:
                raise ReleaseError(f"{where}: url {page.url!r} repeats line {seen_urls[key]}")
            if page.page_id in seen_ids:
                raise ReleaseError(f"{where}: page_id {page.page_id!r} repeats line {seen_ids[page.page_id]}")
            seen_urls[key] = seen_ids[page.page_id] = lineno
            pages.append(page)
            where_read.append(where)
        return cls(root, pages, str(pages_file), where_read)

    # -- lookups ---------------------------------------------------------------------------

    def page(self, url: str) -> Optional[Page]:
        """The page at `url` (any fragment, e.g. `#image=…`, ignored), or None."""
        key = normalize_url(url)
        found = self._by_url.get(key)
        return found if found is not None else self._by_loose_url.get(without_scheme(key))

    def resolve_image(self, ref: str) -> list[CorpusImage]:
        """Corpus images a reference names: `<page url>#image=<path>`, a corpus path, or a page URL."""
        ref = ref.strip()
        page_part, sep, path = ref.partition(IMAGE_FRAGMENT)
        if sep:
            page = self.page(page_part)
            key = _path_key(path)
            if page is not None:
                return [self._entry(page, im) for im in page.images if _path_key(im.path) == key]
            return []
        by_path = self._images_by_path.get(_path_key(ref))
        if by_path:
            return by_path[:1]
        page = self.page(ref)
        if page is not None:
            return [self._entry(page, im) for im in page.images]
        return []

    def _entry(self, page: Page, image: PageImage) -> CorpusImage:
        return CorpusImage(page, image, self.root / image.path, self._rows.get(page.page_id, ""))

    def images_with_sha256(self, sha256: str) -> list[CorpusImage]:
        return [entry for entry in self.images if entry.image.sha256 == sha256]

    # -- shared indexes --------------------------------------------------------------------

    def search_index(self) -> "SearchIndex":
        """BM25 index over pages and image alt texts, built on first use."""
        with self._lock:
            if self._search_index is None:
                from eviscene.tools.search import SearchIndex

                self._search_index = SearchIndex.build(self)
            return self._search_index

    def image_index(self) -> "ImageIndex":
        """Perceptual-hash index over every corpus image, loaded from its cache or built on first use."""
        with self._lock:
            if self._image_index is None:
                from eviscene.tools.image_index import ImageIndex

                self._image_index = ImageIndex.cached(self)
            return self._image_index


def _path_key(path: str) -> str:
    """Paths compare without `./` or a leading `corpus/`, in POSIX form."""
    text = path.strip().replace("\\", "/")
    while text.startswith("./"):
        text = text[2:]
    if text.startswith("corpus/"):
        text = text[len("corpus/"):]
    return str(PurePosixPath(text))


def _corpus_message(exc: JsonlError) -> str:
    """The corpus's wording of a pages.jsonl fault."""
    where = f"{exc.path}:{exc.line}"
    if exc.problem == "not_object":
        return f"{where}: a page row must be a JSON object"
    if exc.problem == "malformed":
        return f"{where}: not valid JSON: {getattr(exc.cause, 'msg', exc.cause)}"
    return str(exc)


def _parse_page(data: dict, where: str) -> Page:
    try:
        return Page.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(map(str, first["loc"])) or "row"
        raise ReleaseError(f"{where}: {field}: {first['msg']}") from None


def _check_page(page: Page, root: Path, where: str) -> None:
    actual = hashlib.sha256(page.text.encode("utf-8")).hexdigest()
    if actual != page.content_sha256.lower():
        raise ReleaseError(f"{where}: content_sha256 does not match the page text (sha256 is {actual})")
    for image in page.images:
        try:
            file = resolve_inside(root, image.path.replace("\\", "/"), root_name="corpus directory")
        except PathEscapeError as exc:
            raise ReleaseError(f"{where}: image {exc}") from None
        if not file.is_file():
            raise ReleaseError(f"{where}: image file {image.path!r} not found under {root}")
