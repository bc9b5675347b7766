"""A client for a self-hosted SearXNG instance's JSON API: `GET <base>/search?q=…&format=json`
(and `categories=images` for image search). The instance must have the `json` format
enabled (`search.formats: [html, json]` in its settings.yml).

Results keep what the tools show: `url`, `title`, `content` (the snippet), `publishedDate`
(reduced to YYYY-MM-DD) and, for images, `img_src`. Nothing here applies the policy: the
toolbox checks every result before rendering it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Optional
from urllib.parse import urljoin

import httpx

from eviscene.tools.web.fetch import resolve_link, unfetchable

SEARCH_CLIENT_VERSION = "searxng-json-v1"
_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})")


@dataclass(frozen=True)
class SearchResult:
    url: str
    title: str
    snippet: str
    published: Optional[str]
    engine: str = ""
    image_url: Optional[str] = None  # image search: the picture itself (`img_src`)


class SearxngError(Exception):
    pass


class SearxngClient:
    """`search(query, images=...)` against one SearXNG base URL."""

    def __init__(self, base_url: str, *, timeout: float = 15.0, language: str | None = None,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ValueError(f"SearXNG URL must be http(s): {base_url!r}")
        self.base_url = base_url.rstrip("/") + "/"
        self.timeout, self.language, self.transport = timeout, language, transport

    def identity(self) -> str:
        return f"{SEARCH_CLIENT_VERSION}({self.base_url})"

    async def search(self, query: str, *, images: bool = False) -> list[SearchResult]:
        params: dict[str, Any] = {"q": query, "format": "json"}
        if images:
            params["categories"] = "images"
        if self.language:
            params["language"] = self.language
        try:
            async with httpx.AsyncClient(timeout=self.timeout, transport=self.transport,
                                         headers={"Accept": "application/json"}) as client:
                response = await client.get(urljoin(self.base_url, "search"), params=params)
        except httpx.TimeoutException:
            raise SearxngError(f"the search service did not answer within {self.timeout:g} s") from None
        except httpx.HTTPError as exc:
            raise SearxngError(f"the search service is unreachable ({type(exc).__name__})") from None
        if response.status_code != 200:
            hint = " (is the json format enabled in settings.yml?)" if response.status_code == 403 else ""
            raise SearxngError(f"the search service answered HTTP {response.status_code}{hint}")
        try:
            payload = response.json()
        except ValueError:
            raise SearxngError("the search service did not return JSON") from None
        results = []
        for item in payload.get("results") or []:
            if not isinstance(item, dict):
                continue
            url = str(item.get("url") or "").strip()
            if unfetchable(url):
                continue
            image_url = str(item.get("img_src") or "").strip() or None
            if image_url:
                image_url = resolve_link(url, image_url)
            if images and image_url is None:
                continue
            published = _date(item.get("publishedDate") or item.get("pubdate"))
            results.append(SearchResult(url=url, title=str(item.get("title") or "").strip(),
                                        snippet=" ".join(str(item.get("content") or "").split()),
                                        published=published, engine=str(item.get("engine") or ""), image_url=image_url))
        return results


def _date(value: Any) -> Optional[str]:
    match = _DATE.search(str(value or ""))
    return f"{match.group(1)}-{match.group(2)}-{match.group(3)}" if match else None
