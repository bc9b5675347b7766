"""Contracts of the sql/70_dataset views: snapshot tables match their views, the macros
that mirror Python's hashing inputs agree with Python, and views bind on an empty log."""

from __future__ import annotations

import hashlib
import json

import pytest
from dataset_builders import seed_split

from eviscene.log import EventLog


@pytest.fixture(scope="module")
def con(tmp_path_factory):
    connection = EventLog(tmp_path_factory.mktemp("empty") / "log.duckdb").connect()
    yield connection
    connection.close()


def test_every_snapshot_table_has_its_views_columns(con):
    snapshots = [r[0] for r in con.execute("SELECT table_name FROM duckdb_tables() WHERE schema_name = 'export_snapshot'").fetchall()]
    assert sorted(snapshots) == ["action_only_episodes", "candidate_episodes", "dataset_perception", "dataset_trajectories", "fixed_case_splits"]
    for name in snapshots:
        view = con.execute(f"DESCRIBE {name}").fetchall()
        table = con.execute(f"DESCRIBE export_snapshot.{name}").fetchall()
        assert [(c[0], c[1]) for c in view] == [(c[0], c[1]) for c in table], name


@pytest.mark.parametrize(
    "text", ["", "content:abc", "é😀", 'a"b\\c\n\t\x01\x7f/', "e\u0301", "\u2028", " !#[]^_`{|}~", "a]b", "\\", '"', "\x7f", "x\x1f"],
)
def test_json_ascii_is_pythons_json_dumps(con, text):
    # py_json_string writes plain ASCII itself and calls json_ascii for the rest: both are json.dumps
    assert con.execute("SELECT json_ascii(?), py_json_string(?)", [text, text]).fetchone() == (json.dumps(text), json.dumps(text))


@pytest.mark.parametrize("group", ["d824be58aafd53cfcf97", "g1", "é"])
def test_split_fraction_is_the_seeds(con, group):
    value = con.execute("SELECT split_fraction('ifv-policy-v1', ?)", [group]).fetchone()[0]
    expected = int.from_bytes(hashlib.sha256(f"ifv-policy-v1:{group}".encode()).digest()[:8], "big") / 2**64
    assert value == expected
    assert ("train" if value < 0.8 else "validation" if value < 0.9 else "test") == seed_split(group)


@pytest.mark.parametrize(
    "value, text, truthy",
    [("null", "None", False), ("true", "True", True), ("false", "False", False), ('"x"', "x", True), ('""', "", False),
     ("0", "0", False), ("1.5", "1.5", True), ("[]", "[]", False), ("{}", "{}", False),
     # strings are read by DuckDB, not Python: escapes, surrogate pairs and slashes decode the same
     ('"\\u00e9 \\"q\\"\\n\\t\\/ \\ud83d\\ude00 \\\\"', 'é "q"\n\t/ 😀 \\', True), ('["a", 1]', "['a', 1]", True)],
)
def test_python_text_and_truthiness_macros(con, value, text, truthy):
    assert con.execute("SELECT py_text(?::JSON), py_truthy(?::JSON)", [value, value]).fetchone() == (text, truthy)


@pytest.mark.parametrize(
    "value, expected",
    [("1.5", 1.5), ("7", 7.0), ("0.1", 0.1), ("0", None), ("-0.0", None), ("1e400", float("inf")),
     # 2**53 + 1 has no double: Python's str() of the int, cast, rounds to 2**53 as DuckDB's read does
     ("9007199254740993", 9007199254740992.0), ("123456789012345678901234567890", 1.2345678901234568e29),
     ('"2.5"', 2.5), ('"abc"', None), ("null", None), ("[1]", None), ("false", None),
     # float(True) is 1.0; Python's float() reads Unicode digits and white space, DuckDB's cast does not
     ("true", 1.0), ('"\\u0663\\u0662"', 32.0), ('"\\u00a02.5\\u3000"', 2.5), ('"1_000"', 1000.0), ('""', None)],
)
def test_score_double_is_pythons_text_cast(con, value, expected):
    # a JSON number read without a Python call; a string as Python's float() reads it
    assert con.execute("SELECT py_truthy_double(?::JSON)", [value]).fetchone()[0] == expected


