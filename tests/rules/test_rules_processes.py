"""A process is named by its program and subcommand, never by its arguments."""

import pytest

from eviscene.rules.processes import command_name


@pytest.mark.parametrize(("argv", "name"), [
    (["/venv/bin/python3", "/venv/bin/eviscene", "--db", "runs/log.duckdb", "sql", "SELECT 1"], "eviscene sql"),
    (["/venv/bin/eviscene", "--db", "log.duckdb", "eval", "run", "--limit", "2"], "eviscene eval run"),
    (["/venv/bin/eviscene", "log", "seal", "r1"], "eviscene log seal"),
    (["/venv/bin/eviscene", "eval", "resume", "my-run"], "eviscene eval resume"),
    (["python", "-m", "eviscene", "views"], "eviscene views"),
    (["python", "-c", "import secret"], "python -c"),
    (["/usr/bin/python3", "/tmp/long_query.py", "/tmp/log.duckdb"], "long_query.py"),
    ([], ""),
])
def test_a_process_is_named_by_its_program_and_subcommand(argv, name):
    """`--db PATH` before the subcommand named `eviscene sql` as `eviscene --db`."""
    assert command_name(argv) == name
