"""The walk of one trial through ``agentrig run``: how many files, and how often it climbs back.

Issue 34 asks two things of the code that conducts a run: "a trial from ``agentrig run`` to its
record in at most 6 files, to the report in at most 8", and "following ``agentrig run`` through
the code, the calls climb back into a file already left fewer than half as often as today". This
script measures both on the code it imports (run it with ``PYTHONPATH=<tree>/src`` to measure
another tree), from a real run:

* **The trial.** ``agentrig run EXP --dir RUN`` is invoked in-process through the CLI (typer's
  ``agentrig.cli.app``), on an experiment of ONE trial: the built-in τ² ``bikeshop`` domain, its
  first task, an ``llm`` agent, the LLM user and the NL judge, every model call through the
  channel to a real local HTTP endpoint that scripts the gold conversation
  (``bench/tau/scripted/gold_endpoint.py``, served from a thread that is not traced), concurrency 1. The run
  stores the trial in SQLite and writes ``report.html``, as any run does.

* **The trace.** ``sys.setprofile`` on the main thread records every call of a Python function
  whose code lives in the imported ``agentrig`` package's files (nothing else becomes a node) as a
  node of a call tree. A node's parent is the nearest agentrig frame below it on the stack,
  async-aware: a coroutine awaited directly has its awaiter as ``f_back``; the root coroutine of
  an asyncio Task (``asyncio.run``, ``create_task``, ``gather``, ``wait_for``…) gets as parent the
  agentrig frame that was running when ``BaseEventLoop.create_task`` received it; a frame reached
  from an event-loop callback with no creator is an orphan root. A coroutine's resumptions are
  the same node (a frame is one node until its last return, told from a suspension by the
  ``YIELD_VALUE`` opcode it stopped at).

* **The landmarks** of the trial: (1) *planned*: the agentrig function that constructs its
  ``TrialSpec``; (2) *played*: the trial envelope, ``trial/envelope.py``'s ``play_in_envelope``;
  (3) *stored*: ``store/store.py``'s ``Store.append`` of its record; (4) *reported*:
  ``report/write.py``'s ``write_report``. Each is the first such call. The **root** is the
  command's entry, ``run_command`` in ``commands/run.py`` (``cli.py`` only mounts it: not counted).

* **(a) Files on the path.** The *spine* is the union of the root-to-landmark chains in the call
  tree. The files to the record are the distinct files of the spine's nodes for landmarks 1–3;
  to the report, for 1–4. A landmark is a leaf: what it calls is not on the path.

* **(b) The walk and its climbs back.** The walk follows the run the way a person reads it:
  depth-first, in call order, from the root. Visiting a spine node enters its file and goes
  through the calls it makes, in order: a call to a spine node is visited (and the walk returns
  to the caller's file after it); a call to a function of ANOTHER file is a step into that file
  and back (not followed further); a call to a function of the same file is no step. That is
  the *direct* walk: what each function on the path calls. The *inline* walk differs in one rule:
  a call to a function of the same file is read in place, its own calls becoming the caller's (a
  reader who reads every helper of a file on the path, and none of a file off it). Both are
  counted; ``--walk`` prints the direct one, ``--walk --inline`` the other. A call made again from the same line (a loop) is read once; a module's top level run by
  an import is not a call. The walk is the sequence of files entered, consecutive repeats merged.
  A **climb back** is a CALL in the walk into a file that the walk had already left earlier (in
  file B after leaving file A, the code calls into A again: ``commands/run.py`` driving
  ``run/runner.py`` five times is four). Returning to the caller's file ends every call and is not
  counted as a climb; the returns into a file already left are reported beside it for the record.

Output: the counts, the spine's files, the walks (``--walk`` prints one step by step) and, with
``--json FILE``, all of it as JSON.

    PYTHONPATH=src .venv/bin/python perf/run_walk.py [--walk] [--json out.json]
    PYTHONPATH=/work/main/src .venv/bin/python perf/run_walk.py    # another tree
"""

from __future__ import annotations

import argparse
import contextlib
import dis
import inspect
import io
import json
import os
import platform
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from types import CodeType, FrameType
from typing import Any

KEY_ENV = "AGENTRIG_WALK_KEY"
KEY = "sk-walk-0123456789abcdef0123"

EXPERIMENT = """\
name = "walk"

[benchmark]
domains = ["bikeshop"]
num_tasks = 1

[run]
trials = 1
seed = 2026
concurrency = 1

[user]
kind = "llm"

[channel]
base_url = "{base_url}"
api_key_env = "{key_env}"
model = "gold"

[[arms]]
name = "llm"
agent = {{ kind = "llm" }}
"""

_GEN = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR | inspect.CO_ITERABLE_COROUTINE
_YIELD = dis.opmap["YIELD_VALUE"]


