"""Loopback HTTP servers for the web-backend tests: a small site (pages, redirects, limits)
that also answers SearXNG's `/search?format=json`, counting every request by path, and a
plain file server (`python -m http.server`'s), which decodes request paths as servers do."""

from __future__ import annotations

import functools
import json
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, SimpleHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

SECRET = "LEAKED-ANSWER-7c1e"  # text only blocked pages carry; must never reach an observation

ARTICLE = """<!doctype html><html><head><title>Flood waters rise in Riverton</title>
<meta property="og:site_name" content="Riverton Gazette">
<meta property="article:published_time" content="2023-05-04T08:30:00Z">
<meta name="author" content="Ana Lopez">
<script>var tracking = "should not be text";</script><style>p {color: red}</style>
</head><body><nav>Home | News | Sport</nav>
<article><h1>Flood waters rise in Riverton</h1>
<p>The river burst its banks on Tuesday, May 2, 2023, flooding the old market square.</p>
<p>Photographer Ana Lopez took the picture from the bridge.</p>
<img src="/images/flood.jpg" alt="Flooded market square">
<a href="/other">Related story</a></article>
<footer>Copyright Riverton Gazette</footer></body></html>"""

OTHER = """<html><head><title>Related story</title><meta name="date" content="2021-01-02"></head>
<body><p>An older story about the market square.</p><time datetime="2021-01-02">2 Jan</time></body></html>"""

HASHED = f"""<html><head><title>Fact check: the flood photo</title></head>
<body><p>{SECRET} The flood photo is from 2019.</p></body></html>"""

# Links no URL parser takes (an unclosed `[`; a host NFKC reads with `/`) beside a good one.
HOSTILE_LINKS = """<html><head><title>Odd links</title></head><body><p>Links.</p>
<a href="http://[oops/x">one</a><a href="//[::1">two</a><a href="http://a\uff0fb/">three</a>
<img src="http://[bad/pic.jpg"><a href="/other">Related story</a></body></html>"""

# A page whose pictures include one on a blocked URL, linked to itself and described with the answer.
GALLERY = f"""<html><head><title>Flood pictures</title></head><body><p>Pictures of the flood.</p>
<img src="/images/flood.jpg" alt="Flooded market square"><a href="/leak/pic.jpg"><img src="/leak/pic.jpg" alt="{SECRET} fact check"></a>
<a href="/other">Related story</a></body></html>"""

LEAK = f"""<html><head><title>Answer page</title></head><body><p>{SECRET} verdict.</p></body></html>"""


@dataclass
class Site:
    base: str
    hits: Counter = field(default_factory=Counter)
    searches: list = field(default_factory=list)
    servers: list = field(default_factory=list)
    blocked_base: str = ""

    def url(self, path: str) -> str:
        return self.base + path

    def requests(self) -> int:
        return sum(self.hits.values())

    def close(self) -> None:
        for server in self.servers:
            server.shutdown()
            server.server_close()


