"""The dataset files' bytes: the metadata files' lines are written by DuckDB as canonical JSON
(tests/exports/test_canonical_sql.py holds that writer to canonical_json); the SFT and
perception records' dataset fields are built as JSON text in DuckDB and read by orjson, so that
text must read back as the very values of the view rows. Pinned here: doubles and strings
through DuckDB's to_json, and whole exported lines with awkward values (exponent floats, -0.0,
non-ASCII, control characters, nested objects, keys a record repeats) against hand-written
expectations and the seed's json.dumps."""

from __future__ import annotations

import json
import math
import random
import struct

import duckdb
import orjson
import pyarrow.parquet as pq
import pytest
from dataset_builders import read_jsonl, sft_row, write_jsonl, write_run_dir

from eviscene.exports.dataset import ExportOptions, export_dataset
from eviscene.exports.dataset_files import _value_sql
from eviscene.log import EventLog

AWKWARD_DOUBLES = [
    0.0, -0.0, 1.0, -2.5, 0.1, 0.30000000000000004, 1e-7, 1e-5, 1e-4, 1.5e-4, 123456789.12345679, 1e15, 1e16, 1.2345e16,
    -1e17, 1e22, 1.5e300, 5e-324, 2.2250738585072014e-308, 1.7976931348623157e308, 9007199254740993.0, 2.0**53,
]
AWKWARD_TEXTS = [
    "", "plain", "é ü 中文 🙂", "quote \" backslash \\ slash /", "\x00\x01\x1f", "\x7f\x80\x9f", "\u2028\u2029\u0085",
    "tab\tnewline\nreturn\r", "\ud7ff\ue000\uffff", '{"nested": "json in a string"}',
]


@pytest.fixture(scope="module")
def con():
    return duckdb.connect()


def _bits(value: float) -> bytes:
    return struct.pack("<d", value)


def test_doubles_read_back_bit_for_bit(con):
    rng = random.Random(13)
    drawn = [struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))[0] for _ in range(20_000)]
    values = [v for v in AWKWARD_DOUBLES + drawn if math.isfinite(v)]
    con.execute("CREATE OR REPLACE TEMP TABLE doubles AS SELECT unnest(?::DOUBLE[]) AS x", [values])
    texts = [row[0] for row in con.execute(f"SELECT {_value_sql('x', 'DOUBLE')} FROM doubles").fetchall()]
    assert len(texts) == len(values)
    for value, text in zip(values, texts):
        assert _bits(orjson.loads(text)) == _bits(value), (value, text)


def test_nan_and_infinities_are_null_as_orjson_writes_them(con):
    rows = con.execute(f"SELECT {_value_sql('x', 'DOUBLE')} FROM (SELECT unnest(['nan', 'inf', '-inf']::DOUBLE[]) AS x)").fetchall()
    assert [row[0] for row in rows] == ["null", "null", "null"]
    assert orjson.dumps([math.nan, math.inf]) == b"[null,null]"


def test_texts_and_lists_read_back_exactly(con):
    con.execute("CREATE OR REPLACE TEMP TABLE texts AS SELECT unnest(?::VARCHAR[]) AS t, ?::VARCHAR[] AS l", [AWKWARD_TEXTS, AWKWARD_TEXTS])
    found = con.execute(f"SELECT t, {_value_sql('t', 'VARCHAR')}, {_value_sql('l', 'VARCHAR[]')} FROM texts").fetchall()
    for text, as_json, list_json in found:
        assert orjson.loads(as_json) == text
        assert orjson.loads(list_json) == AWKWARD_TEXTS
    nulls = con.execute(f"SELECT {_value_sql('t', 'VARCHAR')}, {_value_sql('j', 'JSON')} FROM (SELECT NULL::VARCHAR t, NULL::JSON j)")
    assert nulls.fetchall() == [("null", "null")]


def test_json_columns_go_in_as_stored(con):
    stored = '{"b": [1.0, 1e-7, -0.0], "a": "\\u00e9"}'
    assert con.execute(f"SELECT {_value_sql('j', 'JSON')} FROM (SELECT ?::JSON AS j)", [stored]).fetchall() == [(stored,)]


def test_a_type_without_an_exact_text_is_refused():
    with pytest.raises(TypeError, match="TIMESTAMP"):
        _value_sql("at", "TIMESTAMP")


