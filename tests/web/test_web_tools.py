"""The web backends against loopback servers: SearXNG search, page visits, limits and the
source-access policy at every step."""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import time

import pytest
from web_servers import SECRET, start_file_server, start_gateway

from eviscene.errors import BackendOutage
from eviscene.events import GateDecided, ToolReturned
from eviscene.rules.source_policy import ALLOW_ALL, SourceAccessPolicy
from eviscene.tools.cache import CachedToolbox, CacheEntry, ToolCache, cache_key
from eviscene.tools.results import POLICY_GATE, ToolOutcome
from eviscene.tools.web import PageFetcher, SearxngClient, WebToolbox
from eviscene.tools.web.fetch import FetchedPage, FetchRefused, extract
from eviscene.tools.web.network import NetworkGuard

pytestmark = pytest.mark.anyio

# The test servers listen on loopback, which the web backend refuses unless told otherwise.
LOOPBACK_ALLOWED = NetworkGuard(allow_private_network=True)


@pytest.fixture
def toolbox(site, policy):
    fetcher = PageFetcher(policy, timeout=1.0, max_bytes=20_000, max_redirects=3, network=LOOPBACK_ALLOWED)
    return WebToolbox(policy, search=SearxngClient(site.base, timeout=2.0), fetcher=fetcher)


def _no_secret(outcome) -> None:
    assert SECRET not in outcome.observation
    assert SECRET not in repr(outcome.data)
    assert SECRET not in repr(outcome.sources)


async def test_specs_offer_only_web_tools(toolbox):
    assert [s["function"]["name"] for s in toolbox.specs()] == ["text_search", "text_image_search", "visit"]
    assert toolbox.backend_id.startswith("web:search=searxng-json-v1(")


def test_a_private_network_runs_cached_results_are_kept_apart_with_or_without_visits(site, policy):
    """Search hits on private addresses pass the guard only where the run allows them: served from
    the tool cache to a run that does not, they would pass unchecked. The fetcher's identity named
    the permission; a search-only toolbox named it nowhere."""
    search = SearxngClient(site.base)
    ids = {(private, visits): WebToolbox(policy, search=search, network=NetworkGuard(allow_private_network=private),
                                         fetcher=PageFetcher(policy, network=NetworkGuard(allow_private_network=private))
                                         if visits else None).backend_id
           for private in (False, True) for visits in (False, True)}
    assert ids[(True, False)] == ids[(False, False)] + ";private_network"
    assert ids[(True, True)] == ids[(False, True)][:-1] + ",private_network)"  # as before: earlier runs' keys hold
    assert len(set(ids.values())) == 4


async def test_text_search_filters_blocked_results(toolbox, site):
    episode = toolbox.episode("case.jpg")
    outcome = await toolbox.call("text_search", {"query": "flood  riverton"}, episode)
    assert outcome.status == "ok"
    urls = [r["url"] for r in outcome.data["results"]]
    assert urls == [site.url("/article"), site.url("/other")]
    assert [s.evidence_id for s in outcome.sources] == ["ev-1", "ev-2"]
    assert outcome.sources[0].published == "2023-05-04"
    assert outcome.sources[0].content_sha256 is None and outcome.sources[0].source_family == "domain:127.0.0.1"
    assert "[ev-1]" in outcome.observation and "flood riverton" in outcome.observation
    _no_secret(outcome)
    assert "127.0.0.2" not in outcome.observation and "/leak" not in outcome.observation
    reasons = {b.subject: b.reasons for b in outcome.blocks}
    assert reasons == {site.blocked_base + "/story": ["blocked_domain"], site.url("/leak/answer"): ["blocked_url_prefix"]}
    assert all(b.gate == POLICY_GATE and not b.passed for b in outcome.blocks)
    assert site.searches[-1] == "flood riverton"


async def test_max_results_and_image_search(toolbox, site):
    episode = toolbox.episode("case.jpg")
    one = await toolbox.call("text_search", {"query": "flood", "max_results": 1}, episode)
    assert len(one.data["results"]) == 1
    images = await toolbox.call("text_image_search", {"query": "flood"}, episode)
    assert images.status == "ok"
    assert [r["image_url"] for r in images.data["results"]] == [site.url("/images/flood.jpg")]
    assert images.data["results"][0]["evidence_id"] == "ev-1"  # same page as the earlier hit
    assert [b.subject for b in images.blocks] == [site.url("/leak/pic.jpg")]
    _no_secret(images)


