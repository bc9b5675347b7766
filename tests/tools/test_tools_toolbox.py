"""The toolbox as the agent uses it: specs, validation, ablation, evidence ids, policy."""

import json
import threading

import pytest
from tools_fixtures import FACTCHECK_TOKEN, HASH_TOKEN, PREFIX_TOKEN, SUBDOMAIN_TOKEN

from eviscene.tools import ALL_TOOLS, Corpus, CorpusToolbox
from eviscene.tools.cache import CachedToolbox, ToolCache
from eviscene.tools.policy import source_policy_from_dict

pytestmark = pytest.mark.anyio


@pytest.fixture
def corpus(news_corpus):
    return Corpus.load(news_corpus["root"])


@pytest.fixture
def toolbox(corpus, news_corpus):
    return CorpusToolbox(corpus, source_policy_from_dict(news_corpus["policy"]))


def names(specs):
    return [spec["function"]["name"] for spec in specs]


async def test_specs_are_openai_function_tools(toolbox):
    specs = toolbox.specs()
    assert names(specs) == list(ALL_TOOLS)
    for spec in specs:
        assert spec["type"] == "function"
        function = spec["function"]
        assert function["description"] and function["parameters"]["type"] == "object"
        assert function["parameters"]["additionalProperties"] is False
    assert json.loads(json.dumps(specs)) == specs


@pytest.mark.parametrize(
    ("flags", "removed"),
    [
        ({"enable_web_search": False}, {"text_search"}),
        ({"enable_image_retrieval": False}, {"text_image_search", "reverse_image_search"}),
        ({"enable_evidence_inspection": False}, {"visit", "compare_with_reference"}),
    ],
)
async def test_ablation_removes_tools_from_specs_and_calls(corpus, news_corpus, flags, removed):
    toolbox = CorpusToolbox(corpus, **flags)
    assert set(names(toolbox.specs())) == set(ALL_TOOLS) - removed
    episode = toolbox.episode(news_corpus["cases"]["reuse"])
    arguments = {"text_search": {"query": "smoke"}, "text_image_search": {"query": "smoke"}, "reverse_image_search": {},
                 "visit": {"url": "https://market.example.net/weekly"},
                 "compare_with_reference": {"reference_image_url": "images/market.jpg"}}
    for name in removed:
        outcome = await toolbox.call(name, arguments[name], episode)
        assert outcome.status == "invalid" and "not available" in outcome.error
        assert outcome.sources == [] and outcome.data == {}
    for name in set(ALL_TOOLS) - removed:
        assert (await toolbox.call(name, arguments[name], episode)).status in {"ok", "empty"}


@pytest.mark.parametrize(
    ("name", "arguments", "message"),
    [
        ("web_search", {"query": "x"}, "unknown tool"),
        ("text_search", {}, "missing required argument 'query'"),
        ("text_search", {"query": 5}, "must be a string, got int"),
        ("text_search", {"query": "   "}, "must not be empty"),
        ("text_search", {"query": "x", "page": 2}, "unexpected argument 'page'"),
        ("text_search", {"query": "x", "max_results": 11}, "between 1 and 10"),
        ("text_search", {"query": "x", "max_results": True}, "must be an integer"),
        ("text_search", ["x"], "must be a JSON object"),
        ("visit", {"link": "https://a.b"}, "missing required argument 'url'"),
        ("compare_with_reference", {"reference_image_url": None}, "must be a string"),
        ("reverse_image_search", {"image_url": 3}, "must be a string"),
    ],
)
async def test_invalid_calls_are_rejected_with_a_clear_error(toolbox, news_corpus, name, arguments, message):
    outcome = await toolbox.call(name, arguments, toolbox.episode(news_corpus["cases"]["reuse"]))
    assert outcome.status == "invalid"
    assert message in outcome.error and message in outcome.observation


