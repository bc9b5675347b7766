"""Project-wide contracts: generated schemas match the models, every view declares its
grain and key, imports flow one way, every command has help and a README entry, every test
the README cites exists."""

import ast
import re
from pathlib import Path

import click
import pytest

from eviscene.events import schema_files
from eviscene.views import view_definitions

ROOT = Path(__file__).resolve().parents[1]


def test_event_json_schemas_match_the_models():
    generated = schema_files()
    on_disk = {p.name: p.read_text(encoding="utf-8") for p in (ROOT / "schema" / "events").glob("*.json")}
    assert on_disk == generated, "run `python -m eviscene.events` to regenerate schema/events/"


def test_every_view_file_declares_view_grain_key_and_meaning():
    definitions = view_definitions()
    assert definitions
    for d in definitions:
        assert d.path.endswith(f"/{d.name}.sql"), f"{d.path}: file name must be the view name"
        assert d.grain.startswith("one row per"), d.path
        assert d.key, d.path
        assert d.meaning, d.path
        assert f"CREATE OR REPLACE VIEW {d.name} AS" in d.sql, f"{d.path}: creates its view as `CREATE OR REPLACE VIEW {d.name} AS`"
        assert re.search(rf"CREATE OR REPLACE VIEW {d.name}\b", d.sql), d.path


LAYERS = {
    # package -> packages it must never import (events <- store <- runtime <- views/exports <- cli)
    "eviscene.store": ("eviscene.agent", "eviscene.tools", "eviscene.providers", "eviscene.release", "eviscene.cli", "click"),
    "eviscene.release": ("eviscene.agent", "eviscene.tools", "eviscene.providers", "eviscene.cli", "click"),
    "eviscene.tools": ("eviscene.agent", "eviscene.cli", "eviscene.release.gold", "click"),
    "eviscene.agent": ("eviscene.cli", "eviscene.release.gold", "click"),
    "eviscene.providers": ("eviscene.cli", "eviscene.release.gold", "click"),
    "eviscene.imports": ("eviscene.agent", "eviscene.tools", "eviscene.providers", "eviscene.exports", "eviscene.cli", "click"),
}


def _imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{a.name}" for a in node.names)
    return names


@pytest.mark.parametrize("package", sorted(LAYERS))
def test_imports_flow_one_way(package):
    folder = ROOT / package.replace(".", "/")
    for path in folder.rglob("*.py"):
        for name in _imports(path):
            for forbidden in LAYERS[package]:
                assert not (name == forbidden or name.startswith(forbidden + ".")), f"{path} imports {name}"


def test_library_never_imports_click():
    for path in (ROOT / "eviscene").rglob("*.py"):
        assert not any(n == "click" or n.startswith("click.") for n in _imports(path)), path


def _commands(group: click.Group, prefix: str = ""):
    for name in group.list_commands(click.Context(group)):  # the CLI loads its commands on demand
        command = group.get_command(click.Context(group), name)
        full = f"{prefix}{name}"
        if isinstance(command, click.Group):
            yield from _commands(command, full + " ")
        else:
            yield full, command


def test_every_command_has_help_with_an_example_and_a_readme_entry():
    from eviscene.cli.main import cli

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for name, command in _commands(cli):
        assert command.help and "Example:" in command.help, f"`eviscene {name}` needs help with an example"
        assert f"eviscene {name}" in readme, f"`eviscene {name}` is missing from README's command reference"


def test_every_command_is_listed_whole_in_its_group_s_help_at_80_columns():
    """`eviscene --help` cut most commands mid-phrase (`Import each PATH as artifact.imported events (file...`)."""
    from eviscene.cli.main import cli

    def groups(group: click.Group, name: str):
        yield name, group
        for sub in group.list_commands(click.Context(group)):
            command = group.get_command(click.Context(group), sub)
            if isinstance(command, click.Group):
                yield from groups(command, f"{name} {sub}")

    for name, group in groups(cli, "eviscene"):
        listed = group.list_commands(click.Context(group))
        room = 80 - 6 - max(map(len, listed))  # what click leaves a command's line in an 80-column help
        for sub in listed:
            short = group.get_command(click.Context(group), sub).get_short_help_str(limit=room)
            assert not short.endswith("..."), f"`{name} {sub}` is listed as {short!r} in `{name} --help`"


def test_every_test_the_readme_names_exists():
    """Each `tests/…py` or `tests/…py::test_name` the README cites as proof is a file with
    that test in it (a renamed test must not leave a promise unproven)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    cited = set(re.findall(r"`(tests/[\w/]+\.py)(?:::(\w+))?`", readme))
    assert len(cited) > 20
    for path, test in cited:
        assert (ROOT / path).is_file(), f"README cites {path}, which does not exist"
        if test:
            tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
            defined = {node.name for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}
            assert test in defined, f"README cites {path}::{test}, which is not defined there"


def test_the_trajectory_builders_list_every_view_they_read():
    from eviscene.exports.trajectories import VIEWS_READ

    source = (ROOT / "eviscene" / "exports" / "trajectories.py").read_text(encoding="utf-8")
    named = {d.name for d in view_definitions() if re.search(rf"\b(?:FROM|JOIN)\s+{d.name}\b", source)}
    assert named == set(VIEWS_READ.split())
