"""`WebToolbox`: the agent's tools over the real web, behind the same interface as the
corpus tools (the `Toolbox` protocol: `specs()`, `episode()`, `async call()` → `ToolOutcome`).

- `text_search`, `text_image_search`: a self-hosted SearXNG instance (`SearxngClient`); a
  service that stays unreachable stops the run (`BackendOutage`) instead of failing searches.
- `visit`: real pages over HTTP (`PageFetcher`: size, time, redirect and content-type limits).
- `reverse_image_search`, `compare_with_reference`: not offered (no self-hostable reverse
  image search API is supported); a call answers `invalid` saying so.

Policy before content, exactly as the corpus tools: every search result (page URL, and the
image URL of an image result) is checked before it is rendered, and a visit is checked
before the request, at every redirect hop, and on its final URL with the extracted text's
sha256. Each block is one `GateDecided` (`policy_block`); a refused visit says only that
the source is not available. Hits and visits on hosts that are or resolve to private,
loopback, link-local or reserved addresses are refused the same way (`NetworkGuard`, gate
`network_guard`) unless the run allows private networks.

Sources: `url`, `content_sha256` (sha256 of the extracted text, once the page was visited;
unknown for a bare search hit), `source_family` (`content:<sha>`, or `domain:<host>` while
the content is unknown), `published`.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any, Optional, Sequence

from eviscene.errors import BackendOutage
from eviscene.release.case_image import CaseImage
from eviscene.events import GateDecided, SourceSeen
from eviscene.rules.source_policy import ALLOW_ALL, SourceAccessPolicy
from eviscene.tools.results import ToolOutcome, policy_block, visit_listing
from eviscene.tools.specs import ALL_TOOLS, DEFAULT_RESULTS, TOOL_FAMILIES, tool_spec, validate_arguments
from eviscene.tools.toolbox import PAGE_TEXT_LIMIT, EpisodeTools
from eviscene.rules.urls import normalize_url, url_host
from eviscene.tools.web.fetch import FetchedPage, FetchFailed, FetchRefused, PageFetcher
from eviscene.tools.web.network import NetworkGuard
from eviscene.tools.web.search import SearchResult, SearxngClient, SearxngError

WEB_TOOLS = ("text_search", "text_image_search", "visit")
UNAVAILABLE = "not available with the web backend"


class WebEpisodeTools(EpisodeTools):
    """Per-episode evidence ids for web sources. A search hit's content is unknown until
    the page is visited: its source then gains the text's sha256 under the same id."""

    def source(self, page: Any) -> SourceSeen:
        key = normalize_url(page.url)
        evidence_id = self._ids.get(key)
        content = getattr(page, "content_sha256", None)
        if evidence_id is None:
            evidence_id = f"ev-{len(self._ids) + 1}"
            self._ids[key] = evidence_id
        elif not content or self._sources[evidence_id].content_sha256:
            return self._sources[evidence_id]
        published = getattr(page, "published", None) or (
            self._sources[evidence_id].published if evidence_id in self._sources else None)
        self._sources[evidence_id] = SourceSeen(
            evidence_id=evidence_id,
            url=page.url,
            content_sha256=content or None,
            source_family=f"content:{content}" if content else f"domain:{url_host(page.url)}",
            published=published,
        )
        return self._sources[evidence_id]

    def case_image(self):  # pragma: no cover - no web tool compares images
        raise RuntimeError(f"image comparison is {UNAVAILABLE}")


