"""Okapi BM25 text search over the corpus: pages (title + text) for `text_search` and
images (alt text + the page's title) for `text_image_search`.

score(D, Q) = sum over distinct query terms t of
    idf(t) * tf(t, D) * (k1 + 1) / (tf(t, D) + k1 * (1 - b + b * |D| / avgdl))
with k1 = 1.2, b = 0.75 and the non-negative idf(t) = ln(1 + (N - n_t + 0.5) / (n_t + 0.5))
(Lucene's form: a term in most documents still counts a little instead of negatively).
Tokens are runs of Unicode letters and digits, case-folded; a query term counts once
however often it is repeated. Ties are broken by document order, so rankings are stable.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Callable, Generic, Iterator, Optional, Sequence, TypeVar

from eviscene.rules.letters import LETTER_OR_DIGIT

if TYPE_CHECKING:
    from eviscene.tools.pages import CorpusEntries, CorpusImage, Page

K1 = 1.2
B = 0.75
_TOKEN = re.compile(LETTER_OR_DIGIT + "+")
_SNIPPET_TOKENS = 36
_SNIPPET_CHARS = 280
_TOKENIZED_PAGES = 1024  # pages whose snippet tokens are kept (a few kB each)
_KEPT_QUERIES = 256  # queries whose best hits are kept, per index
_KEPT_HITS = 32  # a call shows at most 10 (MAX_RESULTS), after the policy's blocks

Hit = TypeVar("Hit")


def tokenize(text: str) -> list[str]:
    return _TOKEN.findall(text.casefold())


class BM25:
    """An inverted index over token lists; `rank` returns (doc index, score) best first.
    Each posting carries its term's whole contribution to the document's score, computed
    once here: a query only adds them up."""

    def __init__(self, documents: Sequence[Sequence[str]], k1: float = K1, b: float = B) -> None:
        self.k1, self.b = k1, b
        self.doc_count = len(documents)
        self.lengths = [len(doc) for doc in documents]
        self.avgdl = (sum(self.lengths) / self.doc_count) if self.doc_count else 0.0
        counts: dict[str, list[tuple[int, int]]] = {}
        for index, doc in enumerate(documents):
            for term, tf in Counter(doc).items():
                counts.setdefault(term, []).append((index, tf))
        self.postings: dict[str, list[tuple[int, float]]] = {}
        for term, docs in counts.items():
            idf = self._idf(len(docs))
            self.postings[term] = [(index, self._weight(idf, tf, index)) for index, tf in docs]

    def idf(self, term: str) -> float:
        return self._idf(len(self.postings.get(term, ())))

    def _idf(self, documents_with_term: int) -> float:
        n = documents_with_term
        return math.log(1.0 + (self.doc_count - n + 0.5) / (n + 0.5))

    def _weight(self, idf: float, tf: int, index: int) -> float:
        norm = self.k1 * (1.0 - self.b + self.b * self.lengths[index] / self.avgdl)
        return idf * tf * (self.k1 + 1.0) / (tf + norm)

    def scores(self, query_terms: Sequence[str]) -> dict[int, float]:
        scores: dict[int, float] = {}
        for term in dict.fromkeys(query_terms):
            for index, weight in self.postings.get(term, ()):
                scores[index] = scores.get(index, 0.0) + weight
        return scores

    def rank(self, query_terms: Sequence[str]) -> list[tuple[int, float]]:
        return sorted(self.scores(query_terms).items(), key=lambda item: (-item[1], item[0]))


@dataclass(frozen=True)
class PageHit:
    page: "Page"
    score: float
    snippet: str


@dataclass(frozen=True)
class ImageHit:
    entry: "CorpusImage"
    score: float


class SearchIndex:
    """Both BM25 indexes of one corpus; immutable once built."""

    def __init__(self, pages: Sequence["Page"], images: Sequence["CorpusImage"]) -> None:
        self._pages = tuple(pages)
        self._images = tuple(images)
        self._page_bm25 = BM25([tokenize(f"{p.title}\n{p.text}") for p in self._pages])
        self._image_bm25 = BM25([tokenize(f"{e.image.alt}\n{e.page.title}") for e in self._images])
        # A page's snippet tokens, kept: each query that hits the page would tokenize it again.
        self._page_tokens = lru_cache(maxsize=_TOKENIZED_PAGES)(lambda index: TextTokens.of(self._pages[index].text))
        self._page_rankings = lru_cache(maxsize=_KEPT_QUERIES)(
            lambda terms: _Ranking(self._page_bm25, terms, lambda index, score: self._page_hit(index, score, terms))
        )
        self._image_rankings = lru_cache(maxsize=_KEPT_QUERIES)(
            lambda terms: _Ranking(self._image_bm25, terms, lambda index, score: ImageHit(self._images[index], score))
        )

    @classmethod
    def build(cls, corpus: "CorpusEntries") -> "SearchIndex":
        return cls(corpus.pages, corpus.images)

    def pages(self, query: str) -> Iterator[PageHit]:
        """Every page with a positive score, best first (callers filter, then cut to k)."""
        return iter(self._page_rankings(tuple(tokenize(query))))

    def images(self, query: str) -> Iterator[ImageHit]:
        return iter(self._image_rankings(tuple(tokenize(query))))

    def _page_hit(self, index: int, score: float, terms: tuple[str, ...]) -> PageHit:
        page = self._pages[index]
        return PageHit(page=page, score=score, snippet=snippet(page.text, terms, self._page_tokens(index)))


class _Ranking(Generic[Hit]):
    """One query's ranking, its best `_KEPT_HITS` kept as hits once made: the rollouts of a
    case ask the same queries, and ranking and snippets were most of a text_search's CPU on
    the event loop (bench/providers.py). Iterating gives every document with a positive
    score as `make(index, score)`, best first; past the kept ones (a caller whose policy
    blocked most of them) the query is ranked again."""

    def __init__(self, bm25: BM25, terms: tuple[str, ...], make: Callable[[int, float], Hit]) -> None:
        self._bm25, self._terms, self._make = bm25, terms, make
        ranked = bm25.rank(terms)
        self._best, self._more = ranked[:_KEPT_HITS], len(ranked) > _KEPT_HITS
        self._hits: dict[int, Hit] = {}  # position -> hit, made when first read; setdefault keeps one if threads race

    def __iter__(self) -> Iterator[Hit]:
        for position, (index, score) in enumerate(self._best):
            hit = self._hits.get(position)
            if hit is None:
                hit = self._hits.setdefault(position, self._make(index, score))
            yield hit
        if self._more:
            for index, score in self._bm25.rank(self._terms)[_KEPT_HITS:]:
                yield self._make(index, score)


@dataclass(frozen=True)
class TextTokens:
    """A text's tokens, each case-folded, and where each stands in the text."""

    folded: tuple[str, ...]
    spans: tuple[tuple[int, int], ...]

    @classmethod
    def of(cls, text: str) -> "TextTokens":
        matches = list(_TOKEN.finditer(text))
        return cls(tuple(match.group().casefold() for match in matches), tuple(match.span() for match in matches))