async def test_text_tools_run_on_the_event_loop_and_image_tools_in_a_worker_thread(toolbox, news_corpus):
    # A worker thread gives Python-bound work no parallelism (the GIL), only a hand-off; the
    # image tools' OpenCV and NumPy work releases the GIL, so they leave the loop.
    threads = {}
    for name, handler in list(toolbox._handlers.items()):
        def recorded(arguments, episode, name=name, handler=handler):
            threads[name] = threading.get_ident()
            return handler(arguments, episode)
        toolbox._handlers[name] = recorded
    episode = toolbox.episode(news_corpus["cases"]["reuse"])
    arguments = {"text_search": {"query": "smoke"}, "text_image_search": {"query": "smoke"}, "reverse_image_search": {},
                 "visit": {"url": "https://market.example.net/weekly"},
                 "compare_with_reference": {"reference_image_url": "images/market.jpg"}}
    for name in ALL_TOOLS:
        assert (await toolbox.call(name, arguments[name], episode)).status in {"ok", "empty"}
    loop = threading.get_ident()
    assert {name for name, thread in threads.items() if thread == loop} == {"text_search", "text_image_search", "visit"}
    assert set(threads) == set(ALL_TOOLS)


async def test_evidence_ids_are_stable_within_an_episode(toolbox, news_corpus):
    episode = toolbox.episode(news_corpus["cases"]["reuse"])
    first = await toolbox.call("text_search", {"query": "farmers market"}, episode)
    assert [s.evidence_id for s in first.sources] == ["ev-1"]
    assert first.sources[0].url == "https://market.example.net/weekly"
    second = await toolbox.call("text_search", {"query": "harbor warehouse fire docks"}, episode)
    ids = {s.url: s.evidence_id for s in second.sources}
    assert ids["https://archive.example.org/photos/harbor-fire-2015"] == "ev-2"
    again = await toolbox.call("visit", {"url": "HTTPS://market.example.net/weekly/"}, episode)
    assert [s.evidence_id for s in again.sources] == ["ev-1"]
    visit = await toolbox.call("visit", {"url": "https://archive.example.org/photos/harbor-fire-2015"}, episode)
    assert visit.sources[0].evidence_id == "ev-2"
    assert set(episode.evidence) == {s.evidence_id for s in [*first.sources, *second.sources]}
    fresh = toolbox.episode(news_corpus["cases"]["reuse"])
    other = await toolbox.call("visit", {"url": "https://archive.example.org/photos/harbor-fire-2015"}, fresh)
    assert other.sources[0].evidence_id == "ev-1"


async def test_sources_carry_hash_family_and_date(toolbox, news_corpus):
    origin = news_corpus["pages"]["origin"]
    outcome = await toolbox.call("visit", {"url": origin["url"]}, toolbox.episode(news_corpus["cases"]["reuse"]))
    source = outcome.sources[0]
    assert source.url == origin["url"]
    assert source.content_sha256 == origin["content_sha256"]
    assert source.source_family == f"content:{origin['content_sha256']}"
    assert source.published == "2015-06-02"


async def test_visit_shows_the_page_and_its_image_urls(toolbox, news_corpus):
    reuse = news_corpus["pages"]["reuse"]
    outcome = await toolbox.call("visit", {"url": reuse["url"]}, toolbox.episode(news_corpus["cases"]["reuse"]))
    assert outcome.status == "ok"
    assert reuse["text"] in outcome.observation and "published 2021-03-14" in outcome.observation
    image_url = f"{reuse['url']}#image=images/harbor_small.jpg"
    assert image_url in outcome.observation
    assert outcome.data["images"][0]["image_url"] == image_url
    assert outcome.data["links"] == ["https://archive.example.org/photos/harbor-fire-2015"]


