"""The judgment stage's contract: a JSON object {verdict, confidence, verdict_basis}, with
the verdict in the release's label set and every citation an evidence id this episode saw."""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError

from eviscene.events import JudgmentMade


def judgment_schema(label_set: tuple[str, ...]) -> dict[str, Any]:
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["verdict", "confidence", "verdict_basis"],
        "properties": {
            "verdict": {"type": "string", "enum": list(label_set)},
            "confidence": {"type": "number", "minimum": 0, "maximum": 1},
            "verdict_basis": {
                "type": "array",
                "items": {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["evidence_id", "finding"],
                    "properties": {"evidence_id": {"type": "string"}, "finding": {"type": "string"}},
                },
            },
            "rationale": {"type": "string"},
        },
    }


def parse_judgment(text: str, label_set: tuple[str, ...], evidence_ids: set[str]) -> tuple[JudgmentMade | None, list[str]]:
    """The validated judgment, or None and the reasons it was refused."""
    body = text.strip()
    if body.startswith("```"):
        body = body.strip("`").removeprefix("json").strip()
    try:
        data = json.loads(body)
    except json.JSONDecodeError as exc:
        return None, [f"not_json: {exc.msg} at char {exc.pos}"]
    if not isinstance(data, dict):
        return None, ["not_an_object"]
    try:
        judgment = JudgmentMade.model_validate({**data, "type": "judgment.made"})
    except ValidationError as exc:
        return None, [f"schema: {e['loc'][0] if e['loc'] else ''} {e['msg']}" for e in exc.errors()]
    reasons = []
    if judgment.verdict not in label_set:
        reasons.append(f"verdict_not_in_label_set: {judgment.verdict!r} not in {list(label_set)}")
    unknown = sorted({b.evidence_id for b in judgment.verdict_basis} - evidence_ids)
    if unknown:
        reasons.append(f"basis_cites_unknown_evidence: {', '.join(unknown)}")
    return (None, reasons) if reasons else (judgment, [])