async def test_visit_reads_title_date_author_and_text(toolbox, site):
    episode = toolbox.episode("case.jpg")
    await toolbox.call("text_search", {"query": "flood"}, episode)
    outcome = await toolbox.call("visit", {"url": site.url("/article")}, episode)
    assert outcome.status == "ok", outcome.observation
    data = outcome.data
    assert data["title"] == "Flood waters rise in Riverton"
    assert (data["published"], data["author"], data["site_name"]) == ("2023-05-04", "Ana Lopez", "Riverton Gazette")
    assert "burst its banks" in data["text"]
    assert "tracking" not in data["text"] and "Home | News" not in data["text"] and "Copyright" not in data["text"]
    assert data["content_sha256"] == hashlib.sha256(data["text"].encode()).hexdigest()
    assert data["images"] == [{"image_url": site.url("/images/flood.jpg"), "sha256": None, "alt": "Flooded market square"}]
    assert site.url("/other") in data["links"]
    source = outcome.sources[0]
    assert source.evidence_id == "ev-1"  # the search hit's id, now with its content
    assert source.source_family == f"content:{data['content_sha256']}" and source.published == "2023-05-04"
    assert episode.evidence["ev-1"].content_sha256 == data["content_sha256"]
    other = await toolbox.call("visit", {"url": site.url("/other")}, episode)
    assert other.data["published"] == "2021-01-02" and other.sources[0].evidence_id == "ev-2"


async def test_visit_plain_text_and_redirect_chain(toolbox, site):
    episode = toolbox.episode("case.jpg")
    text = await toolbox.call("visit", {"url": site.url("/notes.txt")}, episode)
    assert text.status == "ok" and text.data["text"].startswith("Plain notes.")
    assert text.data["links"] == ["https://example.org/x"]
    chained = await toolbox.call("visit", {"url": site.url("/r1")}, episode)
    assert chained.status == "ok"
    assert chained.data["url"] == site.url("/article")
    assert chained.data["redirects"] == [site.url("/r2"), site.url("/article")]


@pytest.mark.parametrize(
    ("path", "status", "words"),
    [
        ("/loop/1", "error", "too many redirects"),
        ("/big", "error", "too large"),
        ("/big-stream", "error", "too large"),
        ("/file.pdf", "error", "unsupported content type application/pdf"),
        ("/missing", "error", "HTTP 404"),
        ("/to-no-url", "error", "redirects to a URL that cannot be fetched (not a valid URL: 'http://[oops/x'"),
    ],
)
async def test_visit_limits_give_clear_outcomes(toolbox, site, path, status, words):
    outcome = await toolbox.call("visit", {"url": site.url(path)}, toolbox.episode("case.jpg"))
    assert outcome.status == status
    assert words in outcome.observation and words in outcome.error
    assert outcome.sources == [] and outcome.blocks == []


async def test_visit_timeout(toolbox, site):
    started = time.monotonic()
    outcome = await toolbox.call("visit", {"url": site.url("/slow")}, toolbox.episode("case.jpg"))
    assert time.monotonic() - started < 2.5
    assert outcome.status == "error" and "did not load within 1 s" in outcome.observation


async def test_visit_rejects_non_http_urls(toolbox):
    outcome = await toolbox.call("visit", {"url": "file:///etc/passwd"}, toolbox.episode("case.jpg"))
    assert outcome.status == "invalid" and "only http(s) URLs" in outcome.error
    outcome = await toolbox.call("visit", {"url": "http://[oops/x"}, toolbox.episode("case.jpg"))
    assert outcome.status == "invalid" and "not a valid URL: 'http://[oops/x' (Invalid IPv6 URL)" in outcome.error


async def test_a_visit_lists_no_image_on_a_blocked_url(toolbox, site):
    """The page is allowed; one of its pictures sits under a blocked URL prefix, linked to
    itself and described with the answer: neither the picture nor the link is passed on (its
    URL or alt text could name the answer), and its block is logged."""
    before = dict(site.hits)
    outcome = await toolbox.call("visit", {"url": site.url("/gallery")}, toolbox.episode("case.jpg"))
    assert outcome.status == "ok" and "Pictures of the flood." in outcome.observation
    assert outcome.data["images"] == [{"image_url": site.url("/images/flood.jpg"), "sha256": None, "alt": "Flooded market square"}]
    assert "/leak/" not in outcome.observation and "/leak/" not in repr(outcome.data)
    assert outcome.data["links"] == [site.url("/other")]
    assert [(b.subject, b.passed, b.reasons) for b in outcome.blocks] == [(site.url("/leak/pic.jpg"), False, ["blocked_url_prefix"])]
    _no_secret(outcome)
    assert not any("/leak" in k for k, v in site.hits.items() if v != before.get(k, 0))  # nor fetched


