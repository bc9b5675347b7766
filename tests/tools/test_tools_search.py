import math

import pytest
from tools_fixtures import CorpusBuilder

from eviscene.tools import BM25, Corpus, CorpusToolbox, tokenize
from eviscene.tools.pages import Page
from eviscene.tools.search import SearchIndex, TextTokens, snippet

# Toy corpus: |d1| = 3, |d2| = 6, |d3| = 3, avgdl = 4, N = 3.
DOCS = ["The cat sat.", "The dog sat on the mat!", "Cat, cat & dog"]


def test_tokenize_lowercases_alphanumeric_runs():
    assert tokenize("The Dog's 2nd-best MAT_x, Köln!") == ["the", "dog", "s", "2nd", "best", "mat", "x", "köln"]


def test_bm25_scores_match_hand_computation():
    index = BM25([tokenize(d) for d in DOCS])
    # "cat": n = 2, idf = ln(1 + (3 - 2 + 0.5) / (2 + 0.5)) = ln(1.6)
    # d1: tf 1, K = 1.2 * (0.25 + 0.75 * 3/4) = 0.975 -> ln(1.6) * 2.2 / 1.975
    # d3: tf 2, same K                             -> ln(1.6) * 4.4 / 2.975
    scores = index.scores(["cat"])
    assert scores[0] == pytest.approx(math.log(1.6) * 2.2 / 1.975)
    assert scores[2] == pytest.approx(math.log(1.6) * 4.4 / 2.975)
    assert 1 not in scores
    # "mat": n = 1, idf = ln(1 + 2.5 / 1.5) = ln(8/3); d2: tf 1, K = 1.2 * (0.25 + 0.75 * 6/4) = 1.65
    # "sat": n = 2, idf = ln(1.6); d1 as above, d2 with K = 1.65
    scores = index.scores(["mat", "sat", "mat"])  # a repeated query term counts once
    assert scores[1] == pytest.approx(math.log(8 / 3) * 2.2 / 2.65 + math.log(1.6) * 2.2 / 2.65)
    assert scores[0] == pytest.approx(math.log(1.6) * 2.2 / 1.975)
    assert [doc for doc, _ in index.rank(["cat"])] == [2, 0]


def test_bm25_idf_stays_positive_for_a_term_in_every_document():
    index = BM25([["a", "b"], ["a"], ["a", "c"]])
    assert index.idf("a") == pytest.approx(math.log(1 + 0.5 / 3.5))
    assert index.idf("zzz") == pytest.approx(math.log(1 + 3.5 / 0.5))


def test_snippet_centers_on_the_query_terms():
    text = " ".join(f"w{i}" for i in range(100)) + " harbor fire at the docks " + " ".join(f"v{i}" for i in range(100))
    piece = snippet(text, ["harbor", "docks"])
    assert "harbor fire at the docks" in piece
    assert piece.startswith("…") and piece.endswith("…")
    assert snippet("short text here", ["nothing"]) == "short text here"


def test_snippet_opens_four_tokens_before_the_first_stretch_with_the_most_terms():
    fillers = lambda prefix: " ".join(f"{prefix}{i}" for i in range(40))  # noqa: E731
    text = f"alpha beta gamma {fillers('f')} Harbor x docks {fillers('g')} harbor docks"
    # Tokens: alpha..gamma 0-2, f0..f39 3-42, Harbor 43 (case-folded), x 44, docks 45, g0.. 46-.
    # The stretch at 43 holds both terms; the later one at the end holds no more, so the
    # snippet is the 36 tokens from 39 (f36) to 74 (g28).
    expected = " ".join(["f36", "f37", "f38", "f39", "Harbor", "x", "docks"] + [f"g{i}" for i in range(29)])
    assert snippet(text, ["harbor", "docks"]) == f"…{expected}…"
    assert snippet("Zu Fuß über die Straße", ["strasse"]) == "Zu Fuß über die Straße"


def test_text_tokens_are_case_folded_with_their_place_in_the_text():
    tokens = TextTokens.of("Zu Fuß über die Straße")
    assert tokens.folded == ("zu", "fuss", "über", "die", "strasse")
    assert tokens.spans == ((0, 2), (3, 6), (7, 11), (12, 15), (16, 22))
    assert TextTokens.of("") == TextTokens((), ())


