"""What the context window's shortening does to each kind of message, by hand."""

from __future__ import annotations

import json

from eviscene.agent.episode import SHORTENED, shorten_message

OBSERVATION = "\n".join(
    ["Search results for \"flood bus\":"]
    + [f"[ev-{n}] Bus stranded in flood water, 2023-0{n}-01\n    https://news.example/{n}\n    " + "A long snippet. " * 20 for n in range(1, 4)]
)


def test_an_observation_keeps_its_heading_evidence_lines_and_urls():
    shorter = shorten_message({"role": "tool", "tool_call_id": "c1", "content": OBSERVATION}, 1)
    assert shorter["shortened"] == 1 and shorter["tool_call_id"] == "c1"
    assert shorter["content"].splitlines() == [
        "Search results for \"flood bus\":",
        "[ev-1] Bus stranded in flood water, 2023-01-01", "https://news.example/1",
        "[ev-2] Bus stranded in flood water, 2023-02-01", "https://news.example/2",
        "[ev-3] Bus stranded in flood water, 2023-03-01", "https://news.example/3",
        SHORTENED,
    ]


def test_a_message_shortening_would_lengthen_stays_as_it_is():
    message = {"role": "tool", "tool_call_id": "c1", "content": "Tool budget exhausted; give your judgment."}
    assert shorten_message(message, 1) is message
    assert shorten_message({"role": "assistant", "content": "Searching."}, 2) == {"role": "assistant", "content": "Searching."}
    assert shorten_message({"role": "user", "content": "x" * 5000}, 2)["content"] == "x" * 5000  # the task is never cut


def test_the_model_s_long_text_reasoning_and_arguments_are_cut_and_stay_json():
    arguments = json.dumps({"_raw": "{ query: " + "image&amp;height=287 " * 500, "max_results": 3}, separators=(",", ":"), sort_keys=True)
    message = {
        "role": "assistant", "content": "I will look. " * 100, "reasoning_content": "Hmm. " * 300,
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "text_search", "arguments": arguments}}],
    }
    shorter = shorten_message(message, 2)
    assert shorter["shortened"] == 2
    assert shorter["content"] == ("I will look. " * 100)[:100] + "… " + SHORTENED
    assert shorter["reasoning_content"] == ("Hmm. " * 300)[:100] + "… " + SHORTENED
    [call] = shorter["tool_calls"]
    assert call["id"] == "c1" and call["function"]["name"] == "text_search"
    assert json.loads(call["function"]["arguments"]) == {
        "_raw": ("{ query: " + "image&amp;height=287 " * 500)[:100] + "… " + SHORTENED, "max_results": 3,
    }
    assert message["tool_calls"][0]["function"]["arguments"] == arguments  # the original is not touched
