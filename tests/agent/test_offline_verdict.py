"""The offline agent's judgment reasons from the evidence it cites: a hand-written
conversation (perception report, tool results) and the verdict, confidence and rationale
a forensic analyst would draw from it."""

import json

from eviscene.providers.offline.investigation import Investigation

LABELS = ["authentic", "out_of_context", "manipulated", "unverifiable"]
TOOLS = [{"function": {"name": name}} for name in ("reverse_image_search", "visit", "compare_with_reference", "text_search")]
CLAIM = "Floodwaters sweep through Porto Alegre, 6 May 2024"
REGION = {"x0": 0.6, "y0": 0.2, "x1": 0.8, "y1": 0.5, "area": 0.05, "kind": "content"}


def conversation(matches: list[dict], pages: list[dict] = ()) -> list[dict]:
    """The user's perception report, a reverse image search returning `matches`, and a visit per page."""
    messages = [{"role": "user", "content": [{"type": "text", "text": f"Verify this image.\n\nPerception report (offline):\n"
                                                                   f"Text printed in the image:\n  {CLAIM}"}]}]
    calls = [("reverse_image_search", {}, {"matches": matches})] + [("visit", {"url": p["url"]}, p) for p in pages]
    for number, (tool, arguments, data) in enumerate(calls, start=1):
        call = {"id": f"call-{number}", "type": "function", "function": {"name": tool, "arguments": json.dumps(arguments)}}
        messages.append({"role": "assistant", "content": "", "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": f"call-{number}", "content": "", "data": data})
    return messages


def match(evidence_id: str, url: str, published: str, edited: bool) -> dict:
    return {"evidence_id": evidence_id, "url": url, "image_url": f"{url}#image=images/1.jpg", "published": published,
            "similarity": 0.9, "edited": edited, "comparison": {"regions": [REGION] if edited else []}}


def page(evidence_id: str, url: str, title: str, text: str) -> dict:
    return {"evidence_id": evidence_id, "url": url, "title": title, "text": text, "links": []}


ORIGIN = "https://agency.example/2024/05/06/flood"
LIBRARY = "https://library.example/image/123"
ORIGIN_PAGE = page("ev-1", ORIGIN, "Floods in Porto Alegre", "PORTO ALEGRE, Brazil, 6 May 2024 — Floodwaters swept the centre.")


def verdict(messages: list[dict]) -> dict:
    return Investigation.from_messages(messages, TOOLS, seed=1).verdict(LABELS)


def test_a_later_copys_own_difference_is_not_an_edit_of_the_case_image():
    # The earliest publication matches unaltered; a photo library's later copy differs locally
    # (its watermark): the case image is the original picture, as first published.
    judged = verdict(conversation([match("ev-1", ORIGIN, "2024-05-06", edited=False),
                                   match("ev-2", LIBRARY, "2024-06-01", edited=True)], [ORIGIN_PAGE]))
    assert judged["verdict"] == "authentic"
    assert judged["verdict_basis"][0]["evidence_id"] == "ev-1"


def test_a_difference_from_the_earliest_copy_is_an_edit_naming_region_and_reference():
    judged = verdict(conversation([match("ev-1", ORIGIN, "2024-05-06", edited=True),
                                   match("ev-2", LIBRARY, "2024-06-01", edited=True)], [ORIGIN_PAGE]))
    assert judged["verdict"] == "manipulated"
    assert judged["verdict_basis"][0]["evidence_id"] == "ev-1"
    assert ORIGIN in judged["rationale"] and "x 60%-80%, y 20%-50% (5.0% of the picture)" in judged["rationale"]
    # Every copy shows the difference, a large one, seen by the search alone: 0.8.
    assert judged["confidence"] == 0.8


def test_an_edit_that_a_later_copy_shares_is_less_certain():
    # The earliest copy differs, a later one matches unaltered (a re-post of the edit, or a
    # difference of the earliest copy's own): still an edit against the earliest, with less confidence.
    judged = verdict(conversation([match("ev-1", ORIGIN, "2024-05-06", edited=True),
                                   match("ev-2", LIBRARY, "2024-06-01", edited=False)], [ORIGIN_PAGE]))
    assert judged["verdict"] == "manipulated" and judged["confidence"] == 0.6
    assert LIBRARY in judged["rationale"]


def test_out_of_context_names_the_earlier_publication_and_what_differs():
    old = "https://agency.example/2019/03/02/storm"
    old_page = page("ev-1", old, "Storm floods Montevideo harbour", "MONTEVIDEO, Uruguay, 2 March 2019 — A storm flooded the port.")
    judged = verdict(conversation([match("ev-1", old, "2019-03-02", edited=False)], [old_page]))
    assert judged["verdict"] == "out_of_context"
    assert old in judged["rationale"] and "Storm floods Montevideo harbour" in judged["rationale"]
    # 2019-03-02 to 2024-05-06: 1892 days; the page names Montevideo, not Porto Alegre.
    assert "1892 days before the claimed 2024-05-06" in judged["rationale"]
    assert "Porto Alegre, which the earlier page does not mention" in judged["rationale"]
    assert judged["confidence"] == 0.9