def test_a_snippet_from_kept_tokens_is_the_snippet_from_the_text():
    fillers = lambda prefix: " ".join(f"{prefix}{i}" for i in range(40))  # noqa: E731
    text = f"alpha beta gamma {fillers('f')} Harbor x docks {fillers('g')} harbor docks"
    expected = " ".join(["f36", "f37", "f38", "f39", "Harbor", "x", "docks"] + [f"g{i}" for i in range(29)])
    kept = TextTokens.of(text)
    assert snippet(text, ["harbor", "docks"], kept) == f"…{expected}…"
    assert snippet(text, ["alpha"], kept) == snippet(text, ["alpha"]) == " ".join(text.split()[:36]) + "…"
    assert snippet("", ["x"], TextTokens.of("")) == ""


@pytest.fixture
def toy_toolbox(tmp_path):
    builder = CorpusBuilder(tmp_path / "corpus")
    for i, text in enumerate(DOCS):
        builder.page(f"https://toy.example/{i + 1}", "", text)
    return CorpusToolbox(Corpus.load(builder.write()), enable_image_retrieval=False, enable_evidence_inspection=False)


@pytest.mark.anyio
async def test_text_search_returns_bm25_ranked_pages(toy_toolbox):
    episode = toy_toolbox.episode("unused.jpg")
    outcome = await toy_toolbox.call("text_search", {"query": "Cat"}, episode)
    assert outcome.status == "ok"
    results = outcome.data["results"]
    assert [r["url"] for r in results] == ["https://toy.example/3", "https://toy.example/1"]
    assert results[0]["score"] == pytest.approx(math.log(1.6) * 4.4 / 2.975, abs=1e-4)
    assert [s.evidence_id for s in outcome.sources] == ["ev-1", "ev-2"]
    assert "[ev-1]" in outcome.observation and "https://toy.example/3" in outcome.observation
    empty = await toy_toolbox.call("text_search", {"query": "zebra"}, episode)
    assert empty.status == "empty" and empty.sources == []
    # Asked again, the pages' kept tokens give the same snippets.
    again = await toy_toolbox.call("text_search", {"query": "Cat"}, toy_toolbox.episode("unused.jpg"))
    assert again.data == outcome.data and again.observation == outcome.observation


@pytest.mark.anyio
async def test_max_results_cuts_the_list(toy_toolbox):
    outcome = await toy_toolbox.call("text_search", {"query": "cat dog sat", "max_results": 2}, toy_toolbox.episode("x.jpg"))
    assert len(outcome.data["results"]) == 2


def _page(number: int, text: str) -> Page:
    return Page(page_id=f"p{number}", url=f"https://toy.example/{number}", domain="toy.example", text=text, content_sha256=f"{number:064x}")


def test_a_query_asked_again_gives_the_same_hits_past_the_kept_ones():
    # 40 pages of one length with "cat" 40, 39, ... 1 times: page i (0-based) has tf 40 - i, so the
    # ranking is the pages in order; 40 hits is more than the 32 kept per query.
    pages = [_page(i, " ".join(["cat"] * (40 - i) + ["dog"] * i)) for i in range(40)]
    index = SearchIndex(pages, [])
    first = list(index.pages("Cat"))
    assert [hit.page.page_id for hit in first] == [f"p{i}" for i in range(40)]
    assert [hit.snippet for hit in first] == [snippet(page.text, ["cat"]) for page in pages]
    again = list(index.pages("cat!"))  # the same terms: the kept ranking
    assert [(hit.page.page_id, hit.score, hit.snippet) for hit in again] == [(hit.page.page_id, hit.score, hit.snippet) for hit in first]
    # A caller that stops early (the policy allowed enough) leaves the rest to the next one.
    partial = index.pages("dog")
    assert next(partial).page.page_id == "p39"
    assert [hit.page.page_id for hit in index.pages("dog")] == [f"p{i}" for i in range(39, 0, -1)]
