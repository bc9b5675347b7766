"""The judgment contract: label set, confidence range, citations of seen evidence only."""

from eviscene.agent.judgment import judgment_schema, parse_judgment

LABELS = ("authentic", "out_of_context", "manipulated", "unverifiable")


def test_valid_judgment_is_accepted():
    judgment, reasons = parse_judgment(
        '{"verdict": "manipulated", "confidence": 0.8, "verdict_basis": [{"evidence_id": "ev-2", "finding": "original"}]}',
        LABELS,
        {"ev-1", "ev-2"},
    )
    assert reasons == []
    assert judgment.verdict == "manipulated" and judgment.confidence == 0.8
    assert [b.evidence_id for b in judgment.verdict_basis] == ["ev-2"]


def test_fenced_json_is_accepted():
    judgment, _ = parse_judgment('```json\n{"verdict": "authentic", "confidence": 1, "verdict_basis": []}\n```', LABELS, set())
    assert judgment is not None and judgment.verdict == "authentic"


def test_each_defect_is_named():
    assert parse_judgment("I think it is fake", LABELS, set())[1][0].startswith("not_json")
    assert parse_judgment("[1, 2]", LABELS, set())[1] == ["not_an_object"]
    _, reasons = parse_judgment('{"verdict": "fake", "confidence": 0.5, "verdict_basis": []}', LABELS, set())
    assert reasons == ["verdict_not_in_label_set: 'fake' not in ['authentic', 'out_of_context', 'manipulated', 'unverifiable']"]
    _, reasons = parse_judgment('{"verdict": "authentic", "confidence": 1.5, "verdict_basis": []}', LABELS, set())
    assert reasons and reasons[0].startswith("schema: confidence")
    _, reasons = parse_judgment(
        '{"verdict": "authentic", "confidence": 0.5, "verdict_basis": [{"evidence_id": "ev-9", "finding": "x"}]}', LABELS, {"ev-1"}
    )
    assert reasons == ["basis_cites_unknown_evidence: ev-9"]


def test_a_confidence_that_is_no_number_is_refused_not_coerced():
    """`true` was read as 1.0 and "0.7" as 0.7, and calibration then scored confidences the
    model never gave; NaN was refused as "less than or equal to 1"."""
    for given, reason in (("true", "schema: confidence Input should be a valid number"),
                          ('"0.7"', "schema: confidence Input should be a valid number"),
                          ("NaN", "schema: confidence Input should be a finite number")):
        judgment, reasons = parse_judgment(f'{{"verdict": "authentic", "confidence": {given}, "verdict_basis": []}}', LABELS, set())
        assert (judgment, reasons) == (None, [reason]), given
    judgment, reasons = parse_judgment('{"verdict": 1, "confidence": 0.5, "verdict_basis": []}', LABELS, set())
    assert reasons == ["schema: verdict Input should be a valid string"]


def test_schema_lists_the_release_labels():
    assert judgment_schema(("real", "fake"))["properties"]["verdict"]["enum"] == ["real", "fake"]


def test_schema_is_the_judgment_model_in_the_strict_form_providers_take():
    """Generated from `JudgmentMade` (its event tag left out): every field required, as the
    prompt asks for every field; objects closed; no $defs, titles or descriptions."""
    assert judgment_schema(("real", "fake")) == {
        "type": "object",
        "additionalProperties": False,
        "required": ["verdict", "confidence", "verdict_basis", "rationale"],
        "properties": {
            "verdict": {"type": "string", "enum": ["real", "fake"]},
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
    # Each call is its own copy: a request that changes its schema changes no other.
    judgment_schema(LABELS)["properties"]["verdict"]["enum"].append("x")
    assert judgment_schema(LABELS)["properties"]["verdict"]["enum"] == list(LABELS)


def test_a_judgment_nested_too_deeply_is_refused_not_a_crash():
    """Python's reader gives up past ~1,000 levels with a RecursionError, which ended the
    episode as an engineering error."""
    assert parse_judgment("[" * 5000 + "]" * 5000, LABELS, set()) == (None, ["not_json: nested too deeply"])