async def test_a_visit_lists_no_image_whose_content_the_policy_blocks(corpus, news_corpus):
    """The policy blocks the re-used picture's bytes: the page is shown, but neither that
    image's URL nor its caption, and the block is logged (before, both reached the model)."""
    reuse = news_corpus["pages"]["reuse"]
    [image] = reuse["images"]
    policy = {**news_corpus["policy"], "blocked_content_sha256": [*news_corpus["policy"]["blocked_content_sha256"], image["sha256"]]}
    toolbox = CorpusToolbox(corpus, source_policy_from_dict(policy))
    outcome = await toolbox.call("visit", {"url": reuse["url"]}, toolbox.episode(news_corpus["cases"]["reuse"]))
    image_url = f"{reuse['url']}#image={image['path']}"
    assert outcome.status == "ok" and reuse["text"] in outcome.observation
    assert image_url not in outcome.observation and image["alt"] not in outcome.observation
    assert "Images on this page" not in outcome.observation and outcome.data["images"] == []
    assert [(b.subject, b.passed, b.reasons) for b in outcome.blocks] == [(image_url, False, ["blocked_content_sha256"])]


async def test_a_visit_lists_no_link_the_policy_blocks(corpus, news_corpus):
    """The page links to a source the policy blocks: the link is left out of its listed links
    and its block is logged, as the web backend does (before, the corpus passed it on to the
    agent, which follows listed links, with no gate.decided)."""
    reuse = news_corpus["pages"]["reuse"]
    policy = {**news_corpus["policy"], "blocked_domains": [*news_corpus["policy"]["blocked_domains"], "archive.example.org"]}
    toolbox = CorpusToolbox(corpus, source_policy_from_dict(policy))
    outcome = await toolbox.call("visit", {"url": reuse["url"]}, toolbox.episode(news_corpus["cases"]["reuse"]))
    assert outcome.status == "ok" and outcome.data["links"] == []
    assert [im["image_url"] for im in outcome.data["images"]] == [f"{reuse['url']}#image=images/harbor_small.jpg"]
    assert [(b.subject, b.passed, b.reasons) for b in outcome.blocks] == [
        ("https://archive.example.org/photos/harbor-fire-2015", False, ["blocked_domain"])]


@pytest.mark.parametrize("tightened", ["image", "link"])
async def test_a_cached_visit_shows_nothing_the_current_policy_blocks(corpus, news_corpus, tightened):
    """The policy gained the re-used picture's sha256 (or the domain the page links to), same
    cache partition: the visit cached under the old policy is not served, the page is visited
    again and lists exactly what a fresh visit lists, with the same block (before, the cached
    visit showed the picture, or the link, with no gate.decided)."""
    reuse = news_corpus["pages"]["reuse"]
    image_url, link = f"{reuse['url']}#image=images/harbor_small.jpg", "https://archive.example.org/photos/harbor-fire-2015"
    old = source_policy_from_dict(news_corpus["policy"])
    new = source_policy_from_dict({**news_corpus["policy"], **(
        {"blocked_content_sha256": [*news_corpus["policy"]["blocked_content_sha256"], reuse["images"][0]["sha256"]]}
        if tightened == "image" else {"blocked_domains": [*news_corpus["policy"]["blocked_domains"], "archive.example.org"]})})
    cache, case = ToolCache(ttl_seconds=3600), news_corpus["cases"]["reuse"]
    before = CachedToolbox(CorpusToolbox(corpus, old), cache)
    earlier = await before.call("visit", {"url": reuse["url"]}, before.episode(case))
    assert [im["image_url"] for im in earlier.data["images"]] == [image_url] and earlier.data["links"] == [link]

    fresh_toolbox = CorpusToolbox(corpus, new)
    fresh = await fresh_toolbox.call("visit", {"url": reuse["url"]}, fresh_toolbox.episode(case))
    after = CachedToolbox(CorpusToolbox(corpus, new), cache)
    served = await after.call("visit", {"url": reuse["url"]}, after.episode(case))
    assert served.cache_hit is False and (cache.hits, cache.misses) == (0, 2)
    assert served == fresh
    blocked = (image_url, "blocked_content_sha256") if tightened == "image" else (link, "blocked_domain")
    assert [(b.subject, b.passed, b.reasons) for b in served.blocks] == [(blocked[0], False, [blocked[1]])]
    assert ([im["image_url"] for im in served.data["images"]], served.data["links"]) == (
        ([], [link]) if tightened == "image" else ([image_url], []))
    assert (blocked[0] in served.observation) is (tightened == "link")  # a page's own text keeps its links, as on the web
    # The new result is what the cache serves from now on, its block logged again.
    again = await after.call("visit", {"url": reuse["url"]}, after.episode(case))
    assert again.cache_hit is True and again.data == fresh.data and again.blocks == fresh.blocks


