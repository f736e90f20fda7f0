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
                testing    real local endpoints for tests and the demo, and the scripted-responder base
                           each benchmark's scripted endpoint builds on (knowing no benchmark)
  2  benchmark  the seam (benchmark.py)                          trial   one trial's context, envelope, truncation watch
  3  analysis   pure figures from stored trials
  4  agents     agents under test and reference agents           plugins hooks around agent steps
  5  bench      the benchmarks (τ², terminal, …), each reached by the others only through the seam's registry
  6  report     the HTML report
  7  run        planning and executing a run (run/ray/ included)
  8  commands   one module per ``agentrig`` verb, and cli.py that mounts them

Inside a package the same rules hold for the floors of its own table (``PACKAGE_FLOORS``: a package →
its floors, checked on the edges between its own modules, lazy imports included). bench/terminal's,
bottom to top (docs/terminal.md, "The floors inside bench/terminal", draws them):

  0  core       sandbox settings, CommandResult and the sandbox errors, the host's package-index settings,
                reading commands' output and scripts (netfail, fetches, shellread, buildfail)
  1  shell      running commands (stateless and persistent)     images   base roots built from packages
  2  tasks      a task as read from disk: task files and model, Dockerfile, compose file, test scripts, parsers
  3  sandbox    the sandbox kinds (bwrap, docker/podman, local) and what runs beside or inside them
  4  terminal   the package's own modules: the benchmark, the episode, the verifier, agents, audit, commands…
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parent.parent / "src"

# floor → (level, the packages and modules it holds)
FLOORS: dict[str, tuple[int, tuple[str, ...]]] = {
    "core": (0, ("agentrig", "agentrig.errors", "agentrig.types", "agentrig.redact", "agentrig.config",
                 "agentrig.tables", "agentrig.cli_errors", "agentrig.task_values", "agentrig.owners",
                 "agentrig.procs")),
    "channel": (1, ("agentrig.channel",)),
    "store": (1, ("agentrig.store",)),
    "testing": (1, ("agentrig.testing",)),
    "benchmark": (2, ("agentrig.benchmark",)),
    "trial": (2, ("agentrig.trial",)),
    "analysis": (3, ("agentrig.analysis",)),
    "agents": (4, ("agentrig.agents",)),
    "plugins": (4, ("agentrig.plugins",)),
    "bench": (5, ("agentrig.bench",)),
    "report": (6, ("agentrig.report",)),
    "run": (7, ("agentrig.run",)),
    "commands": (8, ("agentrig.commands", "agentrig.cli")),
}

