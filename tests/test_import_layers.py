"""Imports among agentrig's modules flow one way: down the floors, never up, and no circles.

The graph is read from the source with ``ast`` (nothing is imported): one node per module of
``src/agentrig``, one edge per ``import`` / ``from … import`` naming another agentrig module,
wherever the statement stands — a deferred import inside a function is an edge too, because it
runs as soon as the function does. ``from pkg import name`` points at ``pkg.name`` when that is a
module, else at ``pkg``. The implicit import of a module's parent packages is not an edge (a
package's ``__init__`` importing its own submodules is ordinary Python, not a layering problem).

The floors, bottom to top (docs/architecture.md draws them). A module may import modules of its
own floor and of the floors below; never one above, and never a neighbour on the same level (two
folders on one level know nothing of each other):

  0  core       errors, types, redact, config, tables, cli_errors, task_values, owners (and the package)
  1  channel    the only code that speaks HTTP to models          store   the run directory and its SQLite store
  2  benchmark  the seam (benchmark.py)                          trial   one trial's context, envelope, truncation watch
  3  analysis   pure figures from stored trials
  4  agents     agents under test and reference agents           plugins hooks around agent steps
  5  bench      the benchmarks (τ², terminal, …), each reached by the others only through the seam's registry
  6  report     the HTML report                                  testing real local endpoints for tests and the demo
  7  run        planning and executing a run (run/ray/ included)
  8  commands   one module per ``agentrig`` verb, and cli.py that mounts them
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"

# floor → (level, the packages and modules it holds)
FLOORS: dict[str, tuple[int, tuple[str, ...]]] = {
    "core": (0, ("agentrig", "agentrig.errors", "agentrig.types", "agentrig.redact", "agentrig.config",
                 "agentrig.tables", "agentrig.cli_errors", "agentrig.task_values", "agentrig.owners")),
    "channel": (1, ("agentrig.channel",)),
    "store": (1, ("agentrig.store",)),
    "benchmark": (2, ("agentrig.benchmark",)),
    "trial": (2, ("agentrig.trial",)),
    "analysis": (3, ("agentrig.analysis",)),
    "agents": (4, ("agentrig.agents",)),
    "plugins": (4, ("agentrig.plugins",)),
    "bench": (5, ("agentrig.bench",)),
    "report": (6, ("agentrig.report",)),
    "testing": (6, ("agentrig.testing",)),
    "run": (7, ("agentrig.run",)),
    "commands": (8, ("agentrig.commands", "agentrig.cli")),
}

# Edges that break the floors, each with its reason. Keep this empty; an entry is a debt with a name.
EXCEPTIONS: dict[tuple[str, str], str] = {}

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


def floor_of(module: str) -> str:
    """The floor holding ``module``: the longest package or module prefix named in FLOORS."""
    best, size = None, -1
    for name, (_, prefixes) in FLOORS.items():
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and len(p) > size:
                best, size = name, len(p)
    assert best is not None, f"{module} is on no floor: add it to FLOORS (and to docs/architecture.md)"
    return best


def wrong_way(graph: dict[str, set[str]]) -> list[str]:
    """Every edge that points up a floor, or sideways to another folder on the same level."""
    bad = []
    for a, targets in graph.items():
        fa = floor_of(a)
        for b in targets:
            fb = floor_of(b)
            if fa != fb and FLOORS[fb][0] >= FLOORS[fa][0] and (a, b) not in EXCEPTIONS:
                bad.append(f"{a} ({fa}) → {b} ({fb})")
    return sorted(bad)


def folder_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {f: set() for f in FLOORS}
    for a, targets in graph.items():
        for b in targets:
            if floor_of(a) != floor_of(b) and (a, b) not in EXCEPTIONS:
                out[floor_of(a)].add(floor_of(b))
    return out


GRAPH = import_graph(SRC)


def test_the_graph_is_read_from_the_source():
    # a broken reader would find no edges and pass every rule below
    assert len(GRAPH) > 80
    assert "agentrig.report" in GRAPH["agentrig.commands.run"]  # a deferred import, inside a function
    assert "agentrig.store.rundir" in GRAPH["agentrig.report.collect"]
    assert "agentrig.run.experiment" in GRAPH["agentrig.commands.run"]  # `from agentrig.run import experiment`


def test_every_module_is_on_a_floor():
    for m in GRAPH:
        floor_of(m)


def test_the_floor_check_finds_an_upward_and_a_sideways_arrow():
    graph = {"agentrig.store.store": {"agentrig.run.runner"}, "agentrig.run.runner": set(),
             "agentrig.channel.client": {"agentrig.store.rundir"}, "agentrig.store.rundir": set()}
    assert wrong_way(graph) == ["agentrig.channel.client (channel) → agentrig.store.rundir (store)",
                                "agentrig.store.store (store) → agentrig.run.runner (run)"]


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


def test_no_circle_among_folders():
    found = [sorted(c) for c in cycles(folder_graph(GRAPH))]
    assert found == [], f"folders importing each other: {found}"


def test_imports_go_down_the_floors():
    assert wrong_way(GRAPH) == []


def test_every_named_exception_still_exists():
    # an exception whose edge is gone must leave the list (so the list never hides a new edge)
    stale = [f"{a} → {b}" for a, b in EXCEPTIONS if b not in GRAPH.get(a, set())]
    assert stale == [], f"remove these from EXCEPTIONS: {stale}"


def test_analysis_and_report_never_reach_the_run_s_driver():
    # pure figures and the report are read-only consumers of a run: nothing they import, even
    # indirectly, plans or plays trials
    driver = under(GRAPH, "agentrig.run") | under(GRAPH, "agentrig.commands")
    for package in ("agentrig.analysis", "agentrig.report"):
        indirect = reachable(GRAPH, under(GRAPH, package)) & driver
        assert indirect == set(), f"{package} reaches the run's driver through other modules: {sorted(indirect)}"
