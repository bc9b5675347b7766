"""The source-access policy's matcher: which sources the agent may not see (the benchmark's own
answer pages). The tool layer checks every source against it before anything of the
source reaches an observation, and the trace audit (SQL `source_policy_block`) checks
what the tools allowed by the same matcher; its rules never appear in observations or traces.

Matching:
- `blocked_domains`: the URL's host equals the domain or is a subdomain of it
  (`factcheck.org` blocks `www.factcheck.org` and `news.factcheck.org`, not `notfactcheck.org`).
- `blocked_url_prefixes`: compared after `normalize_url`, ignoring the scheme (a leak over
  http is still a leak); the prefix must end at a path boundary (`/a/story` blocks
  `/a/story`, `/a/story/2`, `/a/story?x`, not `/a/story-2`) unless the prefix itself ends
  in `/`, `?`, `&` or `=`, in which case any continuation matches. A prefix with a query
  (`/story.php?id=42`) names one page: the path must be the same, and the query must hold
  each of its parameters, in any order among others (`?utm_source=x&id=42&p=1`), its last
  one continued when it is open-ended (`?id=` blocks `?x=1&id=42`).
- `blocked_content_sha256`: any content hash known for the source (page text, image bytes).

A URL is blocked when any way a server may read it is blocked, not only the way it is
written: an HTTP client sends `/fact%2Dcheck//story` as written and the server serves
`/fact-check/story`. So domains and prefixes are matched against every reading of the URL
(`_readings`): as written (`normalize_url`), and decoded as servers decode it, with percent
escapes decoded (again and again: a proxy may decode once more), backslashes read as
slashes, repeated slashes merged, the path's case folded (case-insensitive file systems),
`.` and `..` segments resolved and not, the host in its IDNA form (`bücher.example` is
`xn--bcher-kva.example`), a numeric IPv4 host dotted (`127.1` is `127.0.0.1`), an IPv6 one
in its one spelling (an IPv4-mapped one as its IPv4 address), a segment's `;` parameters
dropped (Java servers serve `/fact-check;jsessionid=1/story` and `/;x/fact-check/story` as
`/fact-check/story`: slashes are merged again once they are dropped), a path as IIS reads it (cut at a decoded NUL or
`#`, each segment's trailing dots and spaces dropped: `/fact-check/story.` is the story), and
ports 80 and 443 dropped (the scheme is ignored). Prefixes are read the same way, but for
the IIS reading, which only a URL to fetch gets. Conservative: a
URL one server would not read as a blocked page may be refused too. `normalize_url`, which
scoring compares URLs by, keeps the one reading as written.
"""

from __future__ import annotations

import difflib
import functools
import ipaddress
import json
import posixpath
import re
import socket
import unicodedata
from typing import Any, Iterable, Literal, NamedTuple, Optional
from urllib.parse import unquote, urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from eviscene.rules.urls import (
    bracketed,
    host_of,
    normalize_host,
    normalize_url,
    split_authority,
    without_scheme,
)

BlockReason = Literal["blocked_domain", "blocked_url_prefix", "blocked_content_sha256"]


class _PolicyFile(BaseModel):
    model_config = ConfigDict(extra="ignore")

    policy_id: str = ""
    blocked_domains: list[str] = Field(default_factory=list)
    blocked_url_prefixes: list[str] = Field(default_factory=list)
    blocked_content_sha256: list[str] = Field(default_factory=list)
    cache_partition: Optional[str] = None


class SourceAccessPolicy:
    """Immutable, thread-safe matcher built from a policy file's fields."""

    def __init__(
        self,
        *,
        policy_id: str = "",
        blocked_domains: Iterable[str] = (),
        blocked_url_prefixes: Iterable[str] = (),
        blocked_content_sha256: Iterable[str] = (),
        cache_partition: Optional[str] = None,
    ) -> None:
        self.policy_id = policy_id
        self.cache_partition = cache_partition
        # `*.a.org`, `.a.org` and `a.org` name the same domain; `[::1]` and `::1` one address.
        domains = {_server_host(d.strip().removeprefix("*.").lstrip(".").removeprefix("[").removesuffix("]"))
                   for d in blocked_domains}
        self._domains = frozenset(d for d in domains if d)
        prefixes = []
        for prefix in blocked_url_prefixes:
            if not prefix.strip():
                continue
            last = prefix.strip()[-1]
            open_ended = not last.isalnum() and last != "/"
            prefixes += [_Prefix.of(key, open_ended) for key in _readings(prefix)]
        self._prefixes = tuple(dict.fromkeys(prefixes))
        self._hashes = frozenset(h.strip().lower() for h in blocked_content_sha256 if h.strip())

    @property
    def active(self) -> bool:
        """True when the policy blocks anything at all."""
        return bool(self._domains or self._prefixes or self._hashes)

    def check(self, url: str, content_sha256: Optional[str] = None, *, other_sha256: Iterable[str] = ()) -> Optional[BlockReason]:
        """The reason `url` (with the given content hashes) is blocked, or None when allowed."""
        keys = _readings(url, as_requested=True)
        for host in {host_of(key) for key in keys}:
            if host and any(host == d or host.endswith("." + d) for d in self._domains):
                return "blocked_domain"
        for key in keys:
            if any(prefix.matches(key) for prefix in self._prefixes):
                return "blocked_url_prefix"
        hashes = [content_sha256, *other_sha256]
        if any(h and h.lower() in self._hashes for h in hashes):
            return "blocked_content_sha256"
        return None


