"""The offline policy's reasoning on hand-written conversations: what it asks next and how
it judges, from the tool results alone."""

import json

import anyio

from eviscene.agent.judgment import judgment_schema
from eviscene.agent.provider import ModelRequest
from eviscene.providers import OfflineProvider

LABELS = ("authentic", "out_of_context", "manipulated", "unverifiable")
TOOLS = [{"type": "function", "function": {"name": n}} for n in ("text_search", "reverse_image_search", "visit", "compare_with_reference")]
CLAIM = "Floodwaters sweep through Porto Alegre, 6 May 2024"


def conversation(*exchanges, claim=CLAIM):
    """System, user (perception report of `claim`'s lines), then (tool name, arguments, data) exchanges."""
    printed = "".join(f"\n  {line}" for line in claim.splitlines())
    messages = [
        {"role": "system", "content": "verify"},
        {"role": "user", "content": [{"type": "text", "text": f"Verify this image.\n\nPerception report (x):\nText printed in the image:{printed}"}]},
    ]
    for i, (name, arguments, data) in enumerate(exchanges, start=1):
        messages.append({"role": "assistant", "content": "", "tool_calls": [
            {"id": f"call-{i}", "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}]})
        messages.append({"role": "tool", "tool_call_id": f"call-{i}", "content": "...", "data": data})
    return messages


def ask(messages, stage="unified_react"):
    request = ModelRequest(
        stage=stage, messages=messages, tools=TOOLS if stage == "unified_react" else [], sampling_seed=7,
        response_schema=judgment_schema(LABELS) if stage == "unified_judgment" else None,
    )
    return anyio.run(OfflineProvider().complete, request)


def match(url, published, *, edited=False):
    return {"evidence_id": "ev-1", "url": url, "image_url": url + "#image=a.jpg", "published": published,
            "similarity": 0.95, "edited": edited}


def test_first_it_reverse_searches_the_image():
    response = ask(conversation())
    assert [(c.name, c.arguments) for c in response.tool_calls] == [("reverse_image_search", {})]
    assert response.reasoning


def test_no_copy_anywhere_is_unverifiable():
    messages = conversation(("reverse_image_search", {}, {"matches": []}), ("text_search", {"query": "q"}, {"results": []}))
    assert ask(messages).tool_calls == []
    verdict = json.loads(ask(messages, "unified_judgment").content)
    assert verdict["verdict"] == "unverifiable"
    assert verdict["confidence"] == 0.7  # the reverse search found no copy; no coverage of the claim either
    assert "a reverse image search found none" in verdict["rationale"]


def test_no_copy_but_coverage_of_the_claim_is_a_more_confident_unverifiable():
    hit = {"evidence_id": "ev-1", "url": "https://b.example/flood", "title": "Porto Alegre floods", "snippet": "..."}
    messages = conversation(("reverse_image_search", {}, {"matches": []}), ("text_search", {"query": "q"}, {"results": [hit]}),
                            ("visit", {"url": hit["url"]}, {"evidence_id": "ev-1", "url": hit["url"], "title": "Porto Alegre floods",
                                                             "text": "Porto Alegre", "links": []}))
    verdict = json.loads(ask(messages, "unified_judgment").content)
    assert verdict["verdict"] == "unverifiable" and verdict["confidence"] == 0.8
    assert "related coverage was found, none of it with this picture" in verdict["rationale"]
    assert verdict["verdict_basis"][0] == {"evidence_id": "ev-1", "finding": "related coverage, but no copy of the picture"}


def test_an_edited_copy_is_manipulated_and_cited():
    messages = conversation(("reverse_image_search", {}, {"matches": [match("https://a.example/x", "2024-05-06", edited=True)]}))
    verdict = json.loads(ask(messages, "unified_judgment").content)
    assert verdict["verdict"] == "manipulated"
    assert verdict["verdict_basis"][0]["evidence_id"] == "ev-1"


def test_a_copy_years_older_than_the_claim_is_out_of_context():
    messages = conversation(("reverse_image_search", {}, {"matches": [match("https://a.example/x", "2015-10-02")]}))
    assert json.loads(ask(messages, "unified_judgment").content)["verdict"] == "out_of_context"


def test_a_same_day_copy_about_the_claimed_place_is_authentic():
    page = {"evidence_id": "ev-1", "url": "https://a.example/x", "title": "Floods in Porto Alegre",
            "text": "PORTO ALEGRE, Brazil, 6 May 2024 — water rose", "links": []}
    messages = conversation(
        ("reverse_image_search", {}, {"matches": [match("https://a.example/x", "2024-05-06")]}),
        ("visit", {"url": "https://a.example/x"}, page),
    )
    verdict = json.loads(ask(messages, "unified_judgment").content)
    assert verdict["verdict"] == "authentic" and verdict["confidence"] == 0.8


def test_a_copy_about_another_place_is_out_of_context():
    page = {"evidence_id": "ev-1", "url": "https://a.example/x", "title": "Floods in Jakarta",
            "text": "JAKARTA, Indonesia, 6 May 2024 — water rose", "links": []}
    messages = conversation(
        ("reverse_image_search", {}, {"matches": [match("https://a.example/x", "2024-05-06")]}),
        ("visit", {"url": "https://a.example/x"}, page),
    )
    assert json.loads(ask(messages, "unified_judgment").content)["verdict"] == "out_of_context"


def judged_on_its_earliest_copy(claim: str, title: str, text: str, published: str) -> dict:
    """The judgment of `claim` whose picture's earliest copy, published then, is a page of this
    title and text, visited."""
    page = {"evidence_id": "ev-1", "url": "https://a.example/x", "title": title, "text": text, "links": []}
    messages = conversation(
        ("reverse_image_search", {}, {"matches": [match("https://a.example/x", published)]}),
        ("visit", {"url": "https://a.example/x"}, page),
        claim=claim,
    )
    return json.loads(ask(messages, "unified_judgment").content)


VALPARAISO = ("Smoke over Valparaíso, Chile", "VALPARAÍSO, 3 February 2024 — a wildfire burned the hills", "2024-02-03")


def test_a_copy_whose_headline_names_only_another_place_is_out_of_context_though_it_shares_a_capitalized_word():
    # "Wildfire" is capitalized mid-caption and the Valparaíso page mentions a wildfire, but not Lisbon.
    verdict = judged_on_its_earliest_copy("Crews fight the Wildfire above Lisbon, 3 February 2024", *VALPARAISO)
    assert verdict["verdict"] == "out_of_context" and verdict["confidence"] == 0.7
    assert "the claim names Lisbon, which the earlier page does not mention (its headline names Valparaíso, Chile)" in verdict["rationale"]


def test_a_copy_naming_one_of_two_claimed_places_under_a_wider_headline_is_authentic():
    # Canoas is not on the page, but Porto Alegre is, as a name: the headline's wider Brazil is no other place.
    verdict = judged_on_its_earliest_copy("Floodwaters sweep through Porto Alegre and Canoas, 6 May 2024", "Deadly floods hit southern Brazil",
                                          "PORTO ALEGRE, 6 May 2024 — floodwaters swept through the city", "2024-05-06")
    assert verdict["verdict"] == "authentic" and verdict["confidence"] == 0.8
    assert verdict["rationale"].endswith("published 2024-05-06, matches the claimed date and names Porto Alegre.")


def test_a_name_in_a_script_the_page_never_writes_is_not_held_against_it():
    # The offline agent cannot transliterate: Вальпараисо is neither named nor missing on an English page.
    verdict = judged_on_its_earliest_copy("Дым от лесного пожара над Вальпараисо, 3 February 2024", *VALPARAISO)
    assert verdict["verdict"] == "authentic" and verdict["confidence"] == 0.7  # the date alone confirmed
    assert verdict["rationale"].endswith("published 2024-02-03, matches the claimed date.")


def test_an_authentic_rationale_says_the_page_names_only_what_it_names():
    # The badge under the caption reads as a name ("Exclusive") that no page holds; the page names Hamburg.
    verdict = judged_on_its_earliest_copy("Fire breaks out on cargo ship in port of Hamburg, 8 November 2023\nEXCLUSIVE",
                                          "Fire on a cargo ship in Hamburg", "HAMBURG, 8 November 2023 — a fire broke out", "2023-11-08")
    assert verdict["verdict"] == "authentic" and verdict["confidence"] == 0.8
    assert verdict["rationale"].endswith("published 2023-11-08, matches the claimed date and names Hamburg.")


def test_rollouts_differ_only_through_the_seed():
    messages = conversation(("reverse_image_search", {}, {"matches": [match("https://a.example/x", "2024-05-06")]}))
    plans = set()
    for seed in range(12):
        request = ModelRequest(stage="unified_react", messages=messages, tools=TOOLS, sampling_seed=seed)
        response = anyio.run(OfflineProvider().complete, request)
        plans.add(response.tool_calls[0].name)
    assert plans == {"visit", "text_search"}  # some rollouts read the web before the copies
    again = anyio.run(OfflineProvider().complete, ModelRequest(stage="unified_react", messages=messages, tools=TOOLS, sampling_seed=3))
    first = anyio.run(OfflineProvider().complete, ModelRequest(stage="unified_react", messages=messages, tools=TOOLS, sampling_seed=3))
    assert again == first


def test_a_manipulated_verdict_names_the_region_and_the_reference():
    found = match("https://a.example/x", "2024-05-06", edited=True)
    found["comparison"] = {"regions": [{"x0": 0.25, "y0": 0.5, "x1": 0.5, "y1": 0.75, "area": 0.06, "kind": "content"}]}
    verdict = json.loads(ask(conversation(("reverse_image_search", {}, {"matches": [found]})), "unified_judgment").content)
    assert verdict["verdict"] == "manipulated"
    assert "https://a.example/x#image=a.jpg" in verdict["rationale"]
    assert "x 25%-50%, y 50%-75%" in verdict["rationale"] and "6.0% of the picture" in verdict["rationale"]
    assert verdict["confidence"] == 0.8  # a large region, seen by the search only; a direct comparison would make it 0.9


def test_an_out_of_context_verdict_names_the_earlier_publication_and_the_date_gap():
    page = {"evidence_id": "ev-1", "url": "https://a.example/x", "title": "Storm in Recife", "text": "RECIFE, 2 October 2015", "links": []}
    messages = conversation(
        ("reverse_image_search", {}, {"matches": [match("https://a.example/x", "2015-10-02")]}),
        ("visit", {"url": "https://a.example/x"}, page),
    )
    verdict = json.loads(ask(messages, "unified_judgment").content)
    assert verdict["verdict"] == "out_of_context"
    rationale = verdict["rationale"]
    assert '"Storm in Recife" (https://a.example/x)' in rationale
    assert "published 2015-10-02, 3139 days before the claimed 2024-05-06" in rationale  # 2015-10-02 .. 2024-05-06
    assert "the claim names Porto Alegre, which the earlier page does not mention (its headline names Recife)" in rationale
    assert verdict["confidence"] == 0.9  # both the date and the place differ


def test_datelines_and_dash_separated_headlines_name_only_places():
    from eviscene.providers.offline.claim import parse_claim

    assert parse_claim("Tulsa: Forest fire reaches the ridge (November 1, 2021)").names == ["Tulsa"]
    assert parse_claim("BREAKING 30 January 2019 - Forest fire reaches the ridge, Recife").names == ["Recife"]


def copies(origin_edited, library_edited):
    """The agency's first publication (6 May) and a photo library's later copy (1 June)."""
    region = {"x0": 0.6, "y0": 0.2, "x1": 0.8, "y1": 0.5, "area": 0.05, "kind": "content"}
    found = []
    for number, (url, published, edited) in enumerate((("https://agency.example/flood", "2024-05-06", origin_edited),
                                                      ("https://library.example/123", "2024-06-01", library_edited)), start=1):
        found.append({**match(url, published, edited=edited), "evidence_id": f"ev-{number}",
                      "comparison": {"regions": [region] if edited else []}})
    return json.loads(ask(conversation(("reverse_image_search", {}, {"matches": found})), "unified_judgment").content)


def test_a_later_copys_own_difference_is_no_edit_of_the_case_image():
    # The first publication matches unaltered; the library's copy differs locally (its own
    # watermark or credit strip): the case image is the picture as first published.
    verdict = copies(origin_edited=False, library_edited=True)
    assert verdict["verdict"] == "authentic"
    assert verdict["verdict_basis"][0]["evidence_id"] == "ev-1"


def test_a_difference_from_the_first_publication_is_an_edit():
    verdict = copies(origin_edited=True, library_edited=True)
    assert verdict["verdict"] == "manipulated" and verdict["confidence"] == 0.8
    assert verdict["verdict_basis"][0]["evidence_id"] == "ev-1"
    assert "https://agency.example/flood#image=a.jpg" in verdict["rationale"] and "x 60%-80%, y 20%-50%" in verdict["rationale"]


def test_an_edit_a_later_copy_does_not_show_is_less_certain():
    # A re-post of the edited picture, or a difference of the first copy's own: still an
    # edit against the first publication, with less confidence, and the later copy named.
    verdict = copies(origin_edited=True, library_edited=False)
    assert verdict["verdict"] == "manipulated" and verdict["confidence"] == 0.6
    assert "https://library.example/123" in verdict["rationale"]


def test_a_caption_bands_trace_is_not_cited_as_the_altered_region():
    found = match("https://a.example/x", "2024-05-06", edited=True)
    found["comparison"] = {"regions": [{"x0": 0.3, "y0": 0.82, "x1": 0.99, "y1": 0.98, "area": 0.05, "kind": "caption_rows"},
                                       {"x0": 0.25, "y0": 0.1, "x1": 0.5, "y1": 0.3, "area": 0.03, "kind": "content"}]}
    verdict = json.loads(ask(conversation(("reverse_image_search", {}, {"matches": [found]})), "unified_judgment").content)
    assert "x 25%-50%, y 10%-30%" in verdict["rationale"] and "y 82%" not in verdict["rationale"]