async def test_visit_of_an_unknown_url_is_empty(toolbox, news_corpus):
    outcome = await toolbox.call("visit", {"url": "https://nowhere.example/x"}, toolbox.episode(news_corpus["cases"]["reuse"]))
    assert outcome.status == "empty" and "not found" in outcome.observation.lower() and outcome.sources == []


async def test_reverse_image_search_finds_the_pages_of_the_picture(toolbox, news_corpus):
    episode = toolbox.episode(news_corpus["cases"]["reuse"])
    outcome = await toolbox.call("reverse_image_search", {}, episode)
    assert outcome.status == "ok"
    urls = [m["url"] for m in outcome.data["matches"]]
    # Two corpus files of the picture (original and a smaller re-use); earliest page first per file.
    assert set(urls) == {news_corpus["pages"]["origin"]["url"], news_corpus["pages"]["reuse"]["url"]}
    assert all(m["similarity"] >= 0.5 and not m["edited"] for m in outcome.data["matches"])
    assert {b.reasons[0] for b in outcome.blocks} == {"blocked_domain", "blocked_url_prefix"}
    for match in outcome.data["matches"]:
        assert match["image_url"] in outcome.observation and f"[{match['evidence_id']}]" in outcome.observation


async def test_reverse_image_search_with_a_corpus_image(toolbox, news_corpus):
    episode = toolbox.episode(news_corpus["cases"]["unknown"])
    ref = f"{news_corpus['pages']['reuse']['url']}#image=images/harbor_small.jpg"
    outcome = await toolbox.call("reverse_image_search", {"image_url": ref}, episode)
    assert news_corpus["pages"]["origin"]["url"] in [m["url"] for m in outcome.data["matches"]]
    missing = await toolbox.call("reverse_image_search", {"image_url": "https://x.example/p#image=images/none.jpg"}, episode)
    assert missing.status == "empty"


async def test_reverse_image_search_of_an_unknown_picture_is_empty(toolbox, news_corpus):
    outcome = await toolbox.call("reverse_image_search", {}, toolbox.episode(news_corpus["cases"]["unknown"]))
    assert outcome.status == "empty" and outcome.sources == []


async def test_compare_with_reference_finds_the_edit(toolbox, news_corpus):
    episode = toolbox.episode(news_corpus["cases"]["edited"])
    agency = news_corpus["pages"]["agency"]
    found = await toolbox.call("text_image_search", {"query": "fans stadium final"}, episode)
    image_url = found.data["results"][0]["image_url"]
    assert image_url == f"{agency['url']}#image=images/stadium.jpg"
    outcome = await toolbox.call("compare_with_reference", {"reference_image_url": image_url}, episode)
    assert outcome.status == "ok"
    assert outcome.data["match"] and outcome.data["edited"]
    assert outcome.data["reference_image_sha256"] == agency["images"][0]["sha256"]
    assert "locally altered" in outcome.observation
    assert outcome.sources[0].evidence_id == found.sources[0].evidence_id
    other = await toolbox.call("compare_with_reference", {"reference_image_url": "images/market.jpg"}, episode)
    assert other.status == "ok" and not other.data["match"] and "Not the same picture" in other.observation