class WebToolbox:
    """Web search (SearXNG) and page fetching (httpx) behind the tool interface."""

    read_case_text = False

    def __init__(
        self,
        policy: Optional[SourceAccessPolicy] = None,
        *,
        search: Optional[SearxngClient] = None,
        fetcher: Optional[PageFetcher] = None,
        enable_web_search: bool = True,
        enable_image_retrieval: bool = True,
        enable_evidence_inspection: bool = True,
        network: Optional[NetworkGuard] = None,
    ) -> None:
        self.policy = policy or ALLOW_ALL
        self.search, self.fetcher = search, fetcher
        self.network = network or (fetcher.network if fetcher is not None else NetworkGuard())
        self.families = {
            "web_search": enable_web_search,
            "image_retrieval": enable_image_retrieval,
            "evidence_inspection": enable_evidence_inspection,
        }
        offered = {"text_search": search is not None, "text_image_search": search is not None, "visit": fetcher is not None}
        self.enabled_tools: tuple[str, ...] = tuple(
            name for family, names in TOOL_FAMILIES.items() if self.families[family]
            for name in names if offered.get(name, False)
        )

    @property
    def backend_id(self) -> str:
        """Identity of the backends (a tool-cache key part). A run that lets its tools reach private
        addresses keeps its results apart: served to one that does not, they would show hits on
        such addresses its network guard never checked."""
        search = self.search.identity() if self.search else "off"
        visit = self.fetcher.identity() if self.fetcher else "off"  # it names private_network itself
        private = ";private_network" if self.network.allow_private_network and self.fetcher is None else ""
        return f"web:search={search};visit={visit}{private}"

    def manifest(self) -> dict[str, Any]:
        return {
            "kind": "web",
            "search_backend": "searxng" if self.search else None,
            "searxng_url": self.search.base_url if self.search else None,
            "web_visit": self.fetcher is not None,
            "visit_limits": ({"timeout_seconds": self.fetcher.timeout, "max_bytes": self.fetcher.max_bytes,
                              "max_redirects": self.fetcher.max_redirects} if self.fetcher else None),
            "enabled_tools": list(self.enabled_tools),
            "backend_id": self.backend_id,
            "allow_private_network": self.network.allow_private_network,
        }

    def specs(self) -> list[dict[str, Any]]:
        return [tool_spec(name) for name in self.enabled_tools]

    def episode(self, case_image: str | Path | CaseImage, *, text_boxes: Sequence[Sequence[Sequence[float]]] = ()) -> WebEpisodeTools:
        return WebEpisodeTools(self, case_image, text_boxes)  # type: ignore[arg-type]

    async def call(self, name: str, arguments: Any, episode: EpisodeTools) -> ToolOutcome:
        """Run one tool call; never raises for a bad call or a failing backend, only
        `BackendOutage` for a search service that stayed unreachable (`SearxngClient`)."""
        available = ", ".join(self.enabled_tools) or "none"
        if name not in ALL_TOOLS:
            return _invalid(f"unknown tool {name!r}; available tools: {available}")
        if name not in self.enabled_tools:
            why = UNAVAILABLE if name not in WEB_TOOLS or self.families_allow(name) else "not available in this run"
            return _invalid(f"tool {name!r} is {why}; available tools: {available}")
        problem = validate_arguments(name, arguments)
        if problem:
            return _invalid(problem)
        try:
            if name == "visit":
                return await self._visit(arguments, episode)
            return await self._search(arguments, episode, images=name == "text_image_search")
        except BackendOutage:
            raise  # the search service is gone: the run stops, the episode stays unfinished
        except Exception as exc:  # a failing tool is an observation, not a crash of the episode
            error = f"{type(exc).__name__}: {exc}"
            return ToolOutcome(status="error", observation=f"The tool failed: {error}", error=error)

    def families_allow(self, name: str) -> bool:
        return any(self.families[family] for family, names in TOOL_FAMILIES.items() if name in names)

    # -- tools ----------------------------------------------------------------------------------

    async def _search(self, args: dict[str, Any], episode: EpisodeTools, *, images: bool) -> ToolOutcome:
        assert self.search is not None
        query, limit = " ".join(args["query"].split()), args.get("max_results", DEFAULT_RESULTS)
        kind = "images" if images else "pages"
        try:
            found = await self.search.search(query, images=images)
        except SearxngError as exc:
            return ToolOutcome(status="error", observation=f"The search failed: {exc}.", error=str(exc),
                               data={"query": query, "results": []})
        hits: list[SearchResult] = []
        blocks: list[GateDecided] = []
        seen: set[str] = set()
        for hit in found:
            key = normalize_url(hit.url) + ("#" + hit.image_url if hit.image_url else "")
            if key in seen:
                continue
            seen.add(key)
            block = (self._blocked(hit.url) or (self._blocked(hit.image_url) if hit.image_url else None)
                     or await self.network.refusal(hit.url, refuse_unresolved=False)
                     or (await self.network.refusal(hit.image_url, refuse_unresolved=False) if hit.image_url else None))
            if block:
                blocks.append(block)
                continue
            hits.append(hit)
            if len(hits) == limit:
                break
        blocks = _unique_blocks(blocks)
        if not hits:
            return ToolOutcome(status="empty", observation=f'No {kind} found for "{query}".', blocks=blocks,
                               data={"query": query, "results": []})
        lines = [f'{"Image search" if images else "Search"} results for "{query}":']
        results, sources = [], []
        for hit in hits:
            source = episode.source(SimpleNamespace(url=hit.url, content_sha256=None, published=hit.published))
            sources.append(source)
            line = _hit_line(hit)
            if images:
                lines.append(f"[{source.evidence_id}] image {hit.image_url}\n    on {line}\n    {hit.url}")
            else:
                lines.append(f"[{source.evidence_id}] {line}\n    {hit.url}" + (f"\n    {hit.snippet}" if hit.snippet else ""))
            result = {"evidence_id": source.evidence_id, "url": hit.url, "title": hit.title or None, "site_name": None,
                      "domain": url_host(hit.url), "published": hit.published, "content_sha256": None,
                      "snippet": hit.snippet}
            if images:
                result.update({"image_url": hit.image_url, "image_sha256": None, "alt": hit.title or None})
            results.append(result)
        return ToolOutcome(status="ok", observation="\n".join(lines), sources=_unique(sources), blocks=blocks,
                           data={"query": query, "results": results})

    async def _visit(self, args: dict[str, Any], episode: EpisodeTools) -> ToolOutcome:
        assert self.fetcher is not None
        url = args["url"].strip()
        fetched = await self.fetcher.fetch(url)
        if isinstance(fetched, FetchRefused):
            # Neutral on purpose: neither the content, nor why, nor even the URL echoed back.
            return ToolOutcome(status="blocked", observation="This source is not available.",
                               blocks=_unique_blocks(fetched.blocks))
        if isinstance(fetched, FetchFailed):
            prefix = "Invalid tool call" if fetched.status == "invalid" else f"Could not read {url}"
            return ToolOutcome(status=fetched.status, observation=f"{prefix}: {fetched.message}.", error=fetched.message,
                               data={"url": url})
        page: FetchedPage = fetched
        # An image or link the policy blocks is not passed on (the web knows no image's content: its URL decides).
        images, links, link_blocks = visit_listing(self.policy, page.images, page.links)
        source = episode.source(page)
        text = page.text if len(page.text) <= PAGE_TEXT_LIMIT else page.text[:PAGE_TEXT_LIMIT] + " […truncated]"
        meta = [f"{page.site_name} ({page.domain})" if page.site_name else page.domain,
                f"published {page.published}" if page.published else "publication date unknown"]
        if page.author:
            meta.append(f"by {page.author}")
        lines = [f"[{source.evidence_id}] {page.title or '(untitled)'}", f"URL: {page.url}", "Site: " + " · ".join(meta)]
        if images:
            lines.append("Images on this page:")
            for image in images[:20]:
                lines.append(f"  - {image['image_url']}" + (f' "{image["alt"]}"' if image["alt"] else ""))
        lines += ["Text:", text or "(no readable text)"]
        data = {"evidence_id": source.evidence_id, "url": page.url, "title": page.title, "site_name": page.site_name,
                "domain": page.domain, "published": page.published, "content_sha256": page.content_sha256,
                "author": page.author, "text": page.text,
                "images": [{"image_url": im["image_url"], "sha256": None, "alt": im["alt"]} for im in images],
                "links": links, "requested_url": page.requested_url, "redirects": page.redirects[1:]}
        return ToolOutcome(status="ok", observation="\n".join(lines), sources=[source], blocks=link_blocks, data=data)

    def _blocked(self, url: str, content_sha256: Optional[str] = None) -> Optional[GateDecided]:
        reason = self.policy.check(url, content_sha256)
        return policy_block(url, reason) if reason else None


def _hit_line(hit: SearchResult) -> str:
    meta = [url_host(hit.url), f"published {hit.published}" if hit.published else "publication date unknown"]
    return f'"{hit.title or "(untitled)"}" — ' + ", ".join(meta)


def _invalid(error: str) -> ToolOutcome:
    return ToolOutcome(status="invalid", observation=f"Invalid tool call: {error}", error=error)


def _unique_blocks(blocks: list[GateDecided]) -> list[GateDecided]:
    return list({block.subject: block for block in blocks}.values())


def _unique(sources: list[SourceSeen]) -> list[SourceSeen]:
    return list({source.evidence_id: source for source in sources}.values())