ALLOW_ALL = SourceAccessPolicy(policy_id="")


class _Prefix(NamedTuple):
    """One reading (`_readings`) of a blocked URL prefix."""

    key: str
    open_ended: bool
    # Its query's `name=value` parts, when it has a query; the key's authority and path then
    # name the page exactly, and the parameters may come in any order among others
    # (`?utm_source=x&id=42` is `?id=42` to the server).
    parameters: tuple[str, ...] = ()

    @classmethod
    def of(cls, key: str, open_ended: bool) -> _Prefix:
        page, has_query, query = key.partition("?")
        return cls(page, open_ended, tuple(query.split("&"))) if has_query else cls(key, open_ended)

    def matches(self, key: str) -> bool:
        if not self.parameters:
            return key == self.key or (key.startswith(self.key) and (self.open_ended or key[len(self.key)] in "/?"))
        page, _, query = key.partition("?")
        if page != self.key and not page.startswith(self.key + "/"):  # PHP serves `story.php/x?id=42` as the page
            return False
        parameters = query.split("&")
        *whole, last = self.parameters
        # An open-ended prefix's last parameter may go on (`?id=` blocks `?id=42`).
        return (all(p in parameters for p in whole)
                and any(p == last or (self.open_ended and p.startswith(last)) for p in parameters))


# Once the scheme is ignored, both default ports name the host itself.
_DEFAULT_PORTS = frozenset({"80", "443"})
# What `inet_aton` (and so the resolver) reads as an IPv4 address: one to four decimal,
# octal or hex parts (`127.1`, `0x7f.0.0.1`, `2130706433`).
_NUMERIC_HOST = re.compile(r"(0x[0-9a-f]*|[0-9]+)(\.(0x[0-9a-f]*|[0-9]+)){0,3}")


@functools.lru_cache(maxsize=8192)  # the tools check the same search-result URLs call after call
def _readings(url: str, *, as_requested: bool = False) -> frozenset[str]:
    """Every key (a normalized URL without its scheme) a server may read `url` as (see the
    module docstring). Browsers read a backslash as `/` even before the host is split off,
    which can change the host (`http://blocked.example\\@other.example/`), so that form is
    read too, and so is the URL's NFKC form, where `／` is `/` (`urlsplit` refuses such a
    host, and a client may map it). `as_requested`: `url` is one a tool is about to fetch, also
    read as IIS reads a path (`_windows_path`); a blocked prefix is not (cut at its `%23`,
    `/wiki/C%23_(programming_language)` would block every page under `/wiki/c`)."""
    keys: set[str] = set()
    forms = {url} if url.isascii() else {url, unicodedata.normalize("NFKC", url)}
    for text in forms | {form.replace("\\", "/") for form in forms}:
        key = without_scheme(normalize_url(text))
        authority, path, query = re.fullmatch(r"([^/?]*)([^?]*)(.*)", key).groups()
        host, port = split_authority(authority)
        host = _server_host(host)
        authority = bracketed(host) + (f":{port}" if port and port not in _DEFAULT_PORTS else "")
        path = _percent_decoded(path).replace("\\", "/")
        query = _percent_decoded(query)
        keys.add(key)
        # Slashes are merged after the `;` parameters go (`/;x/fact-check` is `//fact-check`,
        # then `/fact-check`), and before `normpath`, which keeps a leading `//`.
        paths = {re.sub(r"/{2,}", "/", p) for p in {path, re.sub(r";[^/]*", "", path)}}
        if as_requested:
            paths |= {_windows_path(p) for p in paths}
        for server_path in paths | {posixpath.normpath(p) for p in paths if p}:
            keys.add(authority + server_path.rstrip("/").lower() + query)
    return frozenset(keys)


def _windows_path(path: str) -> str:
    """`path` as IIS (a Windows file system) reads it: a NUL or a `#` decoded from the path
    ends it, and each segment's trailing dots and spaces are dropped (`/story.` is `/story`),
    a segment of dots keeping its dots (`.. ` is `..`, which `normpath` then resolves)."""
    path = re.split(r"[\x00#]", path, maxsplit=1)[0]
    return "/".join(_windows_segment(segment) for segment in path.split("/"))


def _windows_segment(segment: str) -> str:
    trimmed = segment.rstrip(". ")
    return trimmed if trimmed else segment.rstrip(" ")


