"""The judgment stage's contract: a JSON object {verdict, confidence, verdict_basis}, with
the verdict in the release's label set and every citation an evidence id this episode saw."""

from __future__ import annotations

import copy
import functools
import json
from typing import Any

from pydantic import ValidationError

from eviscene.events import JudgmentMade


# Keys that document a schema rather than constrain it: the prompt says what each field means.
_DOCUMENTATION_KEYS = frozenset({"title", "description", "default"})


def judgment_schema(label_set: tuple[str, ...]) -> dict[str, Any]:
    """The JSON Schema of the answer the judgment stage asks for: `JudgmentMade` without its
    event tag, in the strict form providers take, the verdict one of `label_set`."""
    schema = copy.deepcopy(_answer_schema())
    schema["properties"]["verdict"]["enum"] = list(label_set)
    return schema


@functools.cache
def _answer_schema() -> dict[str, Any]:
    schema = JudgmentMade.model_json_schema()
    del schema["properties"]["type"]  # the event's tag, not part of the model's answer
    return _strict_schema(schema, schema.get("$defs", {}))


def _strict_schema(node: Any, definitions: dict[str, Any]) -> Any:
    """A pydantic JSON Schema in the strict form providers take: `$ref`s inlined (Gemini's
    schema has no `$defs`), no titles, descriptions or defaults, and every object closed
    (`additionalProperties: false`) with all its properties required, as the prompt asks for
    every field (the parser still fills a missing defaulted one)."""
    if isinstance(node, list):
        return [_strict_schema(item, definitions) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        return _strict_schema(definitions[node["$ref"].rsplit("/", 1)[-1]], definitions)
    strict = {
        key: ({name: _strict_schema(sub, definitions) for name, sub in value.items()} if key == "properties"
              else _strict_schema(value, definitions))
        for key, value in node.items()
        if key not in _DOCUMENTATION_KEYS and key != "$defs"
    }
    if strict.get("type") == "object" and "properties" in strict:
        strict = {"type": "object", "additionalProperties": False, "required": list(strict["properties"]),
                  **{k: v for k, v in strict.items() if k not in ("type", "additionalProperties", "required")}}
    return strict


def parse_judgment(text: str, label_set: tuple[str, ...], evidence_ids: set[str]) -> tuple[JudgmentMade | None, list[str]]:
    """The validated judgment, or None and the reasons it was refused."""
    body = text.strip()
    if body.startswith("```"):
        body = body.strip("`").removeprefix("json").strip()
    try:
        data = json.loads(body)
    except json.JSONDecodeError as exc:
        return None, [f"not_json: {exc.msg} at char {exc.pos}"]
    except RecursionError:  # `[[[…` thousands deep: the model's malformed answer, not a crash
        return None, ["not_json: nested too deeply"]
    if not isinstance(data, dict):
        return None, ["not_an_object"]
    try:
        # strict: the schema the model was given says a number, so `true` or "0.7" is no confidence
        judgment = JudgmentMade.model_validate({**data, "type": "judgment.made"}, strict=True)
    except ValidationError as exc:
        return None, [f"schema: {e['loc'][0] if e['loc'] else ''} {e['msg']}" for e in exc.errors()]
    reasons = []
    if judgment.verdict not in label_set:
        reasons.append(f"verdict_not_in_label_set: {judgment.verdict!r} not in {list(label_set)}")
    unknown = sorted({b.evidence_id for b in judgment.verdict_basis} - evidence_ids)
    if unknown:
        reasons.append(f"basis_cites_unknown_evidence: {', '.join(unknown)}")
    return (None, reasons) if reasons else (judgment, [])
