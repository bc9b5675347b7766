import duckdb
import pytest

from eviscene.rules.python_text import json_ascii, py_value_text
from eviscene.rules.source_policy import ALLOW_ALL, cache_partition_name, policy_block_reason, policy_from_fields
from eviscene.rules.stages import STAGES
from eviscene.rules.traces import runtime_ids, safe_trace_filename
from eviscene.rules.urls import normalize_url, url_host
from eviscene.rules.verdicts import verdict_correct
from eviscene.views import register_functions


@pytest.mark.parametrize(
    ("termination", "verdict", "gold", "correct"),
    [
        ("completed", "authentic", "authentic", True),
        ("completed", "authentic", "manipulated", False),
        ("completed", None, "authentic", False),
        ("completed", None, None, False),
        ("completed", "authentic", None, False),
        ("error", "authentic", "authentic", False),
        ("timeout", "authentic", "authentic", False),
        (None, "authentic", "authentic", False),
    ],
)
def test_verdict_correctness_truth_table(termination, verdict, gold, correct):
    assert verdict_correct(termination, verdict, gold) is correct
    con = duckdb.connect()
    register_functions(con)
    assert con.execute("SELECT verdict_correct(?, ?, ?)", [termination, verdict, gold]).fetchone()[0] is correct


def test_cache_partition_falls_back_to_the_policy_id():
    assert cache_partition_name("shared", "p1") == "shared"
    assert cache_partition_name(None, "p1") == "policy:p1"
    assert cache_partition_name("", "p1") == "policy:p1"
    assert cache_partition_name(None, None) == "policy:"
    con = duckdb.connect()
    register_functions(con)
    assert con.execute("SELECT cache_partition_name(NULL, 'p1'), cache_partition_name('c', 'p1')").fetchone() == ("policy:p1", "c")


def test_the_sql_white_space_is_pythons_at_every_code_point():
    """py_strip and py_blank read white space as str.isspace() does, over every code point
    (surrogates apart: no text holds one); RE2's \\s and DuckDB's trim() do not."""
    con = duckdb.connect()
    register_functions(con)
    found = {i for (i,) in con.execute(
        "SELECT i FROM (SELECT range AS i FROM range(55296) UNION ALL SELECT range FROM range(57344, 1114112)) "
        "WHERE py_blank(chr(i::INTEGER))").fetchall()}
    assert found == {i for i in range(0x110000) if chr(i).isspace()}
    assert len(found) == 29
    spaced = "\u3000\x0b case \u00a0\x1c"
    assert con.execute("SELECT py_strip(?), py_blank(''), py_blank(? || 'x')", [spaced, spaced]).fetchone() == (
        spaced.strip(), True, False)


def test_stored_jsonl_text_is_read_without_the_byte_order_mark_earlier_versions_let_in():
    """The strict reader now refuses a file opening with a byte-order mark (as the seed's json
    does); logs written before hold files that open with one, which the views still read."""
    con = duckdb.connect()
    register_functions(con)
    assert con.execute("SELECT jsonl_text(?), jsonl_text(?)", [b'\xef\xbb\xbf{"a": 1}\n', b'{"a": 1}\n']).fetchone() == (
        '{"a": 1}\n', '{"a": 1}\n')


def test_python_text_of_json_values():
    assert [py_value_text(v) for v in ('"a b"', "null", "true", "1.0", "1e5", '["a", 1]')] == [
        "a b", "None", "True", "1.0", "100000.0", "['a', 1]"]
    assert json_ascii("é\n") == '"\\u00e9\\n"' and json_ascii(None) == "null"
    # In SQL a missing key is NULL: str(row.get(key)) of it is 'None' (the call failed the query before).
    con = duckdb.connect()
    register_functions(con)
    assert con.execute("""SELECT py_value_text(NULL), py_value_text('{"a": 1}'::JSON->'b'), json_ascii(NULL)""").fetchone() == (
        "None", "None", "null")


