"""A client for a self-hosted SearXNG instance's JSON API: `GET <base>/search?q=…&format=json`
(and `categories=images` for image search). The instance must have the `json` format
enabled (`search.formats: [html, json]` in its settings.yml).

Results keep what the tools show: `url`, `title`, `content` (the snippet), `publishedDate`
(reduced to YYYY-MM-DD) and, for images, `img_src`, each as text fit for the log (a lone
surrogate is U+FFFD, a known secret masked, in any form it travels in: the Basic credential
made of the URL's password echoed back, say) and cut to a length a result line needs.
Nothing here applies the policy: the toolbox checks every result before rendering it.

A search the service fails (an HTTP error, an answer slower than the timeout or larger than
`max_bytes`, no JSON) is the agent's observation; a result whose URL is longer than
URL_CHARS is dropped. A service that is not there at all (no
connection, or a gateway in front of it answering 502, 503 or 504, to the search and to its
`/healthz` page alike) is not: its searches wait for it, behind a `CircuitBreaker` shared by
every episode, and once it has been down for the outage timeout the run stops
(`BackendOutage`), its episodes unfinished for `eval resume`, instead of finishing them on
searches that never ran. A failure only one search meets while the service answers its
health page is that search's observation.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Optional
from urllib.parse import urljoin, urlsplit

import anyio
import httpx

from eviscene.errors import BackendOutage
from eviscene.redaction import KnownSecrets, redact, register_proxy_secrets, register_url_secrets
from eviscene.rules.circuit_breaker import CircuitBreaker
from eviscene.rules.jsonl import replace_lone_surrogates
from eviscene.tools.web.fetch import resolve_link, unfetchable

SEARCH_CLIENT_VERSION = "searxng-json-v1"
DEFAULT_MAX_BYTES = 2_000_000  # a SearXNG answer is tens of kB
TITLE_CHARS, SNIPPET_CHARS, URL_CHARS = 300, 1_000, 2_000
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
                 transport: httpx.AsyncBaseTransport | None = None, outage_timeout: float = 600.0,
                 max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        register_url_secrets(base_url)  # a password in it (a proxy's basic auth) is masked wherever it goes
        register_proxy_secrets()  # httpx sends the environment's proxy its credentials
        if not base_url.startswith(("http://", "https://")):
            raise ValueError(f"SearXNG URL must be http(s): {redact(base_url)!r}")
        parts = urlsplit(base_url)
        if parts.query or parts.fragment:
            raise ValueError(f"SearXNG URL must be the instance's base, without a query or fragment: {redact(base_url)!r}")
        self.base_url = base_url.rstrip("/") + "/"
        self.timeout, self.language, self.transport, self.max_bytes = timeout, language, transport, max_bytes
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
                status, body = await self._get("search", params)
                break
            except _Unreachable as failure:
                if await self._answers():
                    raise SearxngError(f"the search service failed this search ({failure})") from None
                await self._wait_for_service(str(failure))
        self.breaker.answered()
        if status != 200:
            hint = " (is the json format enabled in settings.yml?)" if status == 403 else ""
            raise SearxngError(f"the search service answered HTTP {status}{hint}")
        try:
            payload = json.loads(body)
        except (ValueError, RecursionError):  # not JSON, not UTF-8, nested past Python's stack
            raise SearxngError("the search service did not return JSON") from None
        items = payload.get("results") if isinstance(payload, dict) else None
        if not isinstance(items, list):
            raise SearxngError("the search service's answer holds no list of results")
        secrets = KnownSecrets(encoded=True)
        results = []
        for item in items:
            if not isinstance(item, dict):
                continue
            url = _field_text(item.get("url"), secrets)
            if len(url) > URL_CHARS or unfetchable(url):  # a URL cut short would be another page's
                continue
            image_url = _field_text(item.get("img_src"), secrets) or None
            if image_url:
                image_url = resolve_link(url, image_url) if len(image_url) <= URL_CHARS else None
            if images and image_url is None:
                continue
            published = _date(item.get("publishedDate") or item.get("pubdate"))
            results.append(SearchResult(url=url, title=_field_text(item.get("title"), secrets, TITLE_CHARS),
                                        snippet=" ".join(_field_text(item.get("content"), secrets, SNIPPET_CHARS).split()),
                                        published=published, engine=_field_text(item.get("engine"), secrets, TITLE_CHARS),
                                        image_url=image_url))
        return results

    async def _get(self, path: str, params: dict[str, Any] | None = None) -> tuple[int, bytes]:
        """The status and body of `GET <base>/<path>`: connected within the timeout, then the
        whole answer within it again (a trickling answer ends too), at most `max_bytes`."""
        try:
            with anyio.fail_after(2 * self.timeout):
                async with (httpx.AsyncClient(timeout=self.timeout, transport=self.transport,
                                              headers={"Accept": "application/json"}) as client,
                            client.stream("GET", urljoin(self.base_url, path), params=params) as response):
                    if response.status_code in _GATEWAY_DOWN:
                        raise _Unreachable(f"HTTP {response.status_code} from a gateway")
                    body = bytearray()
                    async for chunk in response.aiter_bytes():  # decoded: a gzip bomb counts as it unpacks
                        body += chunk
                        if len(body) > self.max_bytes:
                            raise SearxngError(f"the search service's answer is larger than {self.max_bytes:,} bytes")
                    return response.status_code, bytes(body)
        except httpx.ConnectTimeout:
            raise _Unreachable(f"no connection within {self.timeout:g} s") from None
        except httpx.TimeoutException:
            raise SearxngError(f"the search service did not answer within {self.timeout:g} s") from None
        except TimeoutError:  # connected and answering, too slowly to end
            raise SearxngError(f"the search service's answer took longer than {2 * self.timeout:g} s") from None
        except httpx.ConnectError as exc:  # refused, no such host
            raise _Unreachable(f"no connection: {type(exc).__name__}") from None
        except httpx.TransportError as exc:  # reset, closed before answering, not HTTP
            raise _Unreachable(f"the connection broke: {type(exc).__name__}") from None
        except httpx.HTTPError as exc:  # it answered, in a form httpx cannot read (a broken gzip)
            raise SearxngError(f"the search service's answer could not be read ({type(exc).__name__})") from None

    async def _answers(self) -> bool:
        """Whether the service answers its health page (whatever it says, but a gateway's 5xx):
        then a search it fails is that search's own failure, not an outage."""
        try:
            await self._get("healthz")
        except (_Unreachable, SearxngError):
            return False
        self.breaker.answered()
        return True

    async def _wait_for_service(self, why: str) -> None:
        """A short backoff until the breaker opens, then probes at growing intervals until the
        outage timeout stops the run."""
        breaker = self.breaker
        outage = BackendOutage(f"the search service {breaker.endpoint} unreachable for {breaker.outage_timeout:g} s "
                               f"({why}), the outage timeout")
        await breaker.after_failure(why, lambda failures: 0.5 * 2 ** (failures - 1), lambda: outage)


def _field_text(value: Any, secrets: KnownSecrets, limit: int | None = None) -> str:
    """A field of a result as text for the log: a string or number (else none), each lone
    surrogate U+FFFD, known secrets masked, stripped, cut to `limit` characters (if given)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = str(value)
    elif not isinstance(value, str):
        return ""
    text = secrets.mask(replace_lone_surrogates(value)).strip()
    return text if limit is None or len(text) <= limit else text[: limit - 1] + "…"


def _date(value: Any) -> Optional[str]:
    match = _DATE.search(str(value or ""))
    return f"{match.group(1)}-{match.group(2)}-{match.group(3)}" if match else None