@pytest.mark.parametrize(
    "text, expected",
    # Python's str.strip(): a no-break space, a vertical tab, an ideographic space, a
    # next-line and a file separator are white space; a zero-width space is not.
    [(" case-1\t", "case-1"), ("case-1\u00a0", "case-1"), ("\u000bcase-1\u000b", "case-1"), ("\u3000case 1\u3000", "case 1"),
     ("\u0085case-1\u001c", "case-1"), ("\u2007\u202fcase-1\u2029", "case-1"), ("case-1\u200b", "case-1\u200b"), ("\u00a0", "")],
)
def test_ids_are_stripped_as_python_strips_them(con, text, expected):
    assert text.strip() == expected
    assert con.execute("SELECT py_strip(?)", [text]).fetchone()[0] == expected


def test_dataset_views_are_empty_outside_an_export(con):
    for view in ("dataset_candidates", "rollout_selection", "split_components", "dataset_rows", "excluded_episodes", "dataset_problems"):
        assert con.execute(f"SELECT count(*) FROM {view}").fetchone()[0] == 0, view
    assert con.execute("SELECT seed, train_ratio, frozen FROM dataset_settings").fetchone() == ("ifv-policy-v1", 0.8, False)


def test_the_sql_default_settings_are_the_exporters(con):
    """`eviscene sql` reads the dataset views through the SQL file's default row; the defaults
    (split seed, ratios, token budget) are stated once in Python, and that row must equal them."""
    from eviscene.exports.dataset_views import ExportSettings

    cursor = con.execute("SELECT * FROM dataset_settings")
    row = dict(zip([column[0] for column in cursor.description], cursor.fetchone()))
    defaults = ExportSettings().as_dict()
    assert row == {column: defaults[column] for column in row}
    assert (row["seed"], row["train_ratio"], row["validation_ratio"], row["short_max_tokens"]) == ("ifv-policy-v1", 0.8, 0.1, 131072)


def test_every_dataset_view_key_is_unique_and_not_null_in_an_export(tmp_path):
    from dataset_builders import write_accepted_release, write_case_split

    from eviscene.exports.dataset import ExportOptions, export_dataset
    from eviscene.exports.dataset_why import latest_export_for
    from eviscene.exports.dataset_views import open_export
    from eviscene.views import view_definitions

    log = EventLog(tmp_path / "log.duckdb")
    release = write_accepted_release(tmp_path / "release", [
        {"episode_id": "a--r000", "case_id": "a", "families": ["content:x"]},
        {"episode_id": "b--r000", "case_id": "b", "families": ["content:x", "domain:d"]},
        {"episode_id": "c--r000", "case_id": "c", "trajectory": False},
    ], action_only=("c--r000",))
    split = write_case_split(tmp_path / "split.jsonl", {"a": ("train", "g"), "b": ("train", "g"), "c": ("validation", "h")})
    export_dataset(log, ExportOptions(out_dir=tmp_path / "out", accepted_release=release, case_split=split, minimum_accepted_cases=0))
    settings = latest_export_for(log, "a--r000").settings
    con = open_export(log, settings)
    try:
        for definition in view_definitions():
            if not definition.path.startswith("sql/70_dataset/") or definition.name == "native_candidates":
                continue
            keys = ", ".join(f'"{k}"' for k in definition.key)
            nulls = " OR ".join(f'"{k}" IS NULL' for k in definition.key)
            total, distinct, with_null = con.execute(
                f'SELECT count(*), count(DISTINCT ({keys},)), count(*) FILTER (WHERE {nulls}) FROM "{definition.name}"'
            ).fetchall()[0]
            assert distinct == total and with_null == 0, definition.name
        assert con.execute("SELECT count(*) FROM rollout_selection WHERE accepted").fetchall()[0][0] == 2
        # each decision computed once as a table; the staging views read their snapshots; the
        # read-through views stay views
        tables = {name for (name,) in con.execute("SELECT table_name FROM duckdb_tables() WHERE temporary").fetchall()}
        snapshots = {name for (name,) in con.execute("SELECT table_name FROM duckdb_tables() WHERE schema_name = 'export_snapshot'").fetchall()}
        views = {name for (name,) in con.execute("SELECT view_name FROM duckdb_views()").fetchall()}
        assert {"rollout_selection", "split_components", "dataset_splits", "excluded_episodes"} <= tables
        assert {"candidate_episodes", "dataset_trajectories"} <= snapshots & views
        assert {"imported_rows", "dataset_rows"} <= views and not {"candidate_episodes", "imported_rows", "dataset_rows"} & tables
    finally:
        con.close()
