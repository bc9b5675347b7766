"""The offline policy's reading of a conversation: what the claim says, what each tool
returned, and from that the next actions and the verdict.

It sees exactly what a model sees — the perception report in the user message and the tool
results (their structured form, `data`, rides beside each tool message's text) — and never
the release's gold. Choices a model would sample (how many copies to open, which query
to try first) come from the episode's sampling seed.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from eviscene.providers.offline.claim import Claim, mentions, mentions_as_a_name, parse_claim, parse_dates, scripts
from eviscene.rules.compare_regions import NOT_EDITS

# A copy published this long before the claimed date shows the picture predates the claim.
PREDATES_CLAIM_DAYS = 30


@dataclass
class Copy:
    """A page showing the case picture (a reverse-search match or a matched comparison)."""

    evidence_id: str
    url: str
    image_url: str
    published: date | None
    similarity: float
    edited: bool
    regions: list[dict[str, Any]] = field(default_factory=list)  # changed regions of the comparison that found it edited
    compared_directly: bool = False  # confirmed by compare_with_reference, not only by the search


# What the embedded policy decides among: the bundled releases' label set.
VERDICTS = ("authentic", "out_of_context", "manipulated", "unverifiable")


@dataclass
class Investigation:
    claim: Claim
    tools: set[str]
    rng: random.Random
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    copies: dict[str, Copy] = field(default_factory=dict)  # by url
    compared: dict[str, dict[str, Any]] = field(default_factory=dict)  # image_url -> comparison data
    pages: dict[str, dict[str, Any]] = field(default_factory=dict)  # visited url -> page data
    search_hits: list[dict[str, Any]] = field(default_factory=list)
    image_hits: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def from_messages(cls, messages: list[dict[str, Any]], tools: list[dict[str, Any]], seed: int) -> "Investigation":
        state = cls(
            claim=parse_claim(_perceived_text(messages)),
            tools={t["function"]["name"] for t in tools},
            rng=random.Random(seed),
        )
        requested: dict[str, tuple[str, dict[str, Any]]] = {}
        for message in messages:
            for call in message.get("tool_calls") or []:
                arguments = json.loads(call["function"]["arguments"] or "{}")
                requested[call["id"]] = (call["function"]["name"], arguments)
                state.calls.append((call["function"]["name"], arguments))
            if message.get("role") == "tool" and message.get("tool_call_id") in requested:
                state._absorb(*requested[message["tool_call_id"]], message.get("data") or {})
        return state

    def _absorb(self, tool: str, arguments: dict[str, Any], data: dict[str, Any]) -> None:
        if tool == "reverse_image_search":
            for match in data.get("matches", []):
                self._add_copy(match, match.get("similarity", 0.0), bool(match.get("edited")))
        elif tool == "compare_with_reference":
            self.compared[arguments.get("reference_image_url", "")] = data
            for result in data.get("comparisons", []):
                if result.get("match"):
                    self._add_copy(result, result.get("similarity", 0.0), bool(result.get("edited")), direct=True)
        elif tool == "visit" and data.get("url"):
            self.pages[data["url"]] = data
        elif tool == "text_search":
            self.search_hits += data.get("results", [])
        elif tool == "text_image_search":
            self.image_hits += data.get("results", [])

    def _add_copy(self, item: dict[str, Any], similarity: float, edited: bool, *, direct: bool = False) -> None:
        known = self.copies.get(item["url"])
        published = _date(item.get("published"))
        # A caption band's trace (`caption_rows`) or a frame's edge (`frame_edge`) is no evidence of an edit: not cited as one.
        regions = [r for r in (item.get("comparison") or {}).get("regions") or [] if r.get("kind") not in NOT_EDITS] if edited else []
        if known is None or similarity > known.similarity:
            self.copies[item["url"]] = Copy(item["evidence_id"], item["url"], item["image_url"], published, similarity,
                                            edited or bool(known and known.edited), regions or (known.regions if known else []),
                                            direct or bool(known and known.compared_directly))
        elif known is not None:
            known.edited = known.edited or edited
            known.regions = known.regions or regions
            known.compared_directly = known.compared_directly or direct

    # -- planning ---------------------------------------------------------------------------

    def done(self, tool: str, **arguments: Any) -> bool:
        return any(name == tool and all(args.get(k) == v for k, v in arguments.items()) for name, args in self.calls)

    def copies_by_age(self) -> list[Copy]:
        return sorted(self.copies.values(), key=lambda c: (c.published is None, c.published or date.max, -c.similarity, c.url))

    def next_actions(self) -> list[tuple[str, dict[str, Any]]]:
        """The next tool calls, or [] when the investigation is over."""
        if "reverse_image_search" in self.tools and not self.done("reverse_image_search"):
            return [("reverse_image_search", {})]
        first_search = self.rng.random() < 0.5  # some rollouts read the web before the copies
        if first_search and (step := self._search_step()):
            return step
        if step := self._copy_step():
            return step
        if step := self._search_step():
            return step
        return self._image_search_step()

    def _copy_step(self) -> list[tuple[str, dict[str, Any]]]:
        copies = self.copies_by_age()
        if not copies:
            return []
        depth = 1 + self.rng.randrange(3)  # open the earliest 1-3 copies
        if "visit" in self.tools:
            for copy in copies[:depth]:
                if copy.url not in self.pages and not self.done("visit", url=copy.url):
                    return [("visit", {"url": copy.url})]
            # A copy's page may credit an earlier publisher by linking to it.
            for copy in copies[:depth]:
                for link in (self.pages.get(copy.url) or {}).get("links", [])[:2]:
                    if link not in self.pages and not self.done("visit", url=link):
                        return [("visit", {"url": link})]
        if "compare_with_reference" in self.tools:
            for copy in (copies[0], max(copies, key=lambda c: c.similarity)):
                if not self.done("compare_with_reference", reference_image_url=copy.image_url):
                    return [("compare_with_reference", {"reference_image_url": copy.image_url})]
        return []

    def _search_step(self) -> list[tuple[str, dict[str, Any]]]:
        if "text_search" not in self.tools:
            return []
        if not self.done("text_search"):
            query = self.claim.query(with_date=self.rng.random() < 0.5)
            return [("text_search", {"query": query})] if query else []
        if "visit" in self.tools:
            wanted = 1 + self.rng.randrange(2)
            for hit in self.search_hits[:wanted]:
                if hit["url"] not in self.pages and not self.done("visit", url=hit["url"]):
                    return [("visit", {"url": hit["url"]})]
        return []

    def _image_search_step(self) -> list[tuple[str, dict[str, Any]]]:
        """Without reverse search, look for the picture by its description and compare."""
        if "reverse_image_search" in self.tools or "text_image_search" not in self.tools:
            return []
        if not self.done("text_image_search"):
            query = self.claim.query(with_date=False)
            return [("text_image_search", {"query": query})] if query else []
        if "compare_with_reference" in self.tools:
            for hit in self.image_hits[:3]:
                if not self.done("compare_with_reference", reference_image_url=hit["image_url"]):
                    return [("compare_with_reference", {"reference_image_url": hit["image_url"]})]
        return []

    # -- judging ----------------------------------------------------------------------------

    def verdict(self) -> dict[str, Any]:
        """The label (one of VERDICTS), a confidence that follows the strength of the evidence,
        the evidence cited, and a rationale built from that evidence alone."""
        copies = self.copies_by_age()
        basis: list[dict[str, str]] = []
        if not copies:
            label = "unverifiable"
            # A reverse search over the whole index that finds no copy is strong evidence that
            # the picture was never published before; coverage of the claimed event found
            # without it makes that stronger. A search by description alone is weaker.
            searched = self.done("reverse_image_search")
            confidence = (0.8 if self.search_hits else 0.7) if searched else 0.6 if self.search_hits else 0.5
            for hit in self.search_hits[:2]:
                basis.append({"evidence_id": hit["evidence_id"], "finding": "related coverage, but no copy of the picture"})
            rationale = (f"No earlier copy of the picture was found ({'a reverse image search found none' if searched else 'searched by description only'}"
                         f"{'; related coverage was found, none of it with this picture' if self.search_hits else ''}), so its origin cannot be established.")
        elif (edited := altered_from(copies)) is not None:
            where = _region_text(edited.regions)
            label = "manipulated"
            # A large, or directly re-compared, local difference is strong evidence; a small
            # one seen only by the search is weaker; a copy the case image matches unaltered
            # leaves room for doubt.
            largest = max((float(r.get("area", 0.0)) for r in edited.regions), default=0.0)
            confidence = 0.9 if edited.compared_directly and largest >= 0.02 else 0.8 if largest >= 0.02 or edited.compared_directly else 0.65
            unaltered = [c for c in copies if not c.edited]
            if unaltered:
                confidence = min(confidence, 0.6)
            basis.append({"evidence_id": edited.evidence_id, "finding": f"the same picture without the altered region ({where})"})
            rationale = (f"The case image is a copy of the picture at {edited.image_url}"
                         f"{f' (published {edited.published})' if edited.published else ''}, the earliest publication found, "
                         f"{'compared directly with it' if edited.compared_directly else 'found by reverse image search'}, and differs from it "
                         f"locally: {where}. The rest of the picture matches, so that region was altered"
                         + (f"; a later copy ({unaltered[0].url}) shows it as the case image does." if unaltered else "."))
        else:
            origin = copies[0]
            origin_text = self._page_text(origin.url)
            gap = (self.claim.date - origin.published).days if self.claim.date and origin.published else None
            predates = gap is not None and gap > PREDATES_CLAIM_DAYS
            title = (self.pages.get(origin.url) or {}).get("title") or origin.url
            named = [n for n in self.claim.names if mentions(origin_text, n)]
            # Unread, nothing is known missing; nor is a name in a script the page never writes (Вальпараисо on an English page).
            page_scripts = scripts(origin_text)
            missing = [n for n in self.claim.names if n not in named and scripts(n) <= page_scripts] if origin_text else []
            headline_names = parse_claim(title).names if origin_text else []
            theirs = [n for n in headline_names if not any(mentions(n, c) for c in self.claim.names)]
            # The page is about another place when it names none of the claim's names, or when one is missing, those it
            # has are there only as common words (the claim's capitalized "Wildfire", the page's "wildfire") and its
            # headline names only other places. A page naming one of two claimed places under a wider headline
            # ("PORTO ALEGRE …" under "Floods hit southern Brazil") is not.
            as_common_words = not any(mentions_as_a_name(origin_text, n) for n in named)
            places_missing = bool(missing) and (not named or (as_common_words and bool(headline_names) and theirs == headline_names))
            basis.append({"evidence_id": origin.evidence_id, "finding": f"earliest copy, published {origin.published or 'on an unknown date'}"})
            if predates or places_missing:
                label = "out_of_context"
                differences = []
                if predates:
                    differences.append(f"the date: it was published {origin.published}, {gap} days before the claimed {self.claim.date}")
                if places_missing:
                    differences.append(f"the place or event: the claim names {', '.join(missing[:3])}, which the earlier page does not mention"
                                       + (f" (its headline names {', '.join(theirs[:3])})" if theirs else ""))
                confidence = 0.9 if predates and places_missing else 0.85 if predates else 0.7
                rationale = f"The picture was published earlier by \"{title}\" ({origin.url}). It differs from the claim in " + "; and in ".join(differences) + "."
            else:
                label = "authentic"
                confirmed = bool(self.claim.date and origin.published and named)
                confidence = 0.8 if confirmed else 0.7 if self.claim.date and origin.published else 0.6
                agrees = (f"matches the claimed date{' and names ' + ', '.join(named[:3]) if confirmed else ''}"
                          if self.claim.date else "shows the picture as claimed; the claim names no date to hold it to")
                rationale = f"The earliest copy, \"{title}\" ({origin.url}), published {origin.published or 'on an unknown date'}, {agrees}."
        for url, page in self.pages.items():
            if len(basis) >= 3:
                break
            if url not in {c.url for c in copies} and any(mentions(page.get("text", ""), n) for n in self.claim.names):
                basis.append({"evidence_id": page["evidence_id"], "finding": "coverage of the claimed place or event"})
        return {"verdict": label, "confidence": confidence, "verdict_basis": basis, "rationale": rationale}

    def _page_text(self, url: str) -> str:
        page = self.pages.get(url)
        return f"{page.get('title', '')}\n{page.get('text', '')}" if page else ""


def altered_from(copies: list[Copy]) -> Copy | None:
    """The earliest publication of the picture when the case image differs from it locally,
    else None. An altered picture differs from every faithful copy of the original, so a
    local difference counts only against the earliest copy: when that copy matches the case
    image unaltered, a later copy's difference is that copy's own (a library's watermark, a
    credit strip, its own caption), not an edit of the case image. `copies` are oldest first."""
    return copies[0] if copies and copies[0].edited else None


def _region_text(regions: list[dict[str, Any]]) -> str:
    """Where the comparison found the case image changed, in words."""
    if not regions:
        return "a local region differs"
    parts = []
    for region in regions[:2]:
        what = "printed text differs" if region.get("kind") == "text" else "the picture differs"
        parts.append(f"{what} at x {region['x0']:.0%}-{region['x1']:.0%}, y {region['y0']:.0%}-{region['y1']:.0%} "
                     f"({region.get('area', 0.0):.1%} of the picture)")
    return "; ".join(parts)


def _date(value: str | None) -> date | None:
    if not value:
        return None
    found = parse_dates(value)
    return found[0] if found else None


def _perceived_text(messages: list[dict[str, Any]]) -> str:
    """The OCR text from the perception report in the first user message."""
    for message in messages:
        if message.get("role") != "user":
            continue
        content = message["content"]
        texts = [part["text"] for part in content if part.get("type") == "text"] if isinstance(content, list) else [content]
        for text in texts:
            if "Text printed in the image:" in text:
                block = text.split("Text printed in the image:", 1)[1]
                return "\n".join(line.strip() for line in block.splitlines() if line.startswith("  "))
        return ""
    return ""
