"""What the model is told. The policy text, gold and labels' meanings beyond the label set
never appear here: the image (or its perception report) is the whole input."""

from __future__ import annotations

import json

from eviscene.events import PerceptionReported
from eviscene.rules.canonical import readable_json

SYSTEM_PROMPT = """You are an image fact-verification agent. You are given one image, often a news photo \
or a social-media post with a claim printed on it. Decide whether the image shows what its claim says.

Investigate with the tools: search the web by text, search images by text, reverse-search the image, \
visit pages, and compare the image with a reference image you found. Every tool result carries \
evidence ids (ev-N). Prefer the earliest publication of the picture, check its date, place and event \
against the claim, and look for signs of editing. Stop when the evidence settles the question or \
nothing more can be learned; you have at most {max_tool_actions} tool calls.

Verdict labels: {labels}."""

JUDGMENT_PROMPT = """Give your judgment now as one JSON object and nothing else:
{{"verdict": one of {labels}, "confidence": probability 0..1 that the verdict is right, \
"verdict_basis": [{{"evidence_id": "ev-N", "finding": "what that evidence shows"}}], \
"rationale": "one or two sentences"}}
Cite only evidence ids returned by your tool calls in this conversation."""

JUDGMENT_RETRY_PROMPT = """Your judgment was not accepted: {reasons}. Answer again with one valid JSON object."""


def system_message(label_set: tuple[str, ...], max_tool_actions: int) -> dict:
    return {
        "role": "system",
        "content": SYSTEM_PROMPT.format(labels=", ".join(label_set), max_tool_actions=max_tool_actions),
    }


def perception_text(report: PerceptionReported) -> str:
    lines = [f"Perception report ({report.backend}):"]
    lines.append("Text printed in the image:" if report.ocr_text else "No text was read in the image.")
    lines += [f"  {line}" for line in report.ocr_text.splitlines()]
    if report.report:
        lines.append("Observations: " + readable_json(report.report))
    return "\n".join(lines)


def user_message(report: PerceptionReported, image_url: str | None) -> dict:
    """The case: the image itself (direct_multimodal) and the perception report."""
    content: list[dict] = [{"type": "text", "text": "Verify this image.\n\n" + perception_text(report)}]
    if image_url is not None:
        content.append({"type": "image_url", "image_url": {"url": image_url}})
    return {"role": "user", "content": content}


def judgment_message(label_set: tuple[str, ...]) -> dict:
    return {"role": "user", "content": JUDGMENT_PROMPT.format(labels=json.dumps(list(label_set)))}


def judgment_retry_message(reasons: list[str]) -> dict:
    return {"role": "user", "content": JUDGMENT_RETRY_PROMPT.format(reasons="; ".join(reasons))}