def test_trace_file_names_and_stages():
    assert safe_trace_filename("ep/1 é") == "ep_1_é.json"
    assert STAGES == ("unified_react", "unified_judgment", "perception")


def test_runtime_ids_of_a_trace():
    trace = (
        '{"case_id": " c1 ", "state": {"evidence": [{"evidence_id": "ev-2"}, {"evidence_id": "ev-1", "n_id": 3}],'
        ' "tool_ids": [2, 1.50, 2.0, true, null, " x ", "\u3000y\u3000", "", "  ", ["z", 1], {"call_id": "in-object"}],'
        ' "blank_id": "  ", "run_id": ["not a string"], "x_ids": "not a list", "big_ids": [123456789012345678901234567890]}}'
    )
    # strings under *_id keys; every item of an *_ids list as Python's str() writes it (seed
    # `_collect_runtime_ids`): 1.50 -> '1.5', 2.0 -> '2.0', true -> 'True', null -> 'None',
    # a list -> "['z', 1]", an object -> "{'call_id': 'in-object'}" (and its own ids);
    # stripped (U+3000 is white space to str.strip), blanks dropped, distinct, sorted
    assert runtime_ids(trace) == [
        "1.5", "123456789012345678901234567890", "2", "2.0", "None", "True", "['z', 1]", "c1", "ev-1", "ev-2",
        "in-object", "x", "y", "{'call_id': 'in-object'}",
    ]
    assert runtime_ids("[]") == []
    # without floats, objects or lists in an *_ids list (read by orjson) and with NaN (Python's reader only): the same rule
    assert runtime_ids('{"a_ids": [1, " y ", false, null], "b": [{"c_id": "z"}]}') == ["1", "False", "None", "y", "z"]
    assert runtime_ids('{"a_ids": [NaN, -Infinity, {"w": 0.1, "v": [1e16]}]}') == ["-inf", "nan", "{'w': 0.1, 'v': [1e+16]}"]


def test_url_rules_and_policy_reason():
    assert normalize_url("HTTPS://WWW.Example.com:443/a/?q=1#f") == "https://example.com/a?q=1"
    assert url_host("news.example.org./x") == "news.example.org"
    # An IPv6 host keeps its brackets, so its colons never read as a port's.
    assert normalize_url("HTTP://[2001:DB8::1]:8080/a/") == "http://[2001:db8::1]:8080/a"
    assert normalize_url("https://[::1]:443/") == "https://[::1]"
    assert normalize_url("http://[::1:8080]/a") != normalize_url("http://[::1]:8080/a")
    assert url_host("http://[2001:db8::1]:8080/a") == "2001:db8::1"
    # What no parser takes is itself, not an error that would stop every view reading it.
    assert normalize_url(" http://[oops/x ") == "http://[oops/x"
    assert normalize_url("http://a\uff0fb/") == "http://a\uff0fb/"
    con = duckdb.connect()
    register_functions(con)
    assert con.execute(
        "SELECT normalize_url('HTTP://www.A.org/x/'), url_host('a.org:81/p'), normalize_host('WWW.B.org.'), "
        "normalize_url(NULL), url_host(NULL), normalize_host(NULL), normalize_url('http://[oops/x')"
    ).fetchone() == ("http://a.org/x", "a.org", "b.org", None, None, None, "http://[oops/x")
    policy = '{"policy_id": "p", "blocked_domains": ["factcheck.org"]}'
    assert policy_block_reason(policy, "http://www.factcheck.org/x", None) == "blocked_domain"
    assert policy_block_reason(policy, "http://notfactcheck.org/x", None) is None
    assert policy_block_reason(None, "http://factcheck.org", None) is None
    assert not ALLOW_ALL.active
    with pytest.raises(ValueError, match="source access policy is malformed: .* at blocked_domains"):
        policy_from_fields({"blocked_domains": "a.com"})