def _handler(site: Site):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):  # quiet
            pass

        def _send(self, status: int, body: bytes, content_type: str = "text/html; charset=utf-8",
                  headers: dict | None = None, length: bool = True) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            if length:
                self.send_header("Content-Length", str(len(body)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            try:
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                pass

        def _redirect(self, target: str) -> None:
            self._send(302, b"", headers={"Location": target})

        def do_GET(self) -> None:  # noqa: C901 - a routing table
            parts = urlsplit(self.path)
            path = parts.path
            host = self.headers.get("Host", "")
            site.hits[f"{host.split(':')[0]}{path}"] += 1
            if path == "/search":
                return self._search(parse_qs(parts.query))
            if path == "/article":
                return self._send(200, ARTICLE.encode())
            if path == "/other":
                return self._send(200, OTHER.encode())
            if path == "/gallery":
                return self._send(200, GALLERY.encode())
            if path == "/hostile-links":
                return self._send(200, HOSTILE_LINKS.encode())
            if path == "/to-no-url":
                return self._redirect("http://[oops/x")
            if path == "/notes.txt":
                return self._send(200, b"Plain notes.\nSee https://example.org/x for more.", "text/plain; charset=utf-8")
            if path == "/r1":
                return self._redirect("/r2")
            if path == "/r2":
                return self._redirect(site.url("/article"))
            if path.startswith("/loop/"):
                return self._redirect(f"/loop/{int(path.rsplit('/', 1)[1]) + 1}")
            if path == "/big":
                return self._send(200, b"<html><body>" + b"x" * 50_000 + b"</body></html>")
            if path == "/big-stream":
                self.close_connection = True
                return self._send(200, b"<html><body>" + b"y" * 50_000 + b"</body></html>", length=False)
            if path == "/file.pdf":
                return self._send(200, b"%PDF-1.4 fake", "application/pdf")
            if path == "/slow":
                time.sleep(3)
                return self._send(200, b"<html><body>late</body></html>")
            if path == "/hashed":
                return self._send(200, HASHED.encode())
            if path.startswith("/leak"):
                return self._send(200, LEAK.encode())
            if path == "/to-blocked":
                return self._redirect("/leak/answer")
            if path == "/to-blocked-domain":
                return self._redirect(site.blocked_base + "/article")
            if path == "/story":  # served on the blocked host
                return self._send(200, LEAK.encode())
            return self._send(404, b"not found", "text/plain")

        def _search(self, query: dict) -> None:
            q = query.get("q", [""])[0]
            site.searches.append(q)
            if query.get("format", [""])[0] != "json":
                return self._send(403, b"forbidden", "text/plain")
            if query.get("categories", [""])[0] == "images":
                results = [
                    {"url": site.url("/article"), "title": "Flooded market square", "img_src": "/images/flood.jpg",
                     "content": "", "engine": "fake"},
                    {"url": site.url("/other"), "title": f"{SECRET} image", "img_src": site.url("/leak/pic.jpg"),
                     "content": "", "engine": "fake"},
                    {"url": site.url("/other"), "title": "No image here", "content": "", "engine": "fake"},
                    {"url": site.url("/other"), "title": "Image URL unparsable", "img_src": "http://[bad/pic.jpg",
                     "content": "", "engine": "fake"},
                ]
            else:
                results = [
                    {"url": site.url("/article"), "title": "Flood waters rise in Riverton",
                     "content": f"The river burst its banks ({q})", "publishedDate": "2023-05-04T08:30:00",
                     "engine": "fake"},
                    {"url": site.blocked_base + "/story", "title": f"{SECRET} blocked domain", "content": SECRET,
                     "engine": "fake"},
                    {"url": site.url("/leak/answer"), "title": f"{SECRET} blocked prefix", "content": SECRET,
                     "engine": "fake"},
                    {"url": site.url("/other"), "title": "Related story", "content": "An older story",
                     "publishedDate": None, "engine": "fake"},
                    {"url": "ftp://example.org/x", "title": "not http", "content": "", "engine": "fake"},
                    {"url": "http://[oops/x", "title": "not a URL", "content": "", "engine": "fake"},
                ]
            self._send(200, json.dumps({"query": q, "results": results}).encode(), "application/json")

    return Handler


@dataclass
class Gateway:
    """A proxy in front of the site's search, as SearXNG behind nginx: its first `down_for`
    requests (searches and `/healthz` alike) answered 503, as while the service behind it is
    not running; a search holding `failing_query` answered 502 always (one search's failure);
    `answer` served instead of the site's results (`{authorization}` in it replaced by the
    request's Authorization header, as a service echoing it would), `trickle` seconds between
    its bytes."""

    base: str = ""
    down_for: int = 0
    failing_query: str = ""
    answer: bytes | None = None
    trickle: float = 0.0
    turned_away: int = 0
    server: ThreadingHTTPServer | None = None

    def close(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()


def start_gateway(site: Site, *, down_for: int = 0, **behaviour) -> Gateway:
    gateway = Gateway(down_for=down_for, **behaviour)

    class Handler(_handler(site)):
        def do_GET(self) -> None:
            if gateway.turned_away < gateway.down_for:
                gateway.turned_away += 1
                return self._send(503, b"service unavailable", "text/plain")
            parts = urlsplit(self.path)
            if parts.path == "/healthz":
                return self._send(200, b"OK", "text/plain")
            query = parse_qs(parts.query).get("q", [""])[0]
            if parts.path == "/search" and gateway.failing_query and gateway.failing_query in query:
                return self._send(502, b"bad gateway", "text/plain")
            if parts.path == "/search" and gateway.answer is not None:
                body = gateway.answer.replace(b"{authorization}", self.headers.get("Authorization", "").encode())
                if not gateway.trickle:
                    return self._send(200, body, "application/json")
                self._send(200, b"", "application/json", headers={"Content-Length": str(len(body))}, length=False)
                for byte in body:
                    time.sleep(gateway.trickle)
                    try:
                        self.wfile.write(bytes([byte]))
                        self.wfile.flush()
                    except (BrokenPipeError, ConnectionResetError):
                        return None
                return None
            return super().do_GET()

    gateway.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    gateway.server.daemon_threads = True
    threading.Thread(target=gateway.server.serve_forever, daemon=True).start()
    gateway.base = f"http://127.0.0.1:{gateway.server.server_address[1]}"
    return gateway


def start_site() -> Site:
    """The site on 127.0.0.1 and a copy on 127.0.0.2 (the blocked domain)."""
    site = Site(base="")
    for host in ("127.0.0.1", "127.0.0.2"):
        server = ThreadingHTTPServer((host, 0), _handler(site))
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        site.servers.append(server)
        base = f"http://{host}:{server.server_address[1]}"
        if host == "127.0.0.1":
            site.base = base
        else:
            site.blocked_base = base
    return site


class _FileHandler(SimpleHTTPRequestHandler):
    """`python -m http.server`: percent escapes decoded, `//` and `.`/`..` segments resolved;
    `/moved` redirects to the Location its `to` query names, as written."""

    def log_message(self, *args):  # quiet
        pass

    def do_GET(self) -> None:
        self.server.requested.append(self.path)
        parts = urlsplit(self.path)
        if parts.path == "/moved":
            self.send_response(302)
            self.send_header("Location", parse_qs(parts.query)["to"][0])
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        super().do_GET()


def start_file_server(folder) -> ThreadingHTTPServer:
    """A file server for `folder` on 127.0.0.1; `server.requested` lists each request's path."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_FileHandler, directory=str(folder)))
    server.daemon_threads = True
    server.requested = []
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def start_tls_server(name: str, folder) -> tuple[ThreadingHTTPServer, object]:
    """An HTTPS server on 127.0.0.1 whose self-signed certificate names `name` only (not the
    address); returns it and the certificate's file, to trust. Needs `cryptography`."""
    import datetime
    import ssl

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(hours=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_file, key_file = folder / "tls-cert.pem", folder / "tls-key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_file, key_file)

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):  # quiet
            pass

        def do_GET(self) -> None:
            body = b"<html><head><title>Over TLS</title></head><body><p>Secure page.</p></body></html>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, cert_file
