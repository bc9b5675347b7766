"""Fetching real pages for `visit` over HTTP (httpx), with limits and the source-access
policy applied at every hop.

Limits: a total time budget (`timeout` seconds for the whole visit, all hops), a size cap
on the body (`max_bytes`, checked against Content-Length and while streaming), at most
`max_redirects` redirects, and only `text/html`, `application/xhtml+xml` and `text/plain`
bodies. The policy sees the requested URL before any request, every redirect target
before it is requested, and the final URL with the sha256 of the extracted text after the
fetch; a block anywhere refuses the whole visit. The network guard (`network.py`) refuses,
before connecting, the requested URL or any redirect hop whose host is or resolves to a
private, loopback, link-local or reserved address (unless the run allows it), and checks
again the addresses each connection is made to. Connections are direct: proxies named in
the environment (HTTP_PROXY …) are not used, as a proxy's own DNS lookup could not be checked.

HTML is reduced to text with BeautifulSoup (the stdlib `html.parser`, no native deps):
scripts, styles and page chrome (nav, header, footer, aside, forms) are dropped. Title,
publication date, author and site name come from the usual meta tags (Open Graph,
`article:published_time`, `itemprop=datePublished`, Dublin Core, `<time datetime>`).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Optional
from urllib.parse import urljoin, urlsplit

import anyio
import httpx
from bs4 import BeautifulSoup

from eviscene.events import GateDecided
from eviscene.rules.source_policy import SourceAccessPolicy
from eviscene.tools.results import policy_block
from eviscene.rules.urls import url_host
from eviscene.tools.web.network import GuardedTransport, NetworkGuard, NonPublicAddress, refusal_block

FETCHER_VERSION = "httpx-bs4-v1"
DEFAULT_MAX_BYTES = 2_000_000
DEFAULT_TIMEOUT = 15.0
DEFAULT_MAX_REDIRECTS = 5
USER_AGENT = "EviScene/0.1 (+image fact verification; research)"
_TEXT_TYPES = ("text/html", "application/xhtml+xml", "text/plain")
_REDIRECTS = {301, 302, 303, 307, 308}
_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})")
_DROP_TAGS = ("script", "style", "noscript", "template", "svg", "nav", "header", "footer", "aside", "form", "iframe")
_DATE_META = (
    "article:published_time", "og:published_time", "og:article:published_time", "datepublished", "date",
    "pubdate", "publishdate", "publish-date", "publication_date", "dc.date", "dc.date.issued", "dcterms.created",
    "dcterms.date", "parsely-pub-date", "sailthru.date", "citation_publication_date",
)


@dataclass(frozen=True)
class FetchedPage:
    url: str                      # final URL after redirects
    requested_url: str
    title: Optional[str]
    published: Optional[str]      # YYYY-MM-DD
    author: Optional[str]
    site_name: Optional[str]
    text: str
    content_sha256: str           # sha256 of `text` as UTF-8
    content_type: str
    images: list[dict] = field(default_factory=list)   # {image_url, alt}
    links: list[str] = field(default_factory=list)
    redirects: list[str] = field(default_factory=list)  # each hop's URL, in order

    @property
    def domain(self) -> str:
        return url_host(self.url)


@dataclass(frozen=True)
class FetchRefused:
    """The policy refused the visit (the requested URL, a redirect hop or the content)."""

    blocks: list[GateDecided]


@dataclass(frozen=True)
class FetchFailed:
    """The page could not be read; `invalid` for a URL that cannot be fetched at all."""

    status: str  # "error" | "invalid" | "empty"
    message: str


class PageFetcher:
    """Policy-checked page fetching; one per run, safe to share across episodes."""

    def __init__(
        self,
        policy: SourceAccessPolicy,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        max_bytes: int = DEFAULT_MAX_BYTES,
        max_redirects: int = DEFAULT_MAX_REDIRECTS,
        transport: httpx.AsyncBaseTransport | None = None,
        network: NetworkGuard | None = None,
    ) -> None:
        self.policy = policy
        self.timeout, self.max_bytes, self.max_redirects = timeout, max_bytes, max_redirects
        self.transport = transport
        self.network = network or NetworkGuard()

    def identity(self) -> str:
        private = ",private_network" if self.network.allow_private_network else ""
        return f"{FETCHER_VERSION}(max_bytes={self.max_bytes},max_redirects={self.max_redirects}{private})"

    async def fetch(self, url: str) -> FetchedPage | FetchRefused | FetchFailed:
        url = url.strip()
        problem = unfetchable(url)
        if problem:
            return FetchFailed("invalid", problem)
        reason = self.policy.check(url)
        if reason:
            return FetchRefused([policy_block(url, reason)])
        hops = [url]
        try:
            with anyio.fail_after(self.timeout):
                refusal = await self.network.refusal(url)
                if refusal:
                    return FetchRefused([refusal])
                return await self._fetch(hops)
        except NonPublicAddress:  # the connection's own lookup was not public: a rebound name
            return FetchRefused([refusal_block(hops[-1])])
        except TimeoutError:
            return FetchFailed("error", f"the page did not load within {self.timeout:g} s")
        except httpx.TimeoutException:
            return FetchFailed("error", f"the page did not load within {self.timeout:g} s")
        except httpx.HTTPError as exc:
            return FetchFailed("error", f"could not fetch the page: {type(exc).__name__}: {exc}")

    async def _fetch(self, hops: list[str]) -> FetchedPage | FetchRefused | FetchFailed:
        """`hops`: the requested URL, each redirect target appended before it is requested."""
        url = hops[0]
        timeout = httpx.Timeout(self.timeout)
        async with httpx.AsyncClient(
            follow_redirects=False, timeout=timeout, transport=self.transport or GuardedTransport(self.network),
            headers={"User-Agent": USER_AGENT,
            "Accept": "text/html,application/xhtml+xml,text/plain;q=0.9,*/*;q=0.1"}
        ) as client:
            current = url
            while True:
                async with client.stream("GET", current) as response:
                    if response.status_code in _REDIRECTS and "location" in response.headers:
                        location = response.headers["location"]
                        target = resolve_link(current, location) or location
                        if len(hops) > self.max_redirects:
                            return FetchFailed("error", f"too many redirects (more than {self.max_redirects})")
                        problem = unfetchable(target)
                        if problem:
                            return FetchFailed("error", f"the page redirects to a URL that cannot be fetched ({problem})")
                        reason = self.policy.check(target)
                        if reason:
                            return FetchRefused([policy_block(target, reason)])
                        refusal = await self.network.refusal(target)
                        if refusal:
                            return FetchRefused([refusal])
                        hops.append(target)
                        current = target
                        continue
                    if response.status_code >= 400:
                        return FetchFailed("error", f"the server answered HTTP {response.status_code}")
                    content_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
                    if content_type not in _TEXT_TYPES:
                        return FetchFailed("error", f"unsupported content type {content_type or '(none)'}: only HTML and "
                                                    "plain-text pages can be read")
                    declared = response.headers.get("content-length")
                    if declared and declared.isdigit() and int(declared) > self.max_bytes:
                        return FetchFailed("error", f"the page is too large ({int(declared):,} bytes; the limit is {self.max_bytes:,})")
                    body = bytearray()
                    async for chunk in response.aiter_bytes():
                        body += chunk
                        if len(body) > self.max_bytes:
                            return FetchFailed("error", f"the page is too large (over the {self.max_bytes:,}-byte limit)")
                    final_url = str(response.url)
                    encoding = response.charset_encoding
                    break
        page = extract(bytes(body), content_type, final_url, encoding=encoding, requested_url=url, redirects=hops)
        reason = self.policy.check(page.url, page.content_sha256)
        if reason:
            return FetchRefused([policy_block(page.url, reason)])
        return page


def resolve_link(base: str, link: str) -> Optional[str]:
    """The absolute URL `link` names on the page at `base`; None when it is no URL at all (an
    unclosed `[`, a host NFKC reads with `/` …), which a hostile page or server may send."""
    try:
        return urljoin(base, link)
    except ValueError:
        return None


def unfetchable(url: str) -> Optional[str]:
    """Why `url` cannot be visited, or None."""
    try:
        parts = urlsplit(url)
    except ValueError as exc:  # an unclosed `[`, a host NFKC reads with `/` …
        return f"not a valid URL: {url!r} ({exc})"
    if parts.scheme.lower() not in {"http", "https"}:
        return f"only http(s) URLs can be visited, got {url!r}"
    if not parts.hostname:
        return f"the URL has no host: {url!r}"
    return None


# -- extraction ------------------------------------------------------------------------------


def extract(body: bytes, content_type: str, url: str, *, encoding: Optional[str] = None,
            requested_url: Optional[str] = None, redirects: Optional[list[str]] = None) -> FetchedPage:
    """The readable text and metadata of one fetched body."""
    if content_type == "text/plain":
        text = _clean_text(body.decode(encoding or "utf-8", errors="replace"))
        return FetchedPage(url=url, requested_url=requested_url or url, title=None, published=_date(url), author=None,
                           site_name=None, text=text, content_sha256=_sha256(text), content_type=content_type,
                           links=_text_links(text), redirects=list(redirects or [url]))
    soup = BeautifulSoup(body, "html.parser", from_encoding=encoding)
    meta: dict[str, str] = {}
    for tag in soup.find_all("meta"):
        key = (tag.get("property") or tag.get("name") or tag.get("itemprop") or "").strip().lower()
        value = (tag.get("content") or "").strip()
        if key and value and key not in meta:
            meta[key] = value
    title = meta.get("og:title") or (soup.title.get_text(" ", strip=True) if soup.title else None) or None
    published = None
    for key in _DATE_META:
        if key in meta and _date(meta[key]):
            published = _date(meta[key])
            break
    if published is None:
        for time_tag in soup.find_all("time"):
            published = _date(time_tag.get("datetime") or time_tag.get_text())
            if published:
                break
    author = meta.get("author") or meta.get("article:author") or meta.get("dc.creator") or None
    site_name = meta.get("og:site_name") or meta.get("application-name") or None
    images = []
    for img in soup.find_all("img"):
        src = (img.get("src") or "").strip()
        image_url = resolve_link(url, src) if src and not src.startswith("data:") else None
        if image_url:
            images.append({"image_url": image_url, "alt": (img.get("alt") or "").strip()})
    links = []
    for anchor in soup.find_all("a"):
        href = (resolve_link(url, (anchor.get("href") or "").strip()) or "").split("#", 1)[0]
        if href.startswith(("http://", "https://")):
            links.append(href)
    for tag in soup.find_all(_DROP_TAGS):
        tag.decompose()
    if soup.title:
        soup.title.decompose()
    root = soup.find("article") or soup.find("main") or soup.body or soup
    text = _clean_text(root.get_text("\n"))
    return FetchedPage(url=url, requested_url=requested_url or url, title=title, published=published, author=author,
                       site_name=site_name, text=text, content_sha256=_sha256(text), content_type=content_type,
                       images=_dedupe(images, "image_url"), links=list(dict.fromkeys(links)), redirects=list(redirects or [url]))


def _clean_text(text: str) -> str:
    lines = (" ".join(line.split()) for line in text.splitlines())
    return "\n".join(line for line in lines if line)


def _date(value: Optional[str]) -> Optional[str]:
    match = _DATE.search(value or "")
    return f"{match.group(1)}-{match.group(2)}-{match.group(3)}" if match else None


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _text_links(text: str) -> list[str]:
    return list(dict.fromkeys(m.rstrip(".,;:!?") for m in re.findall(r"https?://[^\s<>\"'()\[\]]+", text)))


def _dedupe(items: list[dict], key: str) -> list[dict]:
    seen: dict[str, dict] = {}
    for item in items:
        seen.setdefault(item[key], item)
    return list(seen.values())