def snippet(text: str, terms: Sequence[str], text_tokens: Optional[TextTokens] = None) -> str:
    """The stretch of `text` holding the most distinct query terms (first such stretch);
    `text_tokens` are the text's own, when the caller keeps them."""
    wanted = set(terms)
    if text_tokens is None:
        text_tokens = TextTokens.of(text)
    tokens = text_tokens.folded
    if not tokens:
        return ""
    # A stretch opens at the first token or at a query term; none holds more than every term.
    best_start, best_count = 0, -1
    for start in (i for i, token in enumerate(tokens) if i == 0 or token in wanted):
        count = len(wanted.intersection(tokens[start:start + _SNIPPET_TOKENS]))
        if count > best_count:
            best_start, best_count = start, count
            if count == len(wanted):
                break
    # Open a few tokens before the first hit so the match reads in context.
    first = max(0, best_start - 4) if best_start else 0
    shown = text_tokens.spans[first:first + _SNIPPET_TOKENS]
    begin, end = shown[0][0], shown[-1][1]
    piece = " ".join(text[begin:end].split())
    if len(piece) > _SNIPPET_CHARS:
        piece = piece[:_SNIPPET_CHARS].rsplit(" ", 1)[0]
        end = -1
    prefix = "…" if begin > 0 else ""
    suffix = "…" if end == -1 or end < len(text.rstrip()) else ""
    return f"{prefix}{piece}{suffix}"