@dataclass(eq=False)
class Node:
    file: str  # relative to the agentrig package, e.g. "run/executor.py"
    name: str  # the function's qualified name
    code: CodeType
    parent: Node | None
    site: int = 0  # the line of the parent's code that made this call
    children: list[Node] = field(default_factory=list)


class Tracer:
    """The call tree of the agentrig functions run on this thread (see the module docstring)."""

    def __init__(self, package_dir: Path):
        self.prefix = str(package_dir) + os.sep
        self.alive: dict[int, Node] = {}  # id(frame) -> its node, until the frame's last return
        self.creators: dict[int, tuple[FrameType, tuple[Node | None, int]]] = {}  # a task's coroutine -> creator
        self.roots: list[Node] = []
        self.spec_maker: Node | None = None  # landmark 1: who built the first TrialSpec

    def _node_of(self, f: FrameType) -> Node | None:
        n = self.alive.get(id(f))
        return n if n is not None and n.code is f.f_code else None

    def _parent(self, frame: FrameType) -> tuple[Node | None, int]:
        """The nearest agentrig caller of ``frame`` and the line it called from."""
        prev, f = frame, frame.f_back
        while f is not None:
            n = self._node_of(f)
            if n is not None:
                return n, f.f_lineno
            code = f.f_code
            if code.co_name == "_run" and code.co_filename.endswith(os.path.join("asyncio", "events.py")):
                break  # a Task's step: its creator, if we saw it
            prev, f = f, f.f_back
        made = self.creators.get(id(prev))
        return made[1] if made is not None else (None, 0)

    def __call__(self, frame: FrameType, event: str, arg: Any) -> None:
        code = frame.f_code
        ours = code.co_filename.startswith(self.prefix)
        if event == "call":
            if ours:
                if self._node_of(frame) is not None:
                    return  # a coroutine or generator resumed: the same call
                parent, line = self._parent(frame)
                node = Node(code.co_filename[len(self.prefix):], code.co_qualname, code, parent, line)
                self.alive[id(frame)] = node
                (parent.children if parent is not None else self.roots).append(node)
            elif code.co_name == "create_task" and code.co_filename.endswith(os.path.join("asyncio", "base_events.py")):
                coro = frame.f_locals.get("coro")
                cf = getattr(coro, "cr_frame", None)
                if cf is not None:
                    self.creators[id(cf)] = (cf, self._parent(frame))
            elif code.co_name == "__init__" and self.spec_maker is None and code.co_filename == "<string>":
                obj = frame.f_locals.get("self")
                if type(obj).__name__ == "TrialSpec":
                    self.spec_maker = self._parent(frame)[0]
        elif event == "return" and ours:
            if code.co_flags & _GEN and frame.f_lasti >= 0 and code.co_code[frame.f_lasti] == _YIELD:
                return  # suspended, not finished
            if self._node_of(frame) is not None:
                del self.alive[id(frame)]


def walk_of(root: Node, spine: set[Node], leaves: set[Node], inline: bool = False) -> list[tuple[str, str, str]]:
    """The walk: (kind, file, what) steps, kind "call" or "return" (consecutive repeats merged).
    ``inline``: a call to a function of the same file is read in place (its calls are the caller's)."""
    steps: list[tuple[str, str, str]] = []

    def step(kind: str, file: str, what: str) -> None:
        if not steps or steps[-1][1] != file:
            steps.append((kind, file, what))

    def read(node: Node, file: str) -> None:
        seen: set[tuple[int, CodeType]] = set()
        for c in node.children:
            if c.name == "<module>":
                continue  # an import running a module's top level: not a call of the walk
            if c in spine:
                visit(c)
                step("return", file, node.name)
                continue
            if (c.site, c.code) in seen:
                continue  # the same call again (a loop): read once
            seen.add((c.site, c.code))
            if c.file == file:
                if inline:
                    read(c, file)  # the same file: read in place
            else:
                step("call", c.file, c.name)
                step("return", file, node.name)

    def visit(node: Node) -> None:
        step("call", node.file, node.name)
        if node not in leaves:
            read(node, node.file)

    visit(root)
    return steps


def climbs(steps: list[tuple[str, str, str]]) -> dict[str, int]:
    left: set[str] = set()
    out = {"return": 0, "call": 0}
    for (_k0, prev, _w0), (kind, file, _w) in zip(steps, steps[1:]):
        left.add(prev)
        if file in left:
            out[kind] += 1
    return out


def chain(node: Node) -> list[Node]:
    out = []
    n: Node | None = node
    while n is not None:
        out.append(n)
        n = n.parent
    return out[::-1]


def find(nodes: list[Node], file: str, name: str) -> Node | None:
    stack = list(nodes)
    found: list[Node] = []
    while stack:  # every node; the first call by order of creation wins
        n = stack.pop()
        if n.file == file and n.name == name:
            found.append(n)
        stack.extend(n.children)
    return min(found, key=_order.get) if found else None  # type: ignore[arg-type]