# Floors inside a package: package → its own floor table (same shape as FLOORS), checked on the edges
# between the package's own modules. A module is on the floor of its longest prefix named here.
_T = "agentrig.bench.terminal"
PACKAGE_FLOORS: dict[str, dict[str, tuple[int, tuple[str, ...]]]] = {
    _T: {
        "core": (0, (f"{_T}.core",)),
        "shell": (1, (f"{_T}.shell",)),
        "images": (1, (f"{_T}.images",)),
        "tasks": (2, (f"{_T}.tasks",)),
        "sandbox": (3, (f"{_T}.sandbox",)),
        "terminal": (4, (_T,)),
    },
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


@functools.cache
def graph() -> dict[str, set[str]]:
    """agentrig's import graph, read once per process when a test asks for it (not at collection:
    every pytest-xdist worker collects every file)."""
    return import_graph(SRC)


def floor_of(module: str, floors: dict[str, tuple[int, tuple[str, ...]]] = FLOORS) -> str:
    """The floor holding ``module``: the longest package or module prefix named in ``floors``."""
    best, size = None, -1
    for name, (_, prefixes) in floors.items():
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and len(p) > size:
                best, size = name, len(p)
    assert best is not None, f"{module} is on no floor: add it to the floor table (and to the docs that draw it)"
    return best


def wrong_way(graph: dict[str, set[str]], floors: dict[str, tuple[int, tuple[str, ...]]] = FLOORS) -> list[str]:
    """Every edge that points up a floor, or sideways to another folder on the same level."""
    bad = []
    for a, targets in graph.items():
        fa = floor_of(a, floors)
        for b in targets:
            fb = floor_of(b, floors)
            if fa != fb and floors[fb][0] >= floors[fa][0] and (a, b) not in EXCEPTIONS:
                bad.append(f"{a} ({fa}) → {b} ({fb})")
    return sorted(bad)


def folder_graph(graph: dict[str, set[str]], floors: dict[str, tuple[int, tuple[str, ...]]] = FLOORS) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {f: set() for f in floors}
    for a, targets in graph.items():
        for b in targets:
            if floor_of(a, floors) != floor_of(b, floors) and (a, b) not in EXCEPTIONS:
                out[floor_of(a, floors)].add(floor_of(b, floors))
    return out


def inside(graph: dict[str, set[str]], package: str) -> dict[str, set[str]]:
    """The graph of ``package``'s own modules: only the edges between two of them."""
    mods = under(graph, package)
    return {m: graph[m] & mods for m in mods}


def test_the_graph_is_read_from_the_source():
    # a broken reader would find no edges and pass every rule below
    assert len(graph()) > 80
    assert "agentrig.report" in graph()["agentrig.run.session"]  # a deferred import, inside a function
    assert "agentrig.store.rundir" in graph()["agentrig.report.collect"]
    assert "agentrig.run.experiment" in graph()["agentrig.commands.run"]  # `from agentrig.run import experiment`


def test_every_module_is_on_a_floor():
    for m in graph():
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
    found = [sorted(c) for c in cycles(graph()) if c not in ALLOWED_CYCLES]
    assert found == [], f"import cycles: {found}"


def test_no_circle_among_folders():
    found = [sorted(c) for c in cycles(folder_graph(graph()))]
    assert found == [], f"folders importing each other: {found}"


def test_imports_go_down_the_floors():
    assert wrong_way(graph()) == []


def test_every_named_exception_still_exists():
    # an exception whose edge is gone must leave the list (so the list never hides a new edge)
    stale = [f"{a} → {b}" for a, b in EXCEPTIONS if b not in graph().get(a, set())]
    assert stale == [], f"remove these from EXCEPTIONS: {stale}"


def test_analysis_and_report_never_reach_the_run_s_driver():
    # pure figures and the report are read-only consumers of a run: nothing they import, even
    # indirectly, plans or plays trials
    driver = under(graph(), "agentrig.run") | under(graph(), "agentrig.commands")
    for package in ("agentrig.analysis", "agentrig.report"):
        indirect = reachable(graph(), under(graph(), package)) & driver
        assert indirect == set(), f"{package} reaches the run's driver through other modules: {sorted(indirect)}"


# A module named by string ("agentrig.x.y", "agentrig.x.y:attr": an importlib registry's entry) is an
# arrow the import reader cannot see; it follows the floors too. The benchmark seam's registry is the
# one place allowed to name bench/ so (that is how generic code reaches a benchmark without importing it).
STRING_PATH = re.compile(r"agentrig(?:\.\w+)+(?::\w+)?")
ALLOWED_STRING_PATHS = {("agentrig.benchmark", "bench")}


def string_graph(src: Path) -> dict[str, set[str]]:
    """module → the agentrig modules its string constants name (an attribute after the module allowed;
    a string whose only module prefix is the root package, e.g. a label "agentrig.owner", names none)."""
    mods = {m: v for m, v in modules(src).items() if m == "agentrig" or m.startswith("agentrig.")}
    graph: dict[str, set[str]] = {}
    for name, (path, _) in mods.items():
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and STRING_PATH.fullmatch(node.value):
                parts = node.value.partition(":")[0].split(".")
                while len(parts) > 1 and ".".join(parts) not in mods:
                    parts.pop()
                if len(parts) > 1:
                    targets.add(".".join(parts))
        graph[name] = targets - {name}
    return graph


def strings_up(graph: dict[str, set[str]]) -> list[str]:
    return wrong_way({a: {b for b in bs if (a, floor_of(b)) not in ALLOWED_STRING_PATHS} for a, bs in graph.items()})


def test_the_string_check_finds_a_module_named_from_below(tmp_path):
    pkg = tmp_path / "agentrig"
    (pkg / "channel" / "wires").mkdir(parents=True)
    (pkg / "bench").mkdir()
    for f in ("__init__.py", "channel/__init__.py", "channel/wires/__init__.py", "channel/wires/chat.py",
              "bench/__init__.py", "bench/tau.py"):
        (pkg / f).write_text("")
    (pkg / "config.py").write_text('WIRES = {"chat": "agentrig.channel.wires.chat"}\nLABEL = "agentrig.owner"\n'
                                   'B = "agentrig.bench.tau:Tau"\n')
    (pkg / "benchmark.py").write_text('B = "agentrig.bench.tau:Tau"\n')  # the seam's registry: allowed
    assert strings_up(string_graph(tmp_path)) == ["agentrig.config (core) → agentrig.bench.tau (bench)",
                                                  "agentrig.config (core) → agentrig.channel.wires.chat (channel)"]


def test_no_module_names_a_module_above_it_by_string():
    graph = string_graph(SRC)
    assert any(t.startswith("agentrig.bench.") for t in graph["agentrig.benchmark"])  # else a blind reader passes
    assert strings_up(graph) == [], "move the registry to the floor of the modules it names"


# ---- floors inside a package (PACKAGE_FLOORS) ------------------------------------------------------

TERMINAL = PACKAGE_FLOORS[_T]


def test_every_package_with_floors_exists_and_each_floor_holds_a_module():
    # a table naming a package or floor that moved away would check nothing
    for package, floors in PACKAGE_FLOORS.items():
        assert package in graph(), f"PACKAGE_FLOORS names {package}, which is not a module"
        mods = under(graph(), package)
        empty = [f for f in floors if not any(floor_of(m, floors) == f for m in mods)]
        assert empty == [], f"{package}: floors that hold no module: {empty}"


def test_the_reader_sees_the_lazy_imports_inside_bench_terminal():
    # deferred imports, inside functions, are edges here too
    assert f"{_T}.tasks.staging" in graph()[f"{_T}.tasks.taskmodel"]  # `from . import staging` inside support()
    assert f"{_T}.sandbox.bwrap" in graph()[f"{_T}.sandbox"]  # inside open_sandbox


def test_the_floor_check_inside_bench_terminal_finds_an_upward_and_a_sideways_arrow():
    graph = {f"{_T}.core.base": {f"{_T}.sandbox.bwrap"}, f"{_T}.sandbox.bwrap": {f"{_T}.shell"},
             f"{_T}.shell": {f"{_T}.images.builder"}, f"{_T}.images.builder": {f"{_T}.core.base"},
             f"{_T}.episode": {f"{_T}.sandbox", f"{_T}.verifier"}, f"{_T}.sandbox": set(), f"{_T}.verifier": set()}
    assert wrong_way(graph, TERMINAL) == [
        f"{_T}.core.base (core) → {_T}.sandbox.bwrap (sandbox)",
        f"{_T}.shell (shell) → {_T}.images.builder (images)",
    ]


@pytest.mark.parametrize("package", sorted(PACKAGE_FLOORS))
def test_imports_go_down_the_floors_inside_a_package(package):
    assert wrong_way(inside(graph(), package), PACKAGE_FLOORS[package]) == []


@pytest.mark.parametrize("package", sorted(PACKAGE_FLOORS))
def test_no_circle_among_a_package_s_folders(package):
    found = [sorted(c) for c in cycles(folder_graph(inside(graph(), package), PACKAGE_FLOORS[package]))]
    assert found == [], f"{package}: folders importing each other: {found}"


# ------------------------------------------------------------------ a benchmark only through the seam

# Outside ``agentrig.bench.*`` nothing imports a benchmark's package, eagerly or in a function, nor
# names one of its modules in a string ("agentrig.bench.tau.judge", "module:Name", a ``python -m``
# argument): generic code asks the seam (``get_benchmark(kind)``). The one exception is the seam's
# registry, which names each benchmark's parts by import path — as strings, never by an import.
BENCH = "agentrig.bench"
REGISTRY = "agentrig.benchmark"


def _in_bench(module: str) -> bool:
    return module == BENCH or module.startswith(BENCH + ".")


def named_modules(src: Path, root: str = "agentrig") -> dict[str, set[str]]:
    """module → the agentrig module paths it names in a string constant that is one (``"a.b"`` or
    ``"a.b:Name"``; a docstring that mentions one in its prose is not)."""
    out: dict[str, set[str]] = {}
    for name, (path, _) in modules(src).items():
        if not (name == root or name.startswith(root + ".")):
            continue
        found = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                value = node.value.split(":")[0]
                if value.startswith(root + ".") and value.replace(".", "").replace("_", "").isalnum():
                    found.add(value)
        out[name] = found
    return out


def reaches_into_bench(graph: dict[str, set[str]], names: dict[str, set[str]]) -> list[str]:
    """Every import of ``agentrig.bench.*`` from outside it, and every string naming one there, but
    the registry's strings."""
    bad = []
    for a in graph:
        if _in_bench(a):
            continue
        bad += [f"{a} imports {b}" for b in graph[a] if _in_bench(b)]
        if a != REGISTRY:
            bad += [f"{a} names {b}" for b in names.get(a, ()) if _in_bench(b)]
    return sorted(bad)


def test_nothing_outside_bench_reaches_a_benchmark_but_the_registry():
    names = named_modules(SRC)
    assert any(n.startswith("agentrig.bench.tau.") for n in names[REGISTRY])  # the strings are read
    assert reaches_into_bench(graph(), names) == []


def test_the_bench_check_finds_a_lazy_import_and_a_named_module(tmp_path):
    # the check itself can fail: a deferred import of a benchmark from testing/, a module path in a
    # string in commands/ (e.g. a `python -m` argument), an import from the registry; the registry's
    # own strings and bench/'s imports of itself pass
    pkg = tmp_path / "agentrig"
    for d in ("testing", "commands", "bench/tau"):
        (pkg / d).mkdir(parents=True)
        (pkg / d / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "bench" / "__init__.py").write_text("")
    (pkg / "bench" / "tau" / "data.py").write_text("from . import __name__ as n\n")
    (pkg / "bench" / "tau" / "judge.py").write_text("from .data import n\n")
    (pkg / "testing" / "endpoint.py").write_text("def load():\n    from ..bench.tau.data import n\n")
    (pkg / "commands" / "demo.py").write_text("ARGS = ['-m', 'agentrig.bench.tau.judge']\n")
    (pkg / "benchmark.py").write_text("REGISTRY = {'tau2': 'agentrig.bench.tau.judge:Judge'}\n"
                                      "def load():\n    import agentrig.bench.tau.data\n")
    graph = import_graph(tmp_path)
    assert reaches_into_bench(graph, named_modules(tmp_path)) == [
        "agentrig.benchmark imports agentrig.bench.tau.data",
        "agentrig.commands.demo names agentrig.bench.tau.judge",
        "agentrig.testing.endpoint imports agentrig.bench.tau.data",
    ]
