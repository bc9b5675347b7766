"""The one URL normalization of the project: tools, the source-access policy and scoring
all compare URLs through `normalize_url`, so a page is the same page everywhere.

Rules: scheme and host lowercased; `www.` and a trailing dot dropped from the host;
userinfo and default ports (http 80, https 443) dropped; the fragment dropped; trailing
slashes of the path dropped (the bare root becomes no path); `utm_*` parameters dropped from
the query (campaign tags: the bundled releases' process_reference_protocol.json lists the rule),
the rest of the query and the path's case kept as written, since servers may treat them as
significant. An IPv6 host keeps its brackets
(`http://[::1]:8080/x`), so its colons never read as a port's.
"""

from __future__ import annotations

import functools
from urllib.parse import urlsplit

_DEFAULT_PORTS = {"http": 80, "https": 443}


def normalize_host(host: str) -> str:
    """Lowercased host without `www.` prefix or trailing dot: `WWW.Example.com.` -> `example.com`."""
    host = host.strip().lower().rstrip(".")
    if host.startswith("www."):
        host = host[4:]
    return host


@functools.lru_cache(maxsize=8192)  # the tools check the same corpus URLs call after call
def normalize_url(url: str) -> str:
    """Canonical form of `url` used for every URL comparison (see the module docstring)."""
    raw = url.strip()
    if "://" not in raw and not raw.startswith("//"):
        # A bare `host/path` as models often write it: read it as a network location,
        # not as a relative path, but keep it scheme-less.
        raw = "//" + raw
    try:
        parts = urlsplit(raw)
    except ValueError:  # an unclosed `[`, or a host NFKC reads with `/`, `?`, `#`, `@` or `:`
        return url.strip()  # no client fetches it as another URL: it is only ever itself
    scheme = parts.scheme.lower()
    host = normalize_host(parts.hostname or "")
    try:
        port = parts.port
    except ValueError:  # a non-numeric port: keep the URL comparable rather than fail
        port = None
    netloc = bracketed(host)
    if port is not None and port != _DEFAULT_PORTS.get(scheme):
        netloc = f"{netloc}:{port}"
    path = parts.path.rstrip("/")
    kept = "&".join(field for field in parts.query.split("&") if not field.lower().startswith("utm_"))
    query = f"?{kept}" if kept else ""
    prefix = f"{scheme}://" if scheme else "//"
    return f"{prefix}{netloc}{path}{query}"


def without_scheme(normalized: str) -> str:
    """`https://a.org/x` -> `a.org/x`: the key under which http and https forms meet."""
    _, sep, rest = normalized.partition("//")
    return rest if sep else normalized


def url_host(url: str) -> str:
    """Normalized host of `url` (`''` when it has none)."""
    return host_of(without_scheme(normalize_url(url)))


def host_of(key: str) -> str:
    """The host of a normalized URL without its scheme (`without_scheme`), an IPv6 one
    without its brackets."""
    return split_authority(key.split("/", 1)[0].split("?", 1)[0])[0]


def bracketed(host: str) -> str:
    """`host` as a URL writes it: an IPv6 address in brackets (`[::1]`), so that its colons
    never read as a port's."""
    return f"[{host}]" if ":" in host else host


def split_authority(authority: str) -> tuple[str, str]:
    """`example.org:8080` -> (`example.org`, `8080`); `[::1]:8080` -> (`::1`, `8080`); the
    port is `''` when there is none."""
    if authority.startswith("[") and "]" in authority:
        host, _, rest = authority[1:].partition("]")
        return host, rest.removeprefix(":")
    host, _, port = authority.partition(":")
    return host, port