async def test_a_cached_visit_shows_no_image_or_link_the_current_policy_blocks(toolbox, site):
    """The policy gained the prefix of a picture (and link) the page shows, same cache
    partition: the visit cached under the old policy is not served, the page is fetched again
    and lists exactly what a fresh visit lists, with its block (before, the cached visit passed
    the picture and the link on, with no gate.decided)."""
    loose = SourceAccessPolicy(policy_id="web-test", blocked_domains=["127.0.0.2"], cache_partition="web-test-v1")
    cache, gallery, leak = ToolCache(ttl_seconds=60), site.url("/gallery"), site.url("/leak/pic.jpg")
    fetcher = PageFetcher(loose, timeout=1.0, max_bytes=20_000, max_redirects=3, network=LOOPBACK_ALLOWED)
    before = CachedToolbox(WebToolbox(loose, fetcher=fetcher), cache)
    earlier = await before.call("visit", {"url": gallery}, before.episode("case.jpg"))
    assert leak in [im["image_url"] for im in earlier.data["images"]] and leak in earlier.data["links"] and earlier.blocks == []

    fetched = site.hits["127.0.0.1/gallery"]
    after = CachedToolbox(toolbox, cache)
    served = await after.call("visit", {"url": gallery}, after.episode("case.jpg"))
    assert served.cache_hit is False and site.hits["127.0.0.1/gallery"] == fetched + 1
    assert served.data["images"] == [{"image_url": site.url("/images/flood.jpg"), "sha256": None, "alt": "Flooded market square"}]
    assert served.data["links"] == [site.url("/other")] and "/leak/" not in served.observation
    assert [(b.subject, b.passed, b.reasons) for b in served.blocks] == [(leak, False, ["blocked_url_prefix"])]
    assert served == await toolbox.call("visit", {"url": gallery}, toolbox.episode("case.jpg"))


async def test_links_no_parser_takes_are_dropped_not_fatal(toolbox, site):
    # A hostile page's links and a search service's hits are whatever they say.
    episode = toolbox.episode("case.jpg")
    page = await toolbox.call("visit", {"url": site.url("/hostile-links")}, episode)
    assert page.status == "ok", page.observation
    assert page.data["links"] == [site.url("/other")] and page.data["images"] == []
    found = await toolbox.call("text_image_search", {"query": "flood"}, episode)
    assert [r["title"] for r in found.data["results"]] == ["Flooded market square"]


@pytest.mark.parametrize(
    ("path", "subject", "reason"),
    [
        ("BLOCKED/story", "BLOCKED/story", "blocked_domain"),
        ("/leak/answer", "/leak/answer", "blocked_url_prefix"),
        ("/to-blocked", "/leak/answer", "blocked_url_prefix"),
        ("/to-blocked-domain", "BLOCKED/article", "blocked_domain"),
        ("/hashed", "/hashed", "blocked_content_sha256"),
    ],
)
async def test_visit_blocks_before_anything_is_shown(toolbox, site, path, subject, reason):
    def full(p):
        return p.replace("BLOCKED", site.blocked_base) if p.startswith("BLOCKED") else site.url(p)

    before = dict(site.hits)
    outcome = await toolbox.call("visit", {"url": full(path)}, toolbox.episode("case.jpg"))
    assert outcome.status == "blocked"
    assert outcome.observation == "This source is not available."
    assert [(b.gate, b.subject, b.passed, b.reasons) for b in outcome.blocks] == [(POLICY_GATE, full(subject), False, [reason])]
    assert outcome.sources == [] and outcome.data == {}
    new = {k: v - before.get(k, 0) for k, v in site.hits.items() if v != before.get(k, 0)}
    assert not any(k.startswith("127.0.0.2") for k in new), new  # the blocked host is never contacted
    assert not any("/leak" in k for k in new), new  # nor a blocked URL


@pytest.fixture(scope="module")
def file_server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("site")
    (folder / "fact-check").mkdir()
    (folder / "fact-check" / "story.html").write_text(LEAK_PAGE, encoding="utf-8")
    server = start_file_server(folder)
    yield server
    server.shutdown()
    server.server_close()