def _server_host(host: str) -> str:
    """`host` as the resolver reads it: percent escapes decoded, normalized (`normalize_host`),
    in its IDNA ASCII form, a numeric IPv4 address dotted."""
    host = normalize_host(_percent_decoded(host))
    try:
        # Out to Unicode and back, so the IDNA 2008 form httpx sends for `straße.de`
        # (`xn--strae-oqa.de`) meets the IDNA 2003 one Python's codec gives (`strasse.de`).
        unicode_host = ".".join(label[4:].encode("ascii").decode("punycode") if label.startswith("xn--") else label
                           for label in host.split("."))
        host = unicode_host.encode("idna").decode("ascii")
    except UnicodeError:  # not a valid IDNA name: no resolver reads it otherwise
        pass
    if _NUMERIC_HOST.fullmatch(host):
        try:
            host = socket.inet_ntoa(socket.inet_aton(host))
        except OSError:  # out of range (`1.2.3.999`): no address
            pass
    elif ":" in host:
        try:  # a zone id (`%eth0`) names the interface, not another address
            address = ipaddress.IPv6Address(host.split("%", 1)[0])
        except ValueError:  # not an address: no resolver reads it otherwise
            pass
        else:  # one spelling per address; an IPv4-mapped one reaches the IPv4 host
            host = str(address.ipv4_mapped or address)
    return normalize_host(host)


def _percent_decoded(text: str) -> str:
    """`text` with its percent escapes decoded until none is left (`%252D` -> `%2D` -> `-`)."""
    while (decoded := unquote(text)) != text:
        text = decoded
    return text


def policy_from_fields(data: dict[str, Any]) -> SourceAccessPolicy:
    """The policy a policy file's JSON object describes (unknown keys ignored); ValueError
    `source access policy is malformed: <what> at <field>` when a field has the wrong type."""
    try:
        parsed = _PolicyFile.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise ValueError(f"source access policy is malformed: {first['msg']} "
                         f"at {'.'.join(map(str, first['loc']))}") from None
    return SourceAccessPolicy(**parsed.model_dump())


def checked_policy_from_fields(data: dict[str, Any]) -> SourceAccessPolicy:
    """`policy_from_fields` for a policy file a run is to be guarded by, which also refuses
    (ValueError, one line) what would quietly weaken it: a key no policy has (a misspelled
    `blocked_domain` would block nothing, and the run's own audit, by the same file, would see
    no violation) and a `blocked_domains` entry that is not a bare domain (a URL matches no
    host). The audit reads a recorded policy with `policy_from_fields` alone: a log made
    before this check still reads as it did."""
    known = list(_PolicyFile.model_fields)
    unknown = [key for key in data if key not in known]
    if unknown:
        named = ", ".join(f"{key!r}" + "".join(f" (did you mean {close!r}?)" for close in difflib.get_close_matches(key, known, n=1))
                          for key in unknown)
        raise ValueError(f"source access policy has unknown key(s) {named}; known keys: {', '.join(known)}")
    policy = policy_from_fields(data)
    for entry in data.get("blocked_domains", ()):
        if not _bare_domain(entry):
            host = _host_in(entry)
            hint = f"; write {host!r}" if host and _bare_domain(host) else ""
            raise ValueError(f"source access policy's blocked_domains entry {entry!r} is not a bare domain "
                             f"(it has a scheme, path, port or space){hint}")
    return policy


def _bare_domain(entry: str) -> bool:
    """A domain, subdomain wildcard (`*.a.org`, `.a.org`) or IP address, as `SourceAccessPolicy` reads it."""
    name = entry.removeprefix("*.").lstrip(".")
    if name.startswith("[") and name.endswith("]"):
        name = name[1:-1]
    try:
        ipaddress.IPv6Address(name.split("%", 1)[0])
        return True
    except ValueError:
        return not re.search(r"[\s/\\:?#@]", name)


def _host_in(entry: str) -> str | None:
    """The host a URL or `host:port` written as a domain names, if any."""
    try:
        return urlsplit(entry.strip() if "//" in entry else "//" + entry.strip()).hostname
    except ValueError:
        return None


@functools.lru_cache(maxsize=64)
def _parsed(policy_json: str) -> SourceAccessPolicy:
    return policy_from_fields(json.loads(policy_json))


def policy_block_reason(policy_json: str | None, url: str | None, content_sha256: str | None) -> Optional[BlockReason]:
    """`SourceAccessPolicy.check` for SQL (registered as `source_policy_block`): the reason
    the policy file's JSON blocks `url` with this content hash, or None. The trace audit
    uses it, so a source the tools allowed is never a policy violation."""
    if policy_json is None or url is None:
        return None
    return _parsed(policy_json).check(url, content_sha256)


def cache_partition_name(cache_partition: str | None, policy_id: str | None) -> str:
    """The tool-cache partition of a policy's results: its `cache_partition`, or
    `policy:<policy_id>` when it names none (`policy:` for no policy). The tool cache's
    Python side and its SQL lookup (registered as `cache_partition_name`) both use it."""
    return cache_partition or f"policy:{policy_id or ''}"
