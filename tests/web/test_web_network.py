"""The web backend cannot be turned on its host: `visit` and search hits naming loopback,
private, link-local or reserved addresses, directly, through a name that resolves there, or
on a redirect hop, are refused before any connection, each as a `network_guard` gate
decision; `allow_private_network` lets a run reach them (the other web tests rely on it)."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import httpx
import pytest

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
