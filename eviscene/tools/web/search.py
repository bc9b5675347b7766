"""A client for a self-hosted SearXNG instance's JSON API: `GET <base>/search?q=…&format=json`
(and `categories=images` for image search). The instance must have the `json` format
enabled (`search.formats: [html, json]` in its settings.yml).

Results keep what the tools show: `url`, `title`, `content` (the snippet), `publishedDate`
(reduced to YYYY-MM-DD) and, for images, `img_src`. Nothing here applies the policy: the
toolbox checks every result before rendering it.

A search the service fails (an HTTP error, a slow answer, no JSON) is the agent's observation.
A service that is not there at all (no connection, or a gateway in front of it answering 502,
503 or 504) is not: its searches wait for it, behind a `CircuitBreaker` shared by every
episode, and once it has been down for the outage timeout the run stops (`BackendOutage`),
its episodes unfinished for `eval resume`, instead of finishing them on searches that never
ran.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Optional
from urllib.parse import urljoin

import anyio
import httpx

from eviscene.errors import BackendOutage
from eviscene.redaction import redact, register_url_secrets
from eviscene.rules.circuit_breaker import CircuitBreaker
from eviscene.tools.web.fetch import resolve_link, unfetchable

SEARCH_CLIENT_VERSION = "searxng-json-v1"
_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})")
_GATEWAY_DOWN = frozenset({502, 503, 504})  # a proxy in front of a service that is not running


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


class _Unreachable(Exception):
    """No answer from the service itself: the breaker's business, not the agent's."""


class SearxngClient:
    """`search(query, images=...)` against one SearXNG base URL."""

    def __init__(self, base_url: str, *, timeout: float = 15.0, language: str | None = None,
                 transport: httpx.AsyncBaseTransport | None = None, outage_timeout: float = 600.0) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ValueError(f"SearXNG URL must be http(s): {base_url!r}")
        self.base_url = base_url.rstrip("/") + "/"
        self.timeout, self.language, self.transport = timeout, language, transport
        register_url_secrets(self.base_url)  # a password in it (a proxy's basic auth) is masked wherever it goes
        self.breaker = CircuitBreaker(redact(self.base_url), outage_timeout=outage_timeout)

    def identity(self) -> str:
        """The tool cache's key part: the URL as the log keeps it (its credentials masked)."""
        return f"{SEARCH_CLIENT_VERSION}({self.breaker.endpoint})"

    async def search(self, query: str, *, images: bool = False) -> list[SearchResult]:
        params: dict[str, Any] = {"q": query, "format": "json"}
        if images:
            params["categories"] = "images"
        if self.language:
            params["language"] = self.language
        while True:
            try:
                response = await self._get(params)
                break
            except _Unreachable as failure:
                await self._wait_for_service(str(failure))
        self.breaker.answered()
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


    async def _get(self, params: dict[str, Any]) -> httpx.Response:
        try:
            async with httpx.AsyncClient(timeout=self.timeout, transport=self.transport,
                                         headers={"Accept": "application/json"}) as client:
                response = await client.get(urljoin(self.base_url, "search"), params=params)
        except httpx.ConnectTimeout:
            raise _Unreachable(f"no connection within {self.timeout:g} s") from None
        except httpx.TimeoutException:
            raise SearxngError(f"the search service did not answer within {self.timeout:g} s") from None
        except httpx.TransportError as exc:  # refused, reset, closed before answering, no such host
            raise _Unreachable(f"no connection: {type(exc).__name__}") from None
        except httpx.HTTPError as exc:
            raise SearxngError(f"the search service is unreachable ({type(exc).__name__})") from None
        if response.status_code in _GATEWAY_DOWN:
            raise _Unreachable(f"HTTP {response.status_code} from a gateway")
        return response

    async def _wait_for_service(self, why: str) -> None:
        """A short backoff until the breaker opens, then probes at growing intervals until the
        outage timeout stops the run."""
        breaker = self.breaker
        breaker.failed()
        if breaker.open:
            wait = breaker.probe_wait()
            if wait <= 0:
                raise BackendOutage(
                    f"the search service {breaker.endpoint} unreachable for {breaker.outage_timeout:g} s ({why}), "
                    "the outage timeout", base_url=breaker.endpoint,
                )
            breaker.waiting(why, wait)
        else:
            wait = 0.5 * 2 ** (breaker.failures - 1)
        await anyio.sleep(wait)


def _date(value: Any) -> Optional[str]:
    match = _DATE.search(str(value or ""))
    return f"{match.group(1)}-{match.group(2)}-{match.group(3)}" if match else None