async def test_compare_with_reference_ignores_the_caption(toolbox, news_corpus):
    episode = toolbox.episode(news_corpus["cases"]["reuse"])
    origin = news_corpus["pages"]["origin"]
    outcome = await toolbox.call("compare_with_reference", {"reference_image_url": origin["url"]}, episode)
    assert outcome.data["match"] and not outcome.data["edited"]
    assert "caption banner" in outcome.observation


async def test_compare_with_an_unknown_reference_is_empty(toolbox, news_corpus):
    outcome = await toolbox.call("compare_with_reference", {"reference_image_url": "https://x.example/a.jpg"},
                                 toolbox.episode(news_corpus["cases"]["edited"]))
    assert outcome.status == "empty"


async def test_a_failing_tool_returns_error(toolbox, tmp_path):
    outcome = await toolbox.call("reverse_image_search", {}, toolbox.episode(tmp_path / "missing.jpg"))
    assert outcome.status == "error" and "FileNotFoundError" in outcome.error


async def test_blocked_pages_never_reach_any_observation(toolbox, news_corpus):
    pages = news_corpus["pages"]
    hidden = [pages[k] for k in ("factcheck", "subdomain", "prefix", "hashed")]
    secrets = [FACTCHECK_TOKEN, SUBDOMAIN_TOKEN, PREFIX_TOKEN, HASH_TOKEN, "factcheck.example.net", "fact-check",
               "mirror.example.info", *(p["title"] for p in hidden)]
    episode = toolbox.episode(news_corpus["cases"]["reuse"])
    calls = [
        ("text_search", {"query": "smoke photo harbor fire protest 2015", "max_results": 10}),
        ("text_search", {"query": "fact check debunked mirror traced", "max_results": 10}),
        ("text_image_search", {"query": "fact check harbor fire smoke photo traced", "max_results": 10}),
        ("reverse_image_search", {"max_results": 10}),
        *[("visit", {"url": p["url"]}) for p in hidden],
        ("compare_with_reference", {"reference_image_url": f"{pages['factcheck']['url']}#image=images/fc_harbor.jpg"}),
        ("reverse_image_search", {"image_url": f"{pages['prefix']['url']}#image=images/prefix_harbor.jpg"}),
    ]
    outcomes = [await toolbox.call(name, args, episode) for name, args in calls]
    reasons = set()
    for (name, _), outcome in zip(calls, outcomes):
        shown = outcome.observation + json.dumps(outcome.data) + json.dumps([s.model_dump() for s in outcome.sources])
        for secret in secrets:
            assert secret not in shown, (name, secret)
        for block in outcome.blocks:
            assert block.gate == "source_access_policy" and block.passed is False
            assert block.subject in {p["url"] for p in hidden}
            reasons.update(block.reasons)
    assert reasons == {"blocked_domain", "blocked_url_prefix", "blocked_content_sha256"}
    visits = outcomes[4:8]
    assert [o.status for o in visits] == ["blocked"] * 4
    for outcome in visits:
        assert "policy" not in outcome.observation.lower() and "blocked" not in outcome.observation.lower()
        assert len(outcome.blocks) == 1
    assert outcomes[8].status == "blocked" and outcomes[9].status == "blocked"
    # Searches still answer with the allowed pages.
    assert outcomes[0].status == "ok" and pages["origin"]["url"] in outcomes[0].observation
    assert all(s.url not in {p["url"] for p in hidden} for o in outcomes for s in o.sources)
    assert not any(ev.url in {p["url"] for p in hidden} for ev in episode.evidence.values())


async def test_without_policy_the_same_pages_are_visible(corpus, news_corpus):
    toolbox = CorpusToolbox(corpus)
    outcome = await toolbox.call("visit", {"url": news_corpus["pages"]["factcheck"]["url"]}, toolbox.episode(news_corpus["cases"]["reuse"]))
    assert outcome.status == "ok" and FACTCHECK_TOKEN in outcome.observation
