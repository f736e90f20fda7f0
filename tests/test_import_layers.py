"""Imports among agentrig's modules flow one way: no cycles, and a fixed order of layers.

The graph is read from the source with ``ast`` (nothing is imported): one node per module of
``src/agentrig``, one edge per ``import`` / ``from … import`` naming another agentrig module,
wherever the statement stands — a deferred import inside a function is an edge too, because it
runs as soon as the function does. ``from pkg import name`` points at ``pkg.name`` when that is a
module, else at ``pkg``. The implicit import of a module's parent packages is not an edge (a
package's ``__init__`` importing its own submodules is ordinary Python, not a layering problem).

The order of a run's flow is run → analysis → report: trials are played and stored, the stored
trials are analysed, the analysis is rendered. Imports go the other way — from the consumer to
the service it uses — and the run package holds both ends:

- the **storage layer** of a run, ``run.store`` (with ``run.store_schema`` and ``run.store_shared``, the values its trials
  share) and ``run.rundir`` (opening a run directory),
  is at the bottom: it imports nothing from ``analysis``, ``report`` or the rest of ``run``;
- ``analysis`` reads runs through the storage layer only; it never imports ``report``;
- ``report`` reads runs through the storage layer and figures through ``analysis``;
- the **driver** of a run (``run.runner``, ``run.executor``, ``run.commands`` …) is at the top:
  it may use ``analysis`` (pass^k in the summary) and ``report`` (``agentrig run`` writes the
  report at the end), and nothing in ``analysis`` or ``report`` reaches it, even indirectly.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"

STORAGE = {"agentrig.store.store", "agentrig.store.shared", "agentrig.store.schema", "agentrig.store.rundir"}

# The one cycle allowed, on purpose: the plug-in registry. ``agentrig.plugins`` loads its built-in
# plug-ins in a function (``_load_builtin``) and each registers itself with ``agentrig.plugins``
# (one strongly connected component: the registry and every built-in plug-in package).
ALLOWED_CYCLES = [{"agentrig.plugins", "agentrig.plugins.memory", "agentrig.plugins.guidelines"}]


def modules(src: Path) -> dict[str, tuple[Path, bool]]:
    """Every module under ``src`` by dotted name → (file, is a package)."""
    out: dict[str, tuple[Path, bool]] = {}
    for path in sorted(src.rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        if is_pkg:
            parts = parts[:-1]
        out[".".join(parts)] = (path, is_pkg)
    return out


def import_graph(src: Path, root: str = "agentrig") -> dict[str, set[str]]:
    mods = {m: v for m, v in modules(src).items() if m == root or m.startswith(root + ".")}
    graph: dict[str, set[str]] = {}
    for name, (path, is_pkg) in mods.items():
        package = name if is_pkg else name.rpartition(".")[0]
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                targets.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    mod = ".".join(base + ([node.module] if node.module else []))
                else:
                    mod = node.module or ""
                for a in node.names:
                    targets.add(f"{mod}.{a.name}" if f"{mod}.{a.name}" in mods else mod)
        graph[name] = {t for t in targets if t in mods and t != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []
    counter = 0
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            v, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[v] = min(low[v], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = set()
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.add(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    found.append(comp)
    return found


def reachable(graph: dict[str, set[str]], starts: set[str]) -> set[str]:
    seen, todo = set(starts), list(starts)
    while todo:
        for t in graph[todo.pop()]:
            if t not in seen:
                seen.add(t)
                todo.append(t)
    return seen


def under(graph: dict[str, set[str]], package: str) -> set[str]:
    return {m for m in graph if m == package or m.startswith(package + ".")}


GRAPH = import_graph(SRC)


def test_the_graph_is_read_from_the_source():
    # a broken reader would find no edges and pass every rule below
    assert len(GRAPH) > 80
    assert "agentrig.report" in GRAPH["agentrig.commands.run"]  # a deferred import, inside a function
    assert "agentrig.store.rundir" in GRAPH["agentrig.report.collect"]
    assert "agentrig.run.experiment" in GRAPH["agentrig.commands.run"]  # `from . import experiment`


def test_the_cycle_finder_finds_a_cycle(tmp_path):
    pkg = tmp_path / "agentrig"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from agentrig.sub import b\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "b.py").write_text("def f():\n    from ..c import g\n")
    (pkg / "c.py").write_text("from . import a\n")
    (pkg / "d.py").write_text("import agentrig.a\n")
    graph = import_graph(tmp_path)
    assert cycles(graph) == [{"agentrig.a", "agentrig.sub.b", "agentrig.c"}]


def test_no_import_cycle_among_agentrig_modules():
    found = [sorted(c) for c in cycles(GRAPH) if c not in ALLOWED_CYCLES]
    assert found == [], f"import cycles: {found}"


def test_the_storage_layer_of_a_run_imports_nothing_above_it():
    above = under(GRAPH, "agentrig.analysis") | under(GRAPH, "agentrig.report") | (under(GRAPH, "agentrig.run") - STORAGE)
    for m in STORAGE:
        assert m in GRAPH
        assert not (GRAPH[m] & above), f"{m} imports {sorted(GRAPH[m] & above)}"


def test_analysis_never_imports_the_report():
    for m in under(GRAPH, "agentrig.analysis"):
        bad = GRAPH[m] & under(GRAPH, "agentrig.report")
        assert not bad, f"{m} imports {sorted(bad)} (the report is above the analysis)"


def test_analysis_and_report_reach_runs_through_the_storage_layer_only():
    driver = under(GRAPH, "agentrig.run") - STORAGE
    for package in ("agentrig.analysis", "agentrig.report"):
        mods = under(GRAPH, package)
        direct = {m: GRAPH[m] & driver for m in mods if GRAPH[m] & driver}
        assert direct == {}, f"{package} imports the run's driver: {direct}"
        indirect = reachable(GRAPH, mods) & driver
        assert indirect == set(), f"{package} reaches the run's driver through other modules: {sorted(indirect)}"
