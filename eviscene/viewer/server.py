"""`eviscene view`: the read-only web UI over a log (stdlib ThreadingHTTPServer). Every
request reads a fresh snapshot through `EventLog.connect`, so a run that is writing shows
up as it goes, and the server never takes a lock a writer needs nor writes anything."""

from __future__ import annotations

import ipaddress
import socket
import threading
import traceback
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import duckdb

from eviscene.errors import EvisceneError, RunNotFoundError
from eviscene.log import EventLog
from eviscene.viewer import data, pages
from eviscene.viewer.images import RunImages
from eviscene.viewer.predicate import PredicateError
from eviscene.viewer.results_cache import ResultCache

STATIC_FILES = {
    "viewer.css": "text/css; charset=utf-8",
    "viewer.js": "text/javascript; charset=utf-8",
    "vendor/vega.min.js": "text/javascript; charset=utf-8",
    "vendor/vega-lite.min.js": "text/javascript; charset=utf-8",
    "vendor/vega-embed.min.js": "text/javascript; charset=utf-8",
}
SCRIPTS = ("vendor/vega.min.js", "vendor/vega-lite.min.js", "vendor/vega-embed.min.js", "viewer.js")
# Vega compiles its expressions with Function(), and vega-embed adds its own <style>.
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self' 'unsafe-eval'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
PAGE_SIZE = 50
# A loopback viewer answers only to loopback names: a page of another site whose name an
# attacker re-points at 127.0.0.1 (DNS rebinding) sends its own name as Host and is refused.
LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})
# What browsers say of a request another site's page made (an <img>, a form, a fetch):
# refused; curl and a typed URL send none or `none`.
# A link followed from elsewhere (a chat, a notebook) is a navigation to a page, whose answer
# that site never reads: answered, as a typed URL is, but without the filter or search it may
# carry (another site's script can navigate too, and would have the viewer run its query).
FROM_ELSEWHERE_IGNORED = ("filter", "q")
CROSS_SITE_FETCHES = frozenset({"cross-site", "same-site"})


def allowed_host_names(host: str, bound_address: str) -> frozenset[str] | None:
    """The Host names a viewer bound to `bound_address` (as `host` was typed) answers to:
    loopback names when the socket is on loopback (`127.0.0.2`, `127.1`, `::ffff:127.0.0.1`
    too), else None, any name (bound elsewhere, it is reached by names it cannot know)."""
    address = ipaddress.ip_address(bound_address.partition("%")[0])
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        address = address.ipv4_mapped
    if not address.is_loopback:
        return None
    return LOOPBACK_NAMES | {host_name_of(host), bound_address.lower(), str(address)}


def host_name_of(host: str) -> str:
    """`--host` as a Host header names it: lower case, an IPv6 address without brackets."""
    return host.strip("[]").lower()


def host_name(header: str) -> str:
    """The name of a Host header, without its port (`[::1]:8765` -> `::1`)."""
    if header.startswith("["):
        return header[1:].partition("]")[0]
    return header.rpartition(":")[0] if header.count(":") == 1 else header


def static_text(name: str) -> str:
    return resources.files("eviscene.viewer").joinpath("static", name).read_text(encoding="utf-8")


class NotFound(EvisceneError):
    pass


class Viewer:
    """The pages, by path: what the handler calls and the tests exercise over HTTP."""

    def __init__(self, log: EventLog, first_look_wait_s: float = data.FIRST_LOOK_WAIT_S):
        self.log = log
        self.first_look_wait_s = first_look_wait_s  # see data.computing
        self.links = pages.Links()
        self._images: dict[str, RunImages] = {}
        self.results = ResultCache(log.path)
        self._lock = threading.Lock()

    def images(self, run_id: str) -> RunImages:
        with self._lock:
            return self._images.setdefault(run_id, RunImages(self.log, run_id))

    def page(self, title: str, body: str, refresh_s: int | None = None) -> str:
        styles = '<link rel="icon" href="data:,"><link rel="stylesheet" href="/static/viewer.css">'
        if refresh_s is not None:
            styles += f'<meta http-equiv="refresh" content="{refresh_s}">'
        scripts = "".join(f'<script src="/static/{name}"></script>' for name in SCRIPTS)
        return pages.layout(title, body, scripts=scripts, styles=styles)

    def route(self, path: str, query: dict[str, str]) -> tuple[int, str, bytes]:
        parts = [unquote(p) for p in path.strip("/").split("/")] if path.strip("/") else []
        html = "text/html; charset=utf-8"
        if not parts:
            runs = data.list_runs(self.log, self.results, self.first_look_wait_s)
            return 200, html, self.page("Runs", pages.runs_page(runs, self.links, str(self.log.path))).encode()
        if parts == ["fragment", "runs"]:
            return 200, html, pages.runs_table(data.list_runs(self.log, self.results, self.first_look_wait_s), self.links).encode()
        if parts[0] == "static" and "/".join(parts[1:]) in STATIC_FILES:
            name = "/".join(parts[1:])
            return 200, STATIC_FILES[name], static_text(name).encode()
        if parts[0] == "image" and len(parts) == 3:
            found = self.images(parts[1]).read(parts[2])
            if found is None:
                raise NotFound(f"no image {parts[2]} in run {parts[1]}")
            return 200, found[1], found[0]
        if parts == ["compare"]:
            if not query.get("a") or not query.get("b"):
                raise EvisceneError("pick two runs to compare (A and B)")
            result = data.compare(self.log, query["a"], query["b"])
            return 200, html, self.page("Compare", pages.compare_page(result, self.links)).encode()
        if parts[0] == "run" and len(parts) >= 2:
            if len(parts) == 2:
                dashboard = data.dashboard(self.log, parts[1], self.results, self.first_look_wait_s)
                if "computing_s" in dashboard:  # reloads itself until the numbers are there
                    return 200, html, self.page(parts[1], pages.computing_page(dashboard, self.links), refresh_s=2).encode()
                return 200, html, self.page(parts[1], pages.dashboard_page(dashboard, self.links)).encode()
            run = data.known_run(self.log, parts[1], self.results)
            if parts[2:] == ["episodes"]:
                return 200, html, self.page("Episodes", self._episodes(run, query)).encode()
            if len(parts) == 4 and parts[2] == "episode":
                story = data.episode_stories(self.log, run["run_id"], parts[3], self.results)[0]
                body = pages.episode_page(story, run, self.links, lambda sha: self.links.image(run["run_id"], sha))
                return 200, html, self.page(parts[3], body).encode()
        raise NotFound(f"no page {path}")

    def _episodes(self, run: dict[str, Any], query: dict[str, str]) -> str:
        predicate, search = query.get("filter", ""), query.get("q", "")
        sort, descending = query.get("sort", "episode_id"), query.get("desc") == "1"
        try:
            page = int(query.get("page", "1"))
        except ValueError:
            page = 1
        try:
            found = data.episode_list(self.log, run["run_id"], predicate=predicate, search=search, sort=sort,
                                      descending=descending, page=page, page_size=PAGE_SIZE, cache=self.results)
            error = None
        except (PredicateError, duckdb.Error) as exc:
            found, error = None, str(exc).splitlines()[0]
        return pages.episodes_page(run, found, self.links, predicate=predicate, search=search, sort=sort,
                                   descending=descending, error=error)


