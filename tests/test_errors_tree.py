"""Every exception class of the package is drawn in the tree of ``agentrig/errors.py``'s docstring,
under its real base, with the module it lives in: a new exception class must be drawn there — or, a
benchmark's own, in its benchmark's drawing: the docstring of the module its registry entry names
(``exceptions=``, ``agentrig/benchmark.py``), whose subtrees hang under nodes of errors.py's tree.

The classes are found by importing every module under ``src/agentrig`` (a terminal task's own files
under ``bench/terminal/builtin/`` are task data, not the package) and, for classes defined inside a
function, by reading the source: a nested class whose base looks like an exception fails the test
(draw it at module level instead).
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re

import pytest

import agentrig.errors
from agentrig.benchmark import exception_trees

from .support import package_modules

NODE = re.compile(r"^    (?P<rails>(?:[│ ]   )*)[├└]── (?P<name>\w+)(?: \((?P<second>\w+)\))?\s+(?P<module>[\w/]+)\s")
ROOT = re.compile(r"^    (?P<name>\w+)\s*$")  # a benchmark's subtree starts at a node of errors.py's tree
BENCH_MARK = "Its own exceptions"  # the sentence that introduces a benchmark's drawing


def _walk(lines: list[str], out: dict[str, tuple[str, str | None, str]], roots: set[str] | None = None) -> None:
    """Read drawn nodes into ``out`` until a blank line. ``roots``: the names a line of a bare name may
    start a subtree under (a benchmark's drawing); None: the tree starts under ``Exception``."""
    stack = ["Exception"] if roots is None else []
    for line in lines:
        if not line.strip():
            break
        r = ROOT.match(line) if roots is not None else None
        if r is not None:
            assert r["name"] in roots, f"{r['name']} is not a node of errors.py's tree: {line!r}"
            stack = [r["name"]]
            continue
        m = NODE.match(line)
        if m is None:
            assert re.match(r"^    [│ ]*\s", line), f"a line of the tree that is neither a node nor a continuation: {line!r}"
            continue
        assert stack, f"{m['name']} is drawn before the node it hangs under: {line!r}"
        depth = len(m["rails"]) // 4 + 1
        assert depth <= len(stack), f"{m['name']} is drawn deeper than under a parent: {line!r}"
        del stack[depth:]
        assert m["name"] not in out, f"{m['name']} is drawn twice"
        out[m["name"]] = (stack[-1], m["second"], m["module"])
        stack.append(m["name"])


def drawn_core() -> dict[str, tuple[str, str | None, str]]:
    """errors.py's tree: class name → (parent's name, second base or None, module)."""
    lines = (agentrig.errors.__doc__ or "").splitlines()
    root = next(i for i, line in enumerate(lines) if line.strip().split(" ")[0] == "Exception")
    out: dict[str, tuple[str, str | None, str]] = {}
    _walk(lines[root + 1:], out)
    return out


def drawn_by(doc: str, known: set[str]) -> dict[str, tuple[str, str | None, str]]:
    """A benchmark's drawing of its own exceptions (its subtrees under the ``known`` nodes)."""
    lines = doc.splitlines()
    intro = [i for i, line in enumerate(lines) if line.startswith(BENCH_MARK)]
    assert len(intro) == 1, f"the docstring has no (or more than one) paragraph starting {BENCH_MARK!r}"
    start = next(i for i in range(intro[0], len(lines)) if not lines[i].strip()) + 1
    out: dict[str, tuple[str, str | None, str]] = {}
    _walk(lines[start:], out, known)
    return out


def drawn() -> dict[str, tuple[str, str | None, str]]:
    """The whole tree: errors.py's and every registered benchmark's drawing of its own exceptions
    (each only of classes in its own package)."""
    out = drawn_core()
    assert not [n for n, (_, _, m) in out.items() if m.startswith("bench/")], \
        "errors.py draws a benchmark's exception: draw it in its benchmark's drawing"
    for kind, module in exception_trees().items():
        own = drawn_by(importlib.import_module(module).__doc__ or "", set(out))
        package = "/".join(module.removeprefix("agentrig.").split(".")[:2]) + "/"
        assert own, f"benchmark {kind!r}: {module} draws no exception"
        strays = [n for n, (_, _, m) in own.items() if not m.startswith(package)]
        assert not strays, f"benchmark {kind!r} draws classes outside {package}: {strays}"
        twice = set(own) & set(out)
        assert not twice, f"drawn twice: {sorted(twice)}"
        out.update(own)
    return out


def test_a_benchmark_s_drawing_is_read(tmp_path):
    # the reader of a benchmark's drawing can fail: a subtree under an unknown node, and a class
    # drawn under a node are both seen
    doc = (f"A benchmark.\n\n{BENCH_MARK}, under errors.py's nodes:\n\n"
           "    DataError\n    └── ArithError          bench/arith/tasks         a malformed sum\n"
           "    Signal\n    └── _Carry (ValueError) bench/arith/play          a carry\n\nMore.\n")
    assert drawn_by(doc, {"DataError", "Signal"}) == {"ArithError": ("DataError", None, "bench/arith/tasks"),
                                                     "_Carry": ("Signal", "ValueError", "bench/arith/play")}
    with pytest.raises(AssertionError, match="not a node of errors.py's tree"):
        drawn_by(doc, {"DataError"})


def exception_classes() -> dict[str, type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for name, _ in package_modules():
        module = importlib.import_module(name)
        for obj in vars(module).values():
            if inspect.isclass(obj) and issubclass(obj, BaseException) and obj.__module__ == name:
                assert obj.__name__ not in found or found[obj.__name__] is obj, (
                    f"two exception classes are named {obj.__name__} ({found[obj.__name__].__module__}, {name}): "
                    "the tree names each class once")
                found[obj.__name__] = obj
    return found


def test_every_exception_class_is_drawn_under_its_base():
    tree = drawn()
    classes = exception_classes()
    assert {"AgentrigError", "InfrastructureFault", "Signal", "SandboxError", "WorkerError"} <= set(classes)
    undrawn = sorted(set(classes) - set(tree))
    assert not undrawn, f"exception classes missing from the tree in agentrig/errors.py's docstring: {undrawn}"
    stale = sorted(set(tree) - set(classes))
    assert not stale, f"the tree in agentrig/errors.py draws classes that do not exist: {stale}"
    for name, cls in classes.items():
        parent, second, module = tree[name]
        where = cls.__module__.removeprefix("agentrig.").replace(".", "/")
        assert module == where, f"{name} is drawn in {module}, but lives in {where}"
        bases = [b.__name__ for b in cls.__bases__]
        assert bases == [parent] + ([second] if second else []), (
            f"{name} is drawn under {parent}{f' ({second})' if second else ''}, but its bases are {bases}")


def test_no_exception_class_is_defined_inside_a_function():
    """Nested classes are out of the import-based walk's sight: keep exceptions at module level."""
    exceptionish = re.compile(r"(Error|Exception|Fault|Signal|Stop|Failed|Exhausted|Timeout)$")
    nested = []
    for name, path in package_modules():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        top = {id(n) for n in tree.body if isinstance(n, ast.ClassDef)}
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and id(node) not in top:
                bases = [ast.unparse(b).split(".")[-1] for b in node.bases]
                if any(exceptionish.search(b) for b in bases):
                    nested.append(f"{name}.{node.name}({', '.join(bases)})")
    assert not nested, f"exception classes defined inside a class or function: {nested}"


def test_the_infrastructure_faults_and_signals_keep_their_meaning():
    """The nodes the envelope and the CLI rely on: an infrastructure fault is an AgentrigError (one
    line at the CLI), a signal is not (it never reaches a person), and neither is the other."""
    from agentrig.errors import AgentrigError, AgentStop, ChannelError, InfrastructureFault, Signal

    assert issubclass(ChannelError, InfrastructureFault) and issubclass(InfrastructureFault, AgentrigError)
    assert issubclass(AgentStop, Signal) and not issubclass(Signal, AgentrigError)
    classes = exception_classes()
    both = [n for n, c in classes.items() if issubclass(c, AgentrigError) and issubclass(c, Signal)]
    assert not both, f"classes both an AgentrigError and a Signal: {both}"
    loose = [n for n, c in classes.items() if not issubclass(c, (AgentrigError, Signal))]
    assert not loose, f"exception classes outside the two nodes (AgentrigError, Signal): {loose}"
