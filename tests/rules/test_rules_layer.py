"""`eviscene.rules` is the ground floor: it imports nothing else of EviScene."""

import ast
from pathlib import Path

import eviscene.rules

RULES = Path(eviscene.rules.__file__).parent


def _eviscene_imports(path: Path) -> list[str]:
    """Every `eviscene...` module a file imports, at any depth (function-level included)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names if alias.name.split(".")[0] == "eviscene"]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # a relative import stays inside eviscene.rules only if it is one level
                found.append("." * node.level + (node.module or ""))
            elif node.module and node.module.split(".")[0] == "eviscene":
                found.append(node.module)
    return found


def test_rules_import_only_rules():
    files = sorted(RULES.glob("*.py"))
    assert RULES / "__init__.py" in files and len(files) > 5
    outside = {
        f"{path.name}: {module}"
        for path in files
        for module in _eviscene_imports(path)
        if not (module == "eviscene.rules" or module.startswith("eviscene.rules.") or module.startswith(".") and module.count(".") == 1)
    }
    assert outside == set()


def test_the_checker_sees_function_level_imports(tmp_path):
    path = tmp_path / "m.py"
    path.write_text("import json\n\ndef f():\n    from eviscene.store import EventLog\n    import eviscene.tools.urls\n")
    assert _eviscene_imports(path) == ["eviscene.store", "eviscene.tools.urls"]