def test_an_exported_line_with_awkward_values(tmp_path):
    run = write_run_dir(tmp_path / "run", "run-a", [
        {"episode_id": "odd--r000", "case_id": "odd", "score": {"total": 1e-7}},
        {"episode_id": "zero--r000", "case_id": "zero", "score": {"total": -0.0}},
        {"episode_id": "huge--r000", "case_id": "huge", "score": {"total": 1e16}},
    ])
    record = sft_row("odd--r000", "odd", token_count_estimate=7)
    record["messages"][1]["content"][1]["text"] = "é\u2028\x01\x1f\x7f \"q\" \\ 🙂"
    record.update({
        "zeta": {"b": [1e16, 1e-7, -0.0, 0.1], "a": {"d": None, "c": True}},
        "split": "the record's own split, overridden", "tool_call_count": 5,
    })
    write_jsonl(run / "trajectory_sft.jsonl", [
        record, *(sft_row(e, e.split("--")[0]) for e in ("zero--r000", "huge--r000")),
    ])
    out = tmp_path / "out"
    export_dataset(EventLog(tmp_path / "log.duckdb"), ExportOptions(out_dir=out, run_dirs=[run]))
    lines = {
        json.loads(line)["episode_id"]: line
        for split in ("train", "validation", "test") for line in (out / f"{split}.jsonl").read_bytes().splitlines()
    }
    metadata = {row["episode_id"]: row for row in read_jsonl(out / "episode_metadata.jsonl")}
    # the record's own counts win over the computed ones; the dataset fields win over the record's
    expected = {
        **record, "token_count_estimate": 7, "tool_call_count": 5, "dataset_version": "ifv-trajectory-sft-dataset-v3",
        "split": metadata["odd--r000"]["split"], "split_group_id": metadata["odd--r000"]["split_group_id"],
        "source_family_keys": [], "teacher_score": 1e-7,
    }
    line = lines["odd--r000"]
    seed_form = json.dumps(expected, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    # the seed's json.dumps with sorted keys, but for the exponent form of 1e-7 (orjson: no zero padding)
    assert line == seed_form.replace("1e-07", "1e-7").encode("utf-8")
    assert b'"zeta":{"a":{"c":true,"d":null},"b":[1e+16,1e-7,-0.0,0.1]}' in line
    assert "é\u2028\\u0001\\u001f\x7f \\\"q\\\" \\\\ 🙂".encode("utf-8") in line
    assert b',"teacher_score":1e-7,' in line and b',"token_count_estimate":7,' in line and b',"tool_call_count":5,' in line
    # seed: float(score.get("total", 0.0) or 0.0) turns -0.0 into 0.0
    assert b'"teacher_score":0.0,' in lines["zero--r000"] and b'"teacher_score":1e+16,' in lines["huge--r000"]
    metadata_lines = (out / "episode_metadata.jsonl").read_bytes().splitlines()
    assert [line.count(b'"teacher_score":') for line in metadata_lines] == [1, 1, 1]
    assert b'"teacher_score":1e+16,' in metadata_lines[0] and b'"teacher_score":1e-7,' in metadata_lines[1]


def test_integers_past_64_bits_and_deep_nesting_in_imported_rows_are_exported_exactly(tmp_path):
    """Seed 002 reads and writes rows with Python's json, which keeps both. orjson read the
    integer as a float (1.1805916207174113e+21 in the line, its type changed, no word said) and
    refused nesting past 254 levels (a traceback, after the import had accepted the row)."""
    run = write_run_dir(tmp_path / "run", "run-a", [{"episode_id": "big--r000", "case_id": "big"}])
    deep: list = [1e-5]
    for _ in range(299):
        deep = [deep]
    record = {**sft_row("big--r000", "big"), "count": 2**70, "floor": -(2**63) - 1, "deep": deep}
    write_jsonl(run / "trajectory_sft.jsonl", [record])
    perception = {"episode_id": "big--r000", "case_id": "big", "images": ["/images/big.jpg"],
                  "perception": {"ocr_text": "caption", "pixels": 2**64, "deep": deep}}
    write_jsonl(run / "perception_trajectories.jsonl", [perception])
    out = tmp_path / "out"
    export_dataset(EventLog(tmp_path / "log.duckdb"), ExportOptions(out_dir=out, run_dirs=[run], fmt="parquet"))
    [split] = [split for split in ("train", "validation", "test") if (out / f"{split}.jsonl").read_bytes()]
    line = (out / f"{split}.jsonl").read_bytes()
    assert b'"count":1180591620717411303424,' in line and b'"floor":-9223372036854775809,' in line
    assert b'"deep":' + b"[" * 300 + b"0.00001" + b"]" * 300 + b"," in line
    exported = json.loads(line)
    assert (exported["count"], exported["floor"], exported["deep"]) == (2**70, -(2**63) - 1, deep)
    example = json.loads((out / f"perception.{split}.jsonl").read_bytes())
    assert example["perception"] == perception["perception"]
    table = pq.read_table(out / f"{split}.parquet")
    assert table.column("count").to_pylist() == ["1180591620717411303424"]  # a JSON value: no Arrow integer holds it
    assert json.loads(pq.read_table(out / f"perception.{split}.parquet").column("perception")[0].as_py()) == perception["perception"]


def test_parquet_columns_keep_the_seed_dicts_key_order(tmp_path):
    run = write_run_dir(tmp_path / "run", "run-a", [{"episode_id": "one--r000", "case_id": "one"}])
    record = {"split": "own", "episode_id": "one--r000", "case_id": "one", "messages": [{"role": "user", "content": "hi"}], "tools": []}
    write_jsonl(run / "trajectory_sft.jsonl", [record])
    out = tmp_path / "out"
    export_dataset(EventLog(tmp_path / "log.duckdb"), ExportOptions(out_dir=out, run_dirs=[run], fmt="parquet"))
    split = read_jsonl(out / "episode_metadata.jsonl")[0]["split"]
    # the record's keys (its own "split" keeps its place), setdefault's counts, then the dataset fields
    assert pq.read_schema(out / f"{split}.parquet").names == [
        "split", "episode_id", "case_id", "messages", "tools", "token_count_estimate", "tool_call_count",
        "dataset_version", "split_group_id", "source_family_keys", "teacher_score",
    ]
    # seed 002's accepted_episodes keys, in its order
    assert pq.read_schema(out / "accepted_episodes.parquet").names == [
        "case_id", "episode_id", "split", "split_group_id", "source_run_id", "source_trace", "sft_eligibility_artifact_id",
        "semantic_reward_artifact_id", "deterministic_hard_gate_pass", "deterministic_fatal_reasons",
        "deterministic_red_flags", "teacher_score", "trajectory_token_count_estimate", "tool_call_count", "sft_route",
    ]
    # seed 002's episode metadata, the trajectory's counts (it has one), then where it went
    assert pq.read_schema(out / "episode_metadata.parquet").names == [
        "episode_id", "case_id", "source_run_id", "source_trace", "source_family_keys", "runtime_ids", "teacher_score",
        "training_eligible", "training_exclusion_reasons", "deterministic_hard_gate_pass", "deterministic_fatal_reasons",
        "deterministic_red_flags", "structured_eligibility_pass", "semantic_audit_pass", "sft_eligibility_artifact_id",
        "semantic_reward_artifact_id", "decision_policy_version", "runtime_store_path", "trajectory_export_error",
        "trajectory_token_count_estimate", "tool_call_count", "split", "split_group_id", "sft_route", "short_max_tokens",
        "trajectory_approx_tokens",
    ]


def test_parquet_columns_of_awkward_values_by_hand():
    """Keys only imported rows have, holding what Arrow cannot type as one: nothing crashes, no
    value changes (a string is not read as a list of its characters), declared keys keep their type."""
    import pyarrow as pa

    from eviscene.exports.dataset_files import _column

    assert _column("images", [[], None]).type == pa.list_(pa.string())  # was list<null>, then a crash
    mixed = _column("extra", [[{"a": 1}], "abc", None])
    assert mixed.type == pa.json_() and mixed.storage.to_pylist() == ['[{"a":1}]', '"abc"', None]
    lists = _column("extra", [[{"a": 1}, 2], [], None])
    assert lists.type.value_type == pa.json_() and lists.to_pylist() == [['{"a":1}', "2"], [], None]
    assert _column("teacher_score", [1, 2]).type == pa.float64()  # whole numbers in one split, as in the others
    assert _column("training_eligible", [None, None]).type == pa.bool_()
    spelled = _column("training_eligible", [True, "yes"])
    assert spelled.type == pa.json_() and spelled.storage.to_pylist() == ["true", '"yes"']
    assert _column("max_results", [5, "5"]).storage.to_pylist() == ["5", '"5"']


def test_the_system_tools_variant_of_a_row_by_hand():
    from eviscene.exports.dataset_files import TOOLS_EPILOGUE, TOOLS_PREAMBLE, tools_in_system_message

    tool = {"type": "function", "function": {"name": "f", "parameters": {}}}
    block = TOOLS_PREAMBLE + '{"function":{"name":"f","parameters":{}},"type":"function"}' + TOOLS_EPILOGUE
    user = {"role": "user", "content": "hi"}
    row = {"episode_id": "e", "tools": [tool], "messages": [{"role": "system", "content": "Be brief."}, user], "split": "train"}
    got = tools_in_system_message(row)
    assert got == {"episode_id": "e", "messages": [{"role": "system", "content": "Be brief." + block}, user], "split": "train"}
    assert list(got) == ["episode_id", "messages", "split"]  # the row's key order, without tools
    assert row["messages"][0] == {"role": "system", "content": "Be brief."}  # the row itself is untouched
    # no system message: one is added first, its block without the leading blank lines
    got = tools_in_system_message({"messages": [user], "tools": []})
    assert got == {"messages": [{"role": "system", "content": [{"type": "text", "text": (TOOLS_PREAMBLE + TOOLS_EPILOGUE).lstrip()}]}, user]}


def test_an_empty_parquet_file_takes_its_kinds_columns_from_the_long_holdout_or_its_keys(tmp_path):
    """Only long_holdout has rows: the empty SFT splits take its columns less the two holdout
    fields. No SFT row at all: each SFT file has the keys every SFT row has (null typed)."""
    run = write_run_dir(tmp_path / "run", "run-a", [{"episode_id": "a--r000", "case_id": "a", "padding": 900}])
    out = tmp_path / "out"
    export_dataset(EventLog(tmp_path / "log.duckdb"), ExportOptions(out_dir=out, run_dirs=[run], fmt="parquet", short_max_tokens=10))
    holdout = pq.read_schema(out / "long_holdout.parquet").names
    assert pq.read_table(out / "long_holdout.parquet").num_rows == 1 and holdout[-2:] == ["holdout_reason", "short_max_tokens"]
    assert all(pq.read_schema(out / f"{split}.parquet").names == holdout[:-2] for split in ("train", "validation", "test"))
    bare = write_run_dir(tmp_path / "bare", "run-b", [{"episode_id": "b--r000", "case_id": "b", "trajectory": False}])
    export_dataset(EventLog(tmp_path / "log2.duckdb"), ExportOptions(out_dir=tmp_path / "bare-out", run_dirs=[bare], fmt="parquet"))
    assert pq.read_schema(tmp_path / "bare-out" / "train.parquet").names == [
        "messages", "token_count_estimate", "tool_call_count", "dataset_version", "split", "split_group_id",
        "source_family_keys", "teacher_score",
    ]
    assert pq.read_schema(tmp_path / "bare-out" / "accepted_episodes.parquet").names[:2] == ["case_id", "episode_id"]


def test_a_parquet_metadata_file_has_every_rows_columns_when_its_first_row_lacks_some(tmp_path):
    """Excluded episodes by id: a--r000 has no trajectory (no trajectory fields in its row),
    b--r000 has one but is not eligible. The Parquet copy has b's trajectory columns, null for a;
    from the first row's keys alone it had dropped them for every row."""
    run = write_run_dir(tmp_path / "run", "run-a", [
        {"episode_id": "a--r000", "case_id": "a", "trajectory": False},
        {"episode_id": "b--r000", "case_id": "b", "score": {"training_eligible": False}},
    ])
    out = tmp_path / "out"
    export_dataset(EventLog(tmp_path / "log.duckdb"), ExportOptions(out_dir=out, run_dirs=[run], fmt="parquet"))
    rows = read_jsonl(out / "excluded_episode_metadata.jsonl")
    assert [("tool_call_count" in row) for row in rows] == [False, True]
    table = pq.read_table(out / "excluded_episode_metadata.parquet")
    assert set(table.column_names) == {key for row in rows for key in row}
    assert table.column("tool_call_count").to_pylist() == [None, rows[1]["tool_call_count"]]