LEAK_PAGE = f"<html><body><p>{SECRET} verdict.</p></body></html>"
# The blocked story, spelled as a file server still serves it: percent escapes (upper and
# lower case, of a letter, a hyphen, a slash, dot segments), a doubled slash, an IPv4 address
# in short and decimal form, and a redirect to an escaped form.
SPELLINGS = [
    "http://127.0.0.1:PORT/fact%2Dcheck/story.html",
    "http://127.0.0.1:PORT/fact%2dcheck/story.html",
    "http://127.0.0.1:PORT/%66act-check/story.html",
    "http://127.0.0.1:PORT//fact-check/story.html",
    "http://127.0.0.1:PORT/fact-check%2fstory.html",
    "http://127.0.0.1:PORT/x/%2e%2e/fact-check/story.html",
    "http://127.1:PORT/fact-check/story.html",
    "http://2130706433:PORT/fact-check/story.html",
]
REDIRECTED = "http://127.0.0.1:PORT/moved?to=/fact%252Dcheck/story.html"  # Location: /fact%2Dcheck/story.html


@pytest.mark.parametrize("spelling", [*SPELLINGS, REDIRECTED])
async def test_visit_refuses_a_blocked_page_however_its_url_is_spelled(file_server, spelling):
    """Each spelling reaches the blocked page when nothing is blocked; under the policy the
    visit is refused before the request (or the redirect hop) and the refusal is the one
    policy gate decision the episode logs, naming the URL as the model (or server) wrote it."""
    port = file_server.server_address[1]
    url = spelling.replace("PORT", str(port))
    fetch_as = functools.partial(PageFetcher, timeout=2.0, network=LOOPBACK_ALLOWED)
    unblocked = await fetch_as(ALLOW_ALL).fetch(url)
    assert isinstance(unblocked, FetchedPage) and SECRET in unblocked.text

    policy = SourceAccessPolicy(policy_id="p", blocked_url_prefixes=[f"http://127.0.0.1:{port}/fact-check/"])
    del file_server.requested[:]
    refused = await fetch_as(policy).fetch(url)
    hop = f"http://127.0.0.1:{port}/fact%2Dcheck/story.html" if spelling == REDIRECTED else url
    assert refused == FetchRefused([GateDecided(gate=POLICY_GATE, subject=hop, passed=False, reasons=["blocked_url_prefix"])])
    assert file_server.requested == (["/moved?to=/fact%252Dcheck/story.html"] if spelling == REDIRECTED else [])


async def test_image_tools_are_not_available_with_the_web_backend(toolbox):
    for name, args in (("reverse_image_search", {}), ("compare_with_reference", {"reference_image_url": "http://x/y.jpg"})):
        outcome = await toolbox.call(name, args, toolbox.episode("case.jpg"))
        assert outcome.status == "invalid"
        assert "not available with the web backend" in outcome.error


async def test_bad_calls_and_ablation(site, policy):
    toolbox = WebToolbox(policy, search=SearxngClient(site.base), fetcher=None, network=LOOPBACK_ALLOWED)
    assert [s["function"]["name"] for s in toolbox.specs()] == ["text_search", "text_image_search"]
    episode = toolbox.episode("case.jpg")
    assert "not available with the web backend" in (await toolbox.call("visit", {"url": site.url("/article")}, episode)).error
    assert (await toolbox.call("text_search", {"query": " "}, episode)).status == "invalid"
    assert (await toolbox.call("nope", {}, episode)).status == "invalid"
    ablated = WebToolbox(policy, search=SearxngClient(site.base), enable_web_search=False, network=LOOPBACK_ALLOWED)
    outcome = await ablated.call("text_search", {"query": "x"}, ablated.episode("case.jpg"))
    assert outcome.status == "invalid" and "not available in this run" in outcome.error


async def test_a_search_service_answering_with_an_error_is_the_agents_observation(site, policy):
    wrong = WebToolbox(policy, search=SearxngClient(site.url("/missing-prefix"), timeout=1.0), network=LOOPBACK_ALLOWED)
    outcome = await wrong.call("text_search", {"query": "flood"}, wrong.episode("case.jpg"))
    assert outcome.status == "error" and "HTTP 404" in outcome.error
    assert wrong.search.breaker.failures == 0  # it answered: the service is there