def _handler(viewer: Viewer, allowed_hosts: frozenset[str] | None) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "eviscene-view"

        def log_message(self, format: str, *args: Any) -> None:  # quiet: the terminal shows the URL only
            pass

        def _send(self, status: int, media_type: str, body: bytes, *, head: bool = False) -> None:
            self.send_response(status)
            self.send_header("Content-Type", media_type)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.send_header("X-Content-Type-Options", "nosniff")
            self.send_header("Content-Security-Policy", CONTENT_SECURITY_POLICY)
            self.end_headers()
            if not head:
                self.wfile.write(body)

        def _refusal(self) -> str | None:
            """Why this request is refused (one line), or None."""
            host = host_name(self.headers.get("Host", "")).lower()
            if allowed_hosts is not None and host not in allowed_hosts:
                return f"Host {host!r} refused: a viewer bound to loopback answers to localhost, 127.0.0.1, ::1 and its --host only"
            followed_link = (self.headers.get("Sec-Fetch-Mode", "").lower(), self.headers.get("Sec-Fetch-Dest", "").lower()) == (
                "navigate", "document")
            if self._from_another_site() and not followed_link:
                return (f"a {self.headers['Sec-Fetch-Site'].lower()} request refused: the viewer answers its own pages, "
                        "a typed URL and tools like curl only")
            origin = self.headers.get("Origin")
            if origin is not None and origin != f"http://{self.headers.get('Host', '')}":
                return f"a request from origin {origin!r} refused: the viewer answers its own pages only"
            return None

        def _from_another_site(self) -> bool:
            return self.headers.get("Sec-Fetch-Site", "").lower() in CROSS_SITE_FETCHES

        def _serve(self, head: bool) -> None:
            refusal = self._refusal()
            if refusal is not None:
                self._send(HTTPStatus.FORBIDDEN, "text/plain; charset=utf-8", f"{refusal}\n".encode(), head=head)
                return
            url = urlsplit(self.path)
            query = {k: v[-1] for k, v in parse_qs(url.query, keep_blank_values=True).items()
                     if not (k in FROM_ELSEWHERE_IGNORED and self._from_another_site())}
            try:
                status, media_type, body = viewer.route(url.path, query)
            except (NotFound, RunNotFoundError) as exc:
                status, media_type, body = 404, "text/html; charset=utf-8", viewer.page("Not found", f'<h1>Not found</h1><p class="error">{pages.esc(exc)}</p>').encode()
            except (EvisceneError, duckdb.Error) as exc:
                status, media_type, body = 400, "text/html; charset=utf-8", viewer.page("Error", f'<h1>Error</h1><p class="error">{pages.esc(exc)}</p>').encode()
            except Exception as exc:  # a bug: say so on the page and in the terminal, keep serving
                traceback.print_exc()
                status, media_type, body = 500, "text/html; charset=utf-8", viewer.page("Error", f'<h1>Internal error</h1><pre>{pages.esc(exc)}</pre>').encode()
            self._send(status, media_type, body, head=head)

        def do_GET(self) -> None:
            self._serve(head=False)

        def do_HEAD(self) -> None:
            self._serve(head=True)

        def _refuse(self) -> None:
            self._send(HTTPStatus.METHOD_NOT_ALLOWED, "text/plain; charset=utf-8", b"the viewer is read-only\n")

        do_POST = do_PUT = do_DELETE = do_PATCH = _refuse

    return Handler


class _Server(ThreadingHTTPServer):
    daemon_threads = True


class _Server6(_Server):
    address_family = socket.AF_INET6


def make_server(log: EventLog, host: str = "127.0.0.1", port: int = 8765, first_look_wait_s: float = data.FIRST_LOOK_WAIT_S) -> ThreadingHTTPServer:
    server_class = _Server6 if ":" in host else _Server
    server = server_class((host_name_of(host), port), BaseHTTPRequestHandler)
    # Loopback or not is what the socket is bound to, however --host spelled it.
    server.RequestHandlerClass = _handler(Viewer(log, first_look_wait_s), allowed_host_names(host, server.server_address[0]))
    return server
