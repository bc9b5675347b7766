"""Imports flow one way: the import graph of `eviscene/` and `cli/`, read with `ast` (module-level,
function-level and `TYPE_CHECKING` imports alike, relative ones resolved), has no cycle, and no
module imports a layer above its own.

A module depends on what it names: `from eviscene.store.writer import EventDraft` is an edge to
`eviscene.store.writer` and, when the importer lives outside `eviscene.store`, to the package
`eviscene.store` too (Python runs a package's `__init__` before its submodules). A module's own
package is not an edge: Python has loaded it before the module runs.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Lowest first; a package may import its own layer's packages and any layer below, never one
# above. Why this order:
# - rules: the ground floor, the rules several layers share.
# - errors, events, redaction: the error types, the event schema, what must never be logged.
# - store: the append-only log knows events, not what is computed from them.
# - views: the SQL view catalog reads only the log's tables (and shared rules).
# - log: `EventLog`, the store with the views over it: what every reader above holds.
# - release: reading a benchmark release (cases, gold, corpus files); knows no log.
# - tools: the agent's tools over the release corpus or the web; they read earlier results
#   (the tool cache) through a small protocol, not the log class.
# - agent: the episode loop over the tools and a provider interface; writes through `EventSink`.
# - providers: model backends behind the agent's provider interface.
# - imports: existing artifacts into the log.
# - exports: files from the views; a dataset export imports its path inputs first.
# - analysis: questions over runs (`why`, `runs compare`), reading exported rows.
# - eval: a run end to end: release, tools, agent, providers, log, exports.
# - viewer: the web viewer over everything recorded.
# - cli: the command line (and `python -m eviscene`) over everything; the package's own
#   `__init__` (`eviscene`), the Python API that names (lazily) what every layer offers.
LAYERS: list[set[str]] = [
    {"rules"},
    {"errors", "events", "redaction"},
    {"store"},
    {"views"},
    {"log"},
    {"release"},
    {"tools"},
    {"agent"},
    {"providers"},
    {"imports"},
    {"exports"},
    {"analysis"},
    {"eval"},
    {"viewer"},
    {"cli", "__main__", "eviscene"},
]

def _modules() -> dict[str, tuple[Path, bool]]:
    """Module name -> (file, is a package), for every real file of `eviscene/` (its `cli`,
    `sql`, `schema` links skipped) and of the top-level `cli/` (installed as `eviscene.cli`)."""
    found = {}
    for base, prefix, skip in ((ROOT / "eviscene", ("eviscene",), {"cli", "sql", "schema"}), (ROOT / "cli", ("eviscene", "cli"), set())):
        for path in sorted(base.rglob("*.py")):
            relative = path.relative_to(base)
            if relative.parts[0] in skip:
                continue
            parts = list(prefix) + list(relative.with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            found[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    assert (ROOT / "eviscene" / "cli").is_symlink(), "eviscene/cli is expected to link to the top-level cli/"
    return found


def _imported_names(module: str, path: Path, is_package: bool) -> set[str]:
    """Every `eviscene...` name the module imports, relative imports made absolute."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module.split(".") if is_package else module.split(".")[:-1]
                base = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else []))
            names |= {base} | {f"{base}.{alias.name}" for alias in node.names}
    return {name for name in names if name == "eviscene" or name.startswith("eviscene.")}


def import_graph() -> dict[str, set[str]]:
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for module, (path, is_package) in modules.items():
        own_ancestors = {".".join(module.split(".")[:i]) for i in range(1, module.count(".") + 1 + is_package)}
        targets = set()
        for name in _imported_names(module, path, is_package):
            # `from a.b import c`: c is a module or a name in a.b; the deepest real module wins.
            while name not in modules:
                assert "." in name, f"{path}: imports {name}, which is no module of eviscene"
                name = name.rpartition(".")[0]
            parts = name.split(".")
            targets |= {".".join(parts[:i]) for i in range(1, len(parts) + 1)} - own_ancestors
        graph[module] = targets - {module, "eviscene"}  # `eviscene` itself only re-exports lazily
    return graph


def layer_of(module: str) -> int:
    part = module.split(".")[1] if "." in module else module
    for index, layer in enumerate(LAYERS):
        if part in layer:
            return index
    raise AssertionError(f"{module} belongs to no layer: add its package to LAYERS")


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_graph_sees_function_level_and_relative_imports():
    graph = import_graph()
    assert "eviscene.agent.episode" in graph["eviscene.eval.ray_executor"]  # imported inside a method
    assert "eviscene.tools.search" in graph["eviscene.tools.corpus"]  # imported inside a method
    assert "eviscene.store.writer" in graph["eviscene.agent.episode"] and "eviscene.store" in graph["eviscene.agent.episode"]
    assert "eviscene.cli.output" in graph["eviscene.cli.imports"]  # the top-level cli/, as installed
    assert "eviscene.tools.web" not in graph["eviscene.tools.web.toolbox"]  # its own package is no edge


def test_no_module_cycles():
    assert _cycles(import_graph()) == []


def test_no_module_imports_a_higher_layer():
    upward = sorted(
        f"{module} -> {target}"
        for module, targets in import_graph().items()
        for target in targets
        if layer_of(target) > layer_of(module)
    )
    assert upward == []


def test_the_store_imports_nothing_above_it():
    graph = import_graph()
    store = {m for m in graph if m == "eviscene.store" or m.startswith("eviscene.store.")}
    below = {"eviscene.rules", "eviscene.errors", "eviscene.events", "eviscene.redaction"}
    reached = {t for m in store for t in graph[m] if t not in store}
    assert {t for t in reached if not any(t == b or t.startswith(b + ".") for b in below)} == set()