async def test_a_search_service_nobody_answers_stops_the_run_after_the_outage_timeout(site, policy):
    """No connection is no search result for the agent to read: the call waits (0.5 s, 1 s, then
    probes while the breaker is open) and, the outage timeout spent, raises `BackendOutage`,
    which the toolbox lets through to stop the run."""
    gone = start_gateway(site, down_for=0)
    gone.close()  # its port now has nobody listening
    port = gone.server.server_address[1]
    client = SearxngClient(gone.base, timeout=1.0, outage_timeout=2.5)
    heard = []
    client.breaker.listener = heard.append
    down = WebToolbox(policy, search=client, network=LOOPBACK_ALLOWED)
    started = time.monotonic()
    with pytest.raises(BackendOutage, match=rf"^the search service http://127.0.0.1:{port}/ unreachable for 2.5 s "
                                            r"\(no connection: ConnectError\), the outage timeout$"):
        await down.call("text_search", {"query": "flood"}, down.episode("case.jpg"))
    assert 2.5 <= time.monotonic() - started < 6
    assert heard and heard[0].startswith(f"waiting for http://127.0.0.1:{port}/: no connection: ConnectError, retrying in ")


async def test_a_gateway_answering_503_is_waited_for_and_the_search_runs_when_the_service_is_back(site, policy):
    # Each try a search and a look at the health page, both turned away: the breaker opens on the third.
    gateway = start_gateway(site, down_for=6)
    try:
        client = SearxngClient(gateway.base, timeout=2.0, outage_timeout=30)
        heard = []
        client.breaker.listener = heard.append
        toolbox = WebToolbox(policy, search=client, network=LOOPBACK_ALLOWED)
        outcome = await toolbox.call("text_search", {"query": "flood"}, toolbox.episode("case.jpg"))
    finally:
        gateway.close()
    assert outcome.status == "ok" and "Flood waters rise in Riverton" in outcome.observation
    assert gateway.turned_away == 6 and client.breaker.failures == 0
    assert heard == [f"waiting for {gateway.base}/: HTTP 503 from a gateway, retrying in 1s", None]


async def test_a_failure_only_one_search_meets_is_its_observation_while_the_service_answers(site, policy):
    """A gateway's 502 for one query, while the service answers its health page, is no outage:
    waiting would never end it (other searches keep the breaker closed), and a resume would meet it again."""
    gateway = start_gateway(site, failing_query="Madrid")
    try:
        client = SearxngClient(gateway.base, timeout=2.0, outage_timeout=30)
        toolbox = WebToolbox(policy, search=client, network=LOOPBACK_ALLOWED)
        started = time.monotonic()
        outcome = await toolbox.call("text_search", {"query": "Madrid flood"}, toolbox.episode("case.jpg"))
        assert time.monotonic() - started < 2  # no backoff
        fine = await toolbox.call("text_search", {"query": "Lisbon flood"}, toolbox.episode("case.jpg"))
    finally:
        gateway.close()
    assert outcome.status == "error" and outcome.error == "the search service failed this search (HTTP 502 from a gateway)"
    assert fine.status == "ok" and client.breaker.failures == 0


async def test_a_hostile_answer_becomes_text_fit_for_the_log_and_keeps_no_credential(site, policy):
    """A lone surrogate (which UTF-8 cannot hold: the log's writer refused the whole batch, and
    the run died), the Basic credential the client made of the URL's password echoed back, a
    title of megabytes: each result field is text the log can hold, masked and cut."""
    results = [{"url": site.url("/article"), "title": "Flood \\ud800 warning", "content": "echo {authorization}"},
               {"url": site.url("/other"), "title": "T" * 100_000, "content": "x" * 100_000}]
    answer = json.dumps({"results": results}).replace("\\\\ud800", "\\ud800").encode()
    gateway = start_gateway(site, answer=answer)
    try:
        client = SearxngClient(gateway.base.replace("http://", "http://searcher:hunter2-long-pass@"), timeout=2.0)
        toolbox = WebToolbox(policy, search=client, network=LOOPBACK_ALLOWED)
        outcome = await toolbox.call("text_search", {"query": "flood"}, toolbox.episode("case.jpg"))
    finally:
        gateway.close()
    assert outcome.status == "ok"
    event = ToolReturned(call_id="c", tool="text_search", status=outcome.status, observation=outcome.observation,
                         sources=outcome.sources, data=outcome.data).model_dump_json()  # the writer's serialization
    assert "Flood \ufffd warning" in outcome.observation
    basic = base64.b64encode(b"searcher:hunter2-long-pass").decode()
    assert "hunter2" not in event and basic not in event and "[REDACTED]" in outcome.observation
    titles = [r["title"] for r in outcome.data["results"]]
    assert titles[1] == "T" * 299 + "…" and len(outcome.data["results"][1]["snippet"]) == 1_000