_order: dict[Node, int] = {}


def measure(work: Path) -> dict[str, Any]:
    import agentrig
    from agentrig.cli import app
    from agentrig.testing.fake_endpoint import ThreadedFakeEndpoint
    from agentrig.bench.tau.scripted.gold_endpoint import GoldEndpoint

    os.environ[KEY_ENV] = KEY
    package = Path(agentrig.__file__).resolve().parent
    with ThreadedFakeEndpoint(endpoint=GoldEndpoint(None, api_key=KEY)) as served:
        exp = work / "exp.toml"
        exp.write_text(EXPERIMENT.format(base_url=served.base_url, key_env=KEY_ENV), encoding="utf-8")
        tracer = Tracer(package)
        out = io.StringIO()
        code: Any = None
        sys.setprofile(tracer)
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
                try:
                    app(["run", str(exp), "--dir", str(work / "run")], standalone_mode=False)
                    code = 0
                except SystemExit as exc:
                    code = exc.code
                except Exception as exc:  # typer.Exit under standalone_mode=False
                    code = getattr(exc, "exit_code", repr(exc))
        finally:
            sys.setprofile(None)
    if code not in (0, None):
        raise SystemExit(f"agentrig run exited {code}:\n{out.getvalue()[-2000:]}")
    # creation order, for "the first call"
    stack = list(tracer.roots)
    i = 0
    while stack:
        n = stack.pop(0)
        _order[n] = i
        i += 1
        stack[0:0] = n.children
    root = find(tracer.roots, "commands/run.py", "run_command")
    marks = {"planned": tracer.spec_maker,
             "played": find(tracer.roots, "trial/envelope.py", "play_in_envelope"),
             "stored": find(tracer.roots, "store/store.py", "Store.append"),
             "reported": find(tracer.roots, "report/write.py", "write_report")}
    for what, n in {"root": root, **marks}.items():
        if n is None:
            raise SystemExit(f"the trace has no {what} node: the script no longer matches the code")
    assert root is not None
    chains = {}
    for what, n in marks.items():
        c = chain(n)  # type: ignore[arg-type]
        if root not in c:
            raise SystemExit(f"the {what} landmark ({n.file}:{n.name}) is not under the command's entry")  # type: ignore[union-attr]
        chains[what] = c[c.index(root):]
    to_record = [n for w in ("planned", "played", "stored") for n in chains[w]]
    to_report = to_record + chains["reported"]

    def files(nodes: list[Node]) -> list[str]:
        return list(dict.fromkeys(n.file for n in nodes))

    spine = set(to_report)
    leaves = {n for n in marks.values() if n is not None}
    walks = {}
    for kind, inline in (("direct", False), ("inline", True)):
        steps = walk_of(root, spine, leaves, inline)
        c = climbs(steps)
        walks[kind] = {"climbs_back": c["call"], "returns_into_left_files": c["return"], "steps": len(steps),
                       "walk": [{"step": k, "file": f, "function": w} for k, f, w in steps]}
    return {"files_to_record": files(to_record), "files_to_report": files(to_report), "walks": walks,
            "chains": {w: [f"{n.file}:{n.name}" for n in ch] for w, ch in chains.items()},
            "package": str(package)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--walk", action="store_true", help="print the walk step by step")
    ap.add_argument("--inline", action="store_true", help="with --walk: print the inline walk, not the direct one")
    ap.add_argument("--chains", action="store_true", help="print each landmark's chain of calls")
    ap.add_argument("--json", type=Path, help="write the figures as JSON")
    args = ap.parse_args()
    assert threading.current_thread() is threading.main_thread()
    with tempfile.TemporaryDirectory(prefix="run-walk-") as tmp:
        res = measure(Path(tmp))
    res["python"] = platform.python_version()
    res["machine"] = f"{platform.machine()}, {os.cpu_count()} cores"
    print(f"agentrig: {res['package']}")
    print(f"files to the record: {len(res['files_to_record'])}  ({' → '.join(res['files_to_record'])})")
    extra = [f for f in res["files_to_report"] if f not in res["files_to_record"]]
    print(f"files to the report: {len(res['files_to_report'])}  (+ {', '.join(extra) or 'none'})")
    for kind, w in res["walks"].items():
        print(f"climbs back ({kind} walk): {w['climbs_back']}  (and {w['returns_into_left_files']} returns into a "
              f"file already left) in {w['steps']} steps")
    if args.chains:
        for w, ch in res["chains"].items():
            print(f"\n{w}:\n  " + "\n  ".join(ch))
    if args.walk:
        print()
        for s in res["walks"]["inline" if args.inline else "direct"]["walk"]:
            print(f"  {'→' if s['step'] == 'call' else '←'} {s['file']:<32} {s['function']}")
    if args.json:
        args.json.write_text(json.dumps(res, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
