"""The web backend cannot be turned on its host: `visit` and search hits naming loopback,
private, link-local or reserved addresses, directly, through a name that resolves there, or
on a redirect hop, are refused before any connection, each as a `network_guard` gate
decision; `allow_private_network` lets a run reach them (the other web tests rely on it).
A name that resolves differently when connecting (DNS rebinding) is refused at connect."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import anyio
import httpcore
import httpx
import pytest
from web_servers import start_file_server, start_tls_server

from eviscene.eval.options import EvalOptions
from eviscene.eval.run import start_run
from eviscene.log import EventLog
from eviscene.tools.web import PageFetcher, SearxngClient, WebToolbox
from eviscene.tools.web.fetch import FetchedPage, FetchRefused
from eviscene.tools.web.network import NETWORK_GATE, PRIVATE_NETWORK, NetworkGuard, is_public

BENCHMARK = Path(__file__).resolve().parents[2] / "examples" / "eviscene-demo-v1" / "runtime_input" / "cases.jsonl"
# What a DNS server would answer: `public.test` looks like an ordinary site, `sneaky.test`
# is a public-looking name pointing at this machine.
ANSWERS = {"public.test": ["93.184.216.34"], "sneaky.test": ["127.0.0.1"], "split.test": ["93.184.216.34", "10.0.0.7"]}


async def resolver(host: str, port: int) -> list[str]:
    if host not in ANSWERS:
        raise OSError(f"no such host {host}")
    return ANSWERS[host]


class HostsFile(httpx.AsyncBaseTransport):
    """Real HTTP to the loopback site for `*.test` names (as an /etc/hosts entry would do),
    recording every request that reaches the network."""

    def __init__(self, port: int):
        self.port, self.requested = port, []
        self.inner = httpx.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.requested.append(str(request.url))
        if request.url.host.endswith(".test"):
            request.url = request.url.copy_with(host="127.0.0.1", port=self.port)
        assert request.url.host == "127.0.0.1", f"a refused address was contacted: {request.url}"
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


@pytest.fixture
def hosts(site) -> HostsFile:
    return HostsFile(int(site.base.rsplit(":", 1)[1]))


def fetcher(policy, hosts, **guard) -> PageFetcher:
    return PageFetcher(policy, timeout=2.0, transport=hosts, network=NetworkGuard(resolver=resolver, **guard))


def refused(result) -> list[tuple[str, str, list[str]]]:
    assert isinstance(result, FetchRefused), result
    return [(block.gate, block.subject, block.reasons) for block in result.blocks if not block.passed]


@pytest.mark.parametrize("address", ["127.0.0.1", "10.1.2.3", "192.168.0.10", "172.16.5.4", "169.254.169.254",
                                     "100.64.0.1", "0.0.0.0", "224.0.0.1", "::1", "fe80::1", "fd00::1",
                                     "::ffff:127.0.0.1", "240.0.0.1",
                                     # IPv4 inside IPv6: IPv4-compatible, NAT64 (well-known and local), 6to4
                                     "::7f00:1", "64:ff9b::a9fe:a9fe", "64:ff9b:1::a00:1", "2002:a00:1::1",
                                     # never public: IPv4-compatible, NAT64's local-use prefix, Teredo
                                     "::808:808", "64:ff9b:1::808:808", "2001:0:4136:e378:8000:63bf:80ff:fffe",
                                     "::"])
def test_non_public_addresses(address):
    assert not is_public(address)


@pytest.mark.parametrize("address", ["93.184.216.34", "8.8.8.8", "2606:4700:4700::1111", "64:ff9b::808:808",
                                     "2002:808:808::1"])
def test_public_addresses(address):
    assert is_public(address)


@pytest.mark.anyio
@pytest.mark.parametrize("url", [
    "{base}/article",                                  # loopback literal (the test site itself)
    "http://169.254.169.254/latest/meta-data/",        # cloud metadata
    "http://10.0.0.1/admin",
    "http://[::1]:{port}/article",
    "http://[::ffff:127.0.0.1]:{port}/article",
    "http://sneaky.test/article",                       # a public-looking name resolving to 127.0.0.1
    "http://split.test/article",                        # one of its addresses is private
    "http://nowhere.test/article",                      # does not resolve now: not left to a later lookup
])
async def test_visits_to_private_addresses_are_refused_before_connecting(site, policy, hosts, url):
    url = url.format(base=site.base, port=site.base.rsplit(":", 1)[1])
    before = site.requests()
    result = await fetcher(policy, hosts).fetch(url)
    assert refused(result) == [(NETWORK_GATE, url, [PRIVATE_NETWORK])]
    assert hosts.requested == [] and site.requests() == before


@pytest.mark.anyio
async def test_localhost_by_the_system_resolver_is_refused(site, policy, hosts):
    port = site.base.rsplit(":", 1)[1]
    url = f"http://localhost:{port}/article"
    result = await PageFetcher(policy, timeout=2.0, transport=hosts).fetch(url)
    assert refused(result) == [(NETWORK_GATE, url, [PRIVATE_NETWORK])]
    assert hosts.requested == []


@pytest.mark.anyio
async def test_a_redirect_from_an_allowed_server_to_loopback_is_refused(site, policy, hosts):
    page = await fetcher(policy, hosts).fetch("http://public.test/other")
    assert isinstance(page, FetchedPage) and page.title == "Related story"  # the public name is fetched
    before = site.hits["127.0.0.1/article"]
    result = await fetcher(policy, hosts).fetch("http://public.test/r2")  # r2 redirects to 127.0.0.1:<port>/article
    assert refused(result) == [(NETWORK_GATE, site.url("/article"), [PRIVATE_NETWORK])]
    assert hosts.requested[-1] == "http://public.test/r2" and site.hits["127.0.0.1/article"] == before


@pytest.mark.anyio
async def test_allow_private_network_reaches_loopback(site, policy, hosts):
    page = await fetcher(policy, hosts, allow_private_network=True).fetch(site.url("/r1"))
    assert isinstance(page, FetchedPage) and page.url == site.url("/article")


@pytest.mark.anyio
async def test_search_hits_on_private_hosts_are_dropped_as_gate_decisions(site, policy):
    # The SearXNG instance itself is configured by the operator (here on loopback); its hits are not trusted.
    toolbox = WebToolbox(policy, search=SearxngClient(site.base, timeout=2.0), network=NetworkGuard())
    outcome = await toolbox.call("text_search", {"query": "flood"}, toolbox.episode("case.jpg"))
    assert outcome.status == "empty" and outcome.data["results"] == []
    network = {b.subject for b in outcome.blocks if b.gate == NETWORK_GATE}
    assert {site.url("/article"), site.url("/other")} <= network
    assert all(b.reasons == [PRIVATE_NETWORK] and not b.passed for b in outcome.blocks if b.gate == NETWORK_GATE)
    assert toolbox.manifest()["allow_private_network"] is False


def test_a_web_run_without_the_flag_refuses_the_loopback_site_and_logs_each_refusal(site, policy_file, tmp_path):
    log = EventLog(tmp_path / "web.duckdb")
    options = EvalOptions(benchmark=str(BENCHMARK), case_ids=["demo-0001"], search_backend="searxng",
                          searxng_url=site.base, web_timeout=2.0, source_access_policy=str(policy_file()))
    before = dict(site.hits)
    summary = anyio.run(start_run, log, options)
    contacted = {path for path, hits in site.hits.items() if hits != before.get(path, 0)}
    assert contacted == {"127.0.0.1/search"}  # the configured SearXNG only: no page was fetched
    rows = log.sql("SELECT payload::VARCHAR AS p FROM events WHERE type IN ('gate.decided', 'run.started') ORDER BY seq")
    payloads = [json.loads(p) for p in rows["p"].to_pylist()]
    refusals = [p for p in payloads if p.get("gate") == NETWORK_GATE]
    assert refusals and all(p["reasons"] == [PRIVATE_NETWORK] and not p["passed"] for p in refusals)
    assert all(p["subject"].startswith((site.base, site.blocked_base)) for p in refusals)
    manifest = payloads[0]
    assert manifest["agent"]["allow_private_network"] is False
    assert manifest["agent"]["tool_backend"]["allow_private_network"] is False
    assert summary.errored == 0


# -- the address checked is the address connected to ------------------------------------------
# These fetch without an injected transport, so the page fetcher's own connections are tested.


@pytest.fixture
def rebinding_dns(monkeypatch):
    """The system resolver, with `rebind.test` served by a rebinding DNS server: a public
    address to the first lookup (the check), this machine to every later one (the connection)."""
    lookups = []
    system = socket.getaddrinfo

    def getaddrinfo(host, port, *args, **kwargs):
        if host not in ("rebind.test", b"rebind.test"):  # anyio passes the IDNA-encoded bytes
            return system(host, port, *args, **kwargs)
        lookups.append(host)
        address = "93.184.216.34" if len(lookups) == 1 else "127.0.0.1"
        return [(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (address, port))]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return lookups


@pytest.mark.anyio
async def test_a_name_rebound_to_loopback_after_the_check_is_refused_at_connect(site, policy, rebinding_dns):
    url = f"http://rebind.test:{site.base.rsplit(':', 1)[1]}/article"
    before = site.requests()
    result = await PageFetcher(policy, timeout=2.0).fetch(url)
    assert refused(result) == [(NETWORK_GATE, url, [PRIVATE_NETWORK])]
    assert site.requests() == before and len(rebinding_dns) == 2  # checked, then looked up again to connect


def flipping(*answers: list[str]):
    """A resolver whose successive lookups get `answers` in turn (a rebinding DNS server)."""
    queue = list(answers)

    async def resolve(host: str, port: int) -> list[str]:
        return queue.pop(0)

    return resolve


@pytest.mark.anyio
async def test_the_connection_uses_the_guards_resolver_and_its_verdict(policy):
    url = "http://flip.test/latest/meta-data/"
    guard = NetworkGuard(resolver=flipping(["93.184.216.34"], ["169.254.169.254"]))
    result = await PageFetcher(policy, timeout=2.0, network=guard).fetch(url)
    assert refused(result) == [(NETWORK_GATE, url, [PRIVATE_NETWORK])]


@pytest.fixture
def router(monkeypatch):
    """No public server is reachable here: the socket layer sends a connection to any address
    to `router.port` on 127.0.0.1, recording the (address, port) it was asked for."""
    connect = httpcore.AnyIOBackend.connect_tcp

    async def route(self, host, port, *args, **kwargs):
        router.connected.append((host, port))
        return await connect(self, "127.0.0.1", router.port, *args, **kwargs)

    router.connected, router.port = [], 0
    monkeypatch.setattr(httpcore.AnyIOBackend, "connect_tcp", route)
    return router


@pytest.mark.anyio
async def test_a_public_name_is_connected_to_at_the_address_that_was_checked(site, policy, router):
    router.port = int(site.base.rsplit(":", 1)[1])
    page = await PageFetcher(policy, timeout=2.0, network=NetworkGuard(resolver=resolver)).fetch("http://public.test/article")
    assert isinstance(page, FetchedPage) and page.title == "Flood waters rise in Riverton"
    assert router.connected == [("93.184.216.34", 80)] and site.hits["public.test/article"] >= 1  # Host: the name


@pytest.mark.anyio
async def test_a_redirect_hop_rebound_after_its_check_is_refused_and_named(policy, router, tmp_path):
    server = start_file_server(tmp_path)
    try:
        router.port = server.server_address[1]
        hop = "http://flip.test/latest/meta-data/"
        # public.test passes; the hop's check sees a public address, its connection the metadata service.
        names = {"public.test": [["93.184.216.34"]] * 2, "flip.test": [["93.184.216.35"], ["169.254.169.254"]]}

        async def dns(host: str, port: int) -> list[str]:
            return names[host].pop(0)

        fetch = PageFetcher(policy, timeout=2.0, network=NetworkGuard(resolver=dns)).fetch
        result = await fetch(f"http://public.test/moved?to={hop}")
        assert refused(result) == [(NETWORK_GATE, hop, [PRIVATE_NETWORK])]
        assert router.connected == [("93.184.216.34", 80)] and server.requested == [f"/moved?to={hop}"]
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.anyio
async def test_allow_private_network_connects_to_the_resolvers_address_not_a_proxy(site, policy, monkeypatch):
    # `site.test` is unknown to the system resolver: only the guard's resolver knows it. A proxy
    # from the environment is not used (its own lookup could not be checked); this one is closed.
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
    monkeypatch.setenv("ALL_PROXY", "http://127.0.0.1:9")
    before = site.hits["site.test/r1"]
    url = f"http://site.test:{site.base.rsplit(':', 1)[1]}/r1"  # redirects to /r2, then to 127.0.0.1:<port>/article
    guard = NetworkGuard(allow_private_network=True, resolver=flipping(["127.0.0.1"], ["127.0.0.1"]))
    page = await PageFetcher(policy, timeout=2.0, network=guard).fetch(url)
    assert isinstance(page, FetchedPage) and page.url == site.url("/article")
    assert site.hits["site.test/r1"] == before + 1


@pytest.mark.anyio
async def test_tls_is_verified_against_the_name_while_connecting_to_the_address(policy, tmp_path, monkeypatch):
    pytest.importorskip("cryptography")
    server, ca_file = start_tls_server("tls.test", tmp_path)
    try:
        monkeypatch.setenv("SSL_CERT_FILE", str(ca_file))  # the certificate names tls.test only, not 127.0.0.1
        guard = NetworkGuard(allow_private_network=True, resolver=flipping(["127.0.0.1"]))
        page = await PageFetcher(policy, timeout=2.0, network=guard).fetch(f"https://tls.test:{server.server_address[1]}/")
        assert isinstance(page, FetchedPage) and page.title == "Over TLS"
    finally:
        server.shutdown()
        server.server_close()