@pytest.mark.parametrize("behaviour, error", [
    ({"answer": b'{"results": []}', "trickle": 0.3}, "the search service's answer took longer than 2 s"),
    ({"answer": b'{"results": [' + b'{"url": "http://a.example/", "title": "t"},' * 100 + b'{}]}'},
     "the search service's answer is larger than 1,000 bytes"),
    ({"answer": b"[1, 2]"}, "the search service's answer holds no list of results"),
    ({"answer": b"[" * 900}, "the search service did not return JSON"),
])
async def test_an_answer_too_slow_too_large_or_of_another_shape_is_the_agents_observation(site, policy, behaviour, error):
    gateway = start_gateway(site, **behaviour)
    try:
        client = SearxngClient(gateway.base, timeout=1.0, max_bytes=1_000)
        toolbox = WebToolbox(policy, search=client, network=LOOPBACK_ALLOWED)
        started = time.monotonic()
        outcome = await toolbox.call("text_search", {"query": "flood"}, toolbox.episode("case.jpg"))
    finally:
        gateway.close()
    assert outcome.status == "error" and outcome.error == error
    assert time.monotonic() - started < 4  # a trickle ends within twice the timeout


def test_credentials_in_the_search_url_are_masked_in_its_identity_and_messages():
    client = SearxngClient("http://searcher:hunter2-long-pass@127.0.0.1:9/")
    assert "hunter2" not in client.identity() and "hunter2" not in client.breaker.endpoint
    assert client.identity() == "searxng-json-v1(http://[REDACTED]@127.0.0.1:9/)"
    with pytest.raises(ValueError, match=r"without a query or fragment: 'http://127.0.0.1:9/searx\?api_key=\[REDACTED\]'"):
        SearxngClient("http://127.0.0.1:9/searx?api_key=sk-proj-abcdefghijklmnop")


def test_extract_meta_variants():
    html = b"""<html><head><meta itemprop="datePublished" content="2020-02-29"><meta property="og:title" content="OG"></head>
    <body><main><p>Body</p></main></body></html>"""
    page = extract(html, "text/html", "https://a.org/x")
    assert (page.title, page.published, page.text) == ("OG", "2020-02-29", "Body")


def test_a_result_stamped_after_now_is_never_served():
    call = ("visit", {"url": "https://a.org/x"})
    outcome = ToolOutcome(status="ok", observation="page")
    now = 1_000_000.0
    cache = ToolCache({cache_key(*call): CacheEntry(outcome, now + 5)}, ttl_seconds=3600, clock=lambda: now)
    assert cache.get(*call) is None
    cache.clock = lambda: now + 5 + 3600  # from its stamp on, fresh for the TTL
    assert cache.get(*call).outcome == outcome
    cache.clock = lambda: now + 5 + 3601
    assert cache.get(*call) is None


async def test_cached_result_gets_fresh_evidence_ids(toolbox, site):
    cache = ToolCache(ttl_seconds=60)
    cached = CachedToolbox(toolbox, cache)
    first = cached.episode("case.jpg")
    live = await cached.call("text_search", {"query": "flood"}, first)
    assert not getattr(live, "cache_hit", False)
    searches = len(site.searches)
    second = cached.episode("case.jpg")
    await cached.call("visit", {"url": site.url("/other")}, second)  # /other takes ev-1 in this episode
    hit = await cached.call("text_search", {"query": " flood "}, second)
    assert hit.cache_hit is True and len(site.searches) == searches
    assert [s.evidence_id for s in hit.sources] == ["ev-2", "ev-1"]
    assert [r["evidence_id"] for r in hit.data["results"]] == ["ev-2", "ev-1"]
    assert hit.observation.index("[ev-2]") < hit.observation.index("[ev-1]")
    assert {b.subject for b in hit.blocks} == {b.subject for b in live.blocks}
    assert hit.sources[1].content_sha256 is not None  # the episode's own, visited source
    # Expired: fetched again.
    cache.ttl_seconds = 0
    cache.clock = lambda: time.time() + 1
    again = await cached.call("text_search", {"query": "flood"}, second)
    assert not getattr(again, "cache_hit", False) and len(site.searches) == searches + 1
