"""The embedded tools behind one interface: `CorpusToolbox` (per run, shared by all episodes)
and `EpisodeTools` (per episode: the case image and its evidence ids).

Policy before content: every page a tool is about to show — search hits, pages holding a
matched image, visited pages, compared references — is checked against the source-access
policy (URL, page text hash, image hash) before any of it is rendered; blocked pages are
dropped and each produces one `GateDecided`. A refused visit or comparison says only that
the source is not available.

Where a call runs: the image tools' work (OpenCV and NumPy, which release the GIL) runs in a
worker thread; the text tools (BM25 over the in-memory corpus, a page lookup) are Python
that the GIL would run one at a time anyway, so they run on the caller's event loop, where
they cost no hand-off (a worker thread cost ~1 ms of CPU a call and, with the loop busy, up
to ~100 ms of waiting for the GIL: `bench/providers.py`). Either way evidence ids are
assigned and the observation rendered on the caller's task, so ids follow the order in
which the agent awaits its calls. A caller cancelled mid-call (an episode past its timeout)
returns at once and leaves the worker thread behind: the thread hands out no evidence ids and
fills only shared caches, each with a finished (correct) result, and gives up before its next
comparison (`ImageIndex.compared`); what it computed is never rendered, so none of it reaches the log.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any, Callable, Iterable, Optional, Sequence

import anyio.to_thread

from eviscene.events import GateDecided, SourceSeen
from eviscene.release.case_image import CaseImage
from eviscene.tools.corpus import Corpus
from eviscene.tools.pages import CorpusImage, Page
from eviscene.tools.image_index import ImageMatch
from eviscene.tools.images import PreparedImage, prepare
from eviscene.tools.ocr import read_text
from eviscene.rules.source_policy import ALLOW_ALL, SourceAccessPolicy
from eviscene.tools.render import comparison_detail, comparison_summary, image_fields, page_fields, page_line, page_meta
from eviscene.tools.results import ToolOutcome, policy_block, visit_listing
from eviscene.tools.specs import ALL_TOOLS, DEFAULT_RESULTS, TOOL_FAMILIES, tool_spec, validate_arguments
from eviscene.rules.urls import normalize_url

PAGE_TEXT_LIMIT = 6000
_LINK = re.compile(r"https?://[^\s<>\"'()\[\]]+")
_CASE_CACHE = 64
_ON_LOOP = frozenset({"text_search", "text_image_search", "visit"})  # Python-bound: no worker thread (module docstring)

Render = Callable[["EpisodeTools"], ToolOutcome]


class EpisodeTools:
    """Per-episode tool state: the case image and the evidence ids handed out so far."""

    def __init__(self, toolbox: "CorpusToolbox", case_image: str | Path | CaseImage, text_boxes: Sequence[Sequence[Sequence[float]]] = ()) -> None:
        self.toolbox = toolbox
        # An episode's case image is its checked bytes; a path (the tools on their own) is read lazily.
        self._case_image = case_image
        self.text_boxes = tuple(tuple(tuple(p) for p in box) for box in text_boxes)
        self._ids: dict[str, str] = {}
        self._sources: dict[str, SourceSeen] = {}

    def source(self, page: Page) -> SourceSeen:
        """The page as a source with its evidence id (new ids in order of first appearance)."""
        key = normalize_url(page.url)
        evidence_id = self._ids.get(key)
        if evidence_id is None:
            evidence_id = f"ev-{len(self._ids) + 1}"
            self._ids[key] = evidence_id
            self._sources[evidence_id] = SourceSeen(
                evidence_id=evidence_id,
                url=page.url,
                content_sha256=page.content_sha256,
                source_family=f"content:{page.content_sha256}",
                published=page.published,
            )
        return self._sources[evidence_id]

    @property
    def evidence(self) -> dict[str, SourceSeen]:
        """Every source returned in this episode, by evidence id."""
        return dict(self._sources)

    def case_image(self) -> PreparedImage:
        if not isinstance(self._case_image, CaseImage):
            self._case_image = CaseImage.of_file(self._case_image)
        boxes = self.text_boxes
        if not boxes and self.toolbox.read_case_text:
            boxes = tuple(tuple(tuple(p) for p in line.box) for line in read_text(self._case_image).lines)
        return self.toolbox.prepared_case_image(self._case_image, boxes)


class CorpusToolbox:
    """The embedded tools over one corpus and policy (a `Toolbox`); safe to share across episodes."""

    def __init__(
        self,
        corpus: Corpus,
        policy: Optional[SourceAccessPolicy] = None,
        *,
        enable_web_search: bool = True,
        enable_image_retrieval: bool = True,
        enable_evidence_inspection: bool = True,
        read_case_text: bool = True,
    ) -> None:
        self.corpus = corpus
        self.read_case_text = read_case_text
        self.policy = policy or ALLOW_ALL
        self.families = {
            "web_search": enable_web_search,
            "image_retrieval": enable_image_retrieval,
            "evidence_inspection": enable_evidence_inspection,
        }
        self.enabled_tools: tuple[str, ...] = tuple(
            name for family, names in TOOL_FAMILIES.items() if self.families[family] for name in names
        )
        self._handlers: dict[str, Callable[[dict[str, Any], EpisodeTools], Render]] = {
            "text_search": self._text_search,
            "text_image_search": self._text_image_search,
            "reverse_image_search": self._reverse_image_search,
            "visit": self._visit,
            "compare_with_reference": self._compare_with_reference,
        }
        self._case_cache: OrderedDict[tuple, PreparedImage] = OrderedDict()
        self._case_lock = threading.Lock()
        # Build the shared indexes now, so a broken corpus fails the run before any episode.
        if enable_web_search or enable_image_retrieval:
            corpus.search_index()
        if enable_image_retrieval or enable_evidence_inspection:
            corpus.image_index()

    def specs(self) -> list[dict[str, Any]]:
        """Function specs of the enabled tools, in a fixed order."""
        return [tool_spec(name) for name in self.enabled_tools]

    def episode(self, case_image: str | Path | CaseImage, *, text_boxes: Sequence[Sequence[Sequence[float]]] = ()) -> EpisodeTools:
        """Fresh per-episode state over the case image (an episode's checked bytes, or a file).
        Image comparisons ignore text printed over the case picture (badges, caption bands):
        its OCR boxes are given as `text_boxes` or, with `read_case_text`, read once per case
        image with the shared OCR cache."""
        return EpisodeTools(self, case_image, text_boxes)

    async def call(self, name: str, arguments: Any, episode: EpisodeTools) -> ToolOutcome:
        """Run one tool call; never raises for a bad call or a failing tool."""
        if name not in ALL_TOOLS:
            return _invalid(f"unknown tool {name!r}; available tools: {', '.join(self.enabled_tools)}")
        if name not in self.enabled_tools:
            return _invalid(f"tool {name!r} is not available in this run; available tools: {', '.join(self.enabled_tools)}")
        problem = validate_arguments(name, arguments)
        if problem:
            return _invalid(problem)
        try:
            handler = self._handlers[name]
            render = (handler(arguments, episode) if name in _ON_LOOP
                      else await anyio.to_thread.run_sync(handler, arguments, episode, abandon_on_cancel=True))
            return render(episode)
        except Exception as exc:  # a failing tool is an observation, not a crash of the episode
            error = f"{type(exc).__name__}: {exc}"
            return ToolOutcome(status="error", observation=f"The tool failed: {error}", error=error)

    def prepared_case_image(self, image: CaseImage, text_boxes: tuple = ()) -> PreparedImage:
        """The case image decoded and trimmed once per distinct picture (rollouts share it)."""
        key = (image.sha256, text_boxes)
        with self._case_lock:
            if key in self._case_cache:
                self._case_cache.move_to_end(key)
                return self._case_cache[key]
        prepared = prepare(image.open(), text_boxes=text_boxes)
        with self._case_lock:
            self._case_cache[key] = prepared
            while len(self._case_cache) > _CASE_CACHE:
                self._case_cache.popitem(last=False)
        return prepared

    # -- policy ------------------------------------------------------------------------------

    def _blocked(self, page: Page, image_sha256: Optional[str] = None) -> Optional[GateDecided]:
        reason = self.policy.check(page.url, page.content_sha256, other_sha256=[image_sha256] if image_sha256 else [])
        return policy_block(page.url, reason) if reason else None

    # -- tools (the image tools run in a worker thread; each returns a renderer for the caller's task)

    def _text_search(self, args: dict[str, Any], _: EpisodeTools) -> Render:
        query, limit = args["query"].strip(), args.get("max_results", DEFAULT_RESULTS)
        hits, blocks = _allowed(self.corpus.search_index().pages(query), lambda hit: self._blocked(hit.page), limit)

        def render(episode: EpisodeTools) -> ToolOutcome:
            if not hits:
                return ToolOutcome(status="empty", observation=f'No pages found for "{query}".', blocks=_unique_blocks(blocks),
                                   data={"query": query, "results": []})
            lines, results, sources = [f'Search results for "{query}":'], [], []
            for hit in hits:
                source = episode.source(hit.page)
                sources.append(source)
                lines.append(f"[{source.evidence_id}] {page_line(hit.page)}\n    {hit.page.url}\n    {hit.snippet}")
                results.append({**page_fields(hit.page, source), "score": round(hit.score, 4), "snippet": hit.snippet})
            return ToolOutcome(status="ok", observation="\n".join(lines), sources=_unique(sources), blocks=_unique_blocks(blocks),
                               data={"query": query, "results": results})

        return render

    def _text_image_search(self, args: dict[str, Any], _: EpisodeTools) -> Render:
        query, limit = args["query"].strip(), args.get("max_results", DEFAULT_RESULTS)
        hits, blocks = _allowed(
            self.corpus.search_index().images(query), lambda hit: self._blocked(hit.entry.page, hit.entry.image.sha256), limit
        )

        def render(episode: EpisodeTools) -> ToolOutcome:
            if not hits:
                return ToolOutcome(status="empty", observation=f'No images found for "{query}".', blocks=_unique_blocks(blocks),
                                   data={"query": query, "results": []})
            lines, results, sources = [f'Image search results for "{query}":'], [], []
            for hit in hits:
                entry = hit.entry
                source = episode.source(entry.page)
                sources.append(source)
                alt = f'"{entry.image.alt}"' if entry.image.alt else "(no description)"
                lines.append(f"[{source.evidence_id}] image {entry.url}\n    {alt} — on {page_line(entry.page)}")
                results.append({**image_fields(entry, source), "score": round(hit.score, 4)})
            return ToolOutcome(status="ok", observation="\n".join(lines), sources=_unique(sources), blocks=_unique_blocks(blocks),
                               data={"query": query, "results": results})

        return render

    def _reverse_image_search(self, args: dict[str, Any], episode: EpisodeTools) -> Render:
        limit = args.get("max_results", DEFAULT_RESULTS)
        index = self.corpus.image_index()
        if "image_url" in args:
            ref = args["image_url"].strip()
            targets = self.corpus.resolve_image(ref)
            if not targets:
                return _fixed(ToolOutcome(status="empty", observation=f"No image found at {ref}. {_IMAGE_URL_HINT}", data={"image_url": ref}))
            blocks = [b for b in (self._blocked(t.page, t.image.sha256) for t in targets) if b]
            if blocks:
                return _fixed(_unavailable(blocks))
            queries = [index.prepared(t.image.sha256.lower()) for t in targets]
            subject = f"the image {ref}"
        else:
            queries = [episode.case_image()]
            subject = "the case image"
        best: dict[str, ImageMatch] = {}
        for query in queries:
            for match in index.similar(query):
                if match.comparison.match and (match.sha256 not in best or match.comparison.similarity > best[match.sha256].comparison.similarity):
                    best[match.sha256] = match
        matches = sorted(best.values(), key=lambda m: (-m.comparison.similarity, m.hash_distance, m.sha256))
        shown: list[tuple[ImageMatch, list[CorpusImage]]] = []
        blocks = []
        for match in matches:
            allowed = []
            for entry in match.entries:
                block = self._blocked(entry.page, match.sha256)
                if block:
                    blocks.append(block)
                else:
                    allowed.append(entry)
            if allowed:
                shown.append((match, sorted(allowed, key=_earliest_first)))
        pages_left = limit
        trimmed: list[tuple[ImageMatch, list[CorpusImage]]] = []
        for match, entries in shown:
            if pages_left <= 0:
                break
            trimmed.append((match, entries[:pages_left]))
            pages_left -= len(entries[:pages_left])

        def render(episode: EpisodeTools) -> ToolOutcome:
            if not trimmed:
                return ToolOutcome(status="empty", observation=f"No pages show a picture matching {subject}.", blocks=_unique_blocks(blocks),
                                   data={"query": subject, "matches": []})
            lines = [f"Reverse image search for {subject}: {len(trimmed)} matching picture(s)."]
            sources, results = [], []
            for number, (match, entries) in enumerate(trimmed, start=1):
                lines.append(f"{number}. {comparison_summary(match.comparison)}")
                for entry in entries:
                    source = episode.source(entry.page)
                    sources.append(source)
                    lines.append(f"   [{source.evidence_id}] image {entry.url}\n       on {page_line(entry.page)}")
                    results.append({
                        **image_fields(entry, source),
                        "similarity": match.comparison.similarity,
                        "edited": match.comparison.edited,
                        "hash_distance": match.hash_distance,
                        "comparison": match.comparison.model_dump(),
                    })
            return ToolOutcome(status="ok", observation="\n".join(lines), sources=_unique(sources), blocks=_unique_blocks(blocks),
                               data={"query": subject, "matches": results})

        return render

    def _visit(self, args: dict[str, Any], _: EpisodeTools) -> Render:
        url = args["url"].strip()
        reason = self.policy.check(url)
        if reason:
            return _fixed(_unavailable([policy_block(url, reason)]))
        page = self.corpus.page(url)
        if page is None:
            return _fixed(ToolOutcome(status="empty", observation=f"Page not found: {url}", data={"url": url}))
        block = self._blocked(page)
        if block:
            return _fixed(_unavailable([block]))
        # An image (by its URL or content) or a link the policy blocks is not listed, nor an image's caption.
        images, links, blocks = visit_listing(
            self.policy, [{"image_url": page.image_url(im), "sha256": im.sha256, "alt": im.alt} for im in page.images],
            _links(page.text))

        def render(episode: EpisodeTools) -> ToolOutcome:
            source = episode.source(page)
            text = page.text if len(page.text) <= PAGE_TEXT_LIMIT else page.text[:PAGE_TEXT_LIMIT] + " […truncated]"
            lines = [f"[{source.evidence_id}] {page.title or '(untitled)'}", f"URL: {page.url}",
                     "Site: " + " · ".join(page_meta(page))]
            if images:
                lines.append("Images on this page:")
                for image in images:
                    lines.append(f"  - {image['image_url']}" + (f' "{image["alt"]}"' if image["alt"] else ""))
            lines += ["Text:", text]
            data = {**page_fields(page, source), "author": page.author, "text": page.text, "images": images, "links": links}
            return ToolOutcome(status="ok", observation="\n".join(lines), sources=[source], blocks=blocks, data=data)

        return render

    def _compare_with_reference(self, args: dict[str, Any], episode: EpisodeTools) -> Render:
        ref = args["reference_image_url"].strip()
        targets = self.corpus.resolve_image(ref)
        if not targets:
            reason = self.policy.check(ref.partition("#")[0])
            if reason:
                return _fixed(_unavailable([policy_block(ref.partition("#")[0], reason)]))
            return _fixed(ToolOutcome(status="empty", observation=f"No image found at {ref}. {_IMAGE_URL_HINT}", data={"reference_image_url": ref}))
        blocks = [b for b in (self._blocked(t.page, t.image.sha256) for t in targets) if b]
        if blocks:
            return _fixed(_unavailable(blocks))
        case = episode.case_image()
        index = self.corpus.image_index()
        compared = [(target, index.compared(target.image.sha256.lower(), case)) for target in targets]
        compared.sort(key=lambda item: (not item[1].match, -item[1].similarity))

        def render(episode: EpisodeTools) -> ToolOutcome:
            lines, results, sources = [], [], []
            for target, comparison in compared:
                source = episode.source(target.page)
                sources.append(source)
                lines.append(f"Compared the case image with {target.url} [{source.evidence_id}] "
                             f"(on {page_line(target.page)}):\n  {comparison_detail(comparison)}")
                results.append({**image_fields(target, source), "reference_image_sha256": target.image.sha256,
                                "match": comparison.match, "edited": comparison.edited,
                                "similarity": comparison.similarity, "comparison": comparison.model_dump()})
            best = results[0]
            data = {"reference_image_url": ref, "match": best["match"], "edited": best["edited"],
                    "similarity": best["similarity"], "reference_image_sha256": best["reference_image_sha256"],
                    "comparisons": results}
            return ToolOutcome(status="ok", observation="\n".join(lines), sources=_unique(sources), data=data)

        return render


# -- outcome helpers -------------------------------------------------------------------------

_IMAGE_URL_HINT = "Use an image URL as listed by a search result or a visited page (`<page url>#image=<path>`)."


def _invalid(error: str) -> ToolOutcome:
    return ToolOutcome(status="invalid", observation=f"Invalid tool call: {error}", error=error)


def _unavailable(blocks: list[GateDecided]) -> ToolOutcome:
    # Neutral on purpose: neither the content, nor why, nor even the URL echoed back.
    return ToolOutcome(status="blocked", observation="This source is not available.", blocks=_unique_blocks(blocks))


def _allowed(candidates: Iterable[Any], blocked: Callable[[Any], Optional[GateDecided]], limit: int) -> tuple[list[Any], list[GateDecided]]:
    """The first `limit` candidates the policy allows, and a block for each one it refused
    on the way (policy before content: refused hits never reach the renderer)."""
    hits, blocks = [], []
    for candidate in candidates:
        block = blocked(candidate)
        if block:
            blocks.append(block)
            continue
        hits.append(candidate)
        if len(hits) == limit:
            break
    return hits, blocks


def _fixed(outcome: ToolOutcome) -> Render:
    return lambda _: outcome


def _unique_blocks(blocks: Iterable[GateDecided]) -> list[GateDecided]:
    return list({block.subject: block for block in blocks}.values())


def _unique(sources: Iterable[SourceSeen]) -> list[SourceSeen]:
    return list({source.evidence_id: source for source in sources}.values())


def _earliest_first(entry: CorpusImage) -> tuple:
    return (entry.page.published is None, entry.page.published or "", entry.page.url)


def _links(text: str) -> list[str]:
    return list(dict.fromkeys(link.rstrip(".,;:!?") for link in _LINK.findall(text)))
