"""The one seam between agentrig's generic machinery and a benchmark.

A *benchmark* is a source of tasks plus the rules to play and judge them. Everything else — the
runner, the executor, the store, resume, invalid-trial replay, fail-fast, smoke, progress, the
analysis, compare, the report and the plug-in hooks — is generic: it asks the benchmark of the
run (``get_benchmark(kind)``) and never imports a benchmark's package. This module is the only
place that names the benchmark packages (the registry below, by import path, loaded lazily).

A benchmark is a subclass of ``Benchmark`` (one object per kind, kept for the process):

    class Benchmark:
        kind: str                                    # [benchmark] kind = "..."
        settings_model: type[BaseModel]              # the [benchmark] table (kind: Literal[kind])
        tables: dict[str, type[BaseModel]]           # other top-level tables it owns ([user], …)
        agent_kinds: tuple[str, ...] | None          # the arm agent kinds it accepts (None: any)
        llm_agent: (kind, what) | None               # the kind that calls role "agent" (roles_needed)
        reference_agents: tuple[str, ...]            # kinds that need no model (named in fixes)
        failure_classes: dict[str, str]              # its taxonomy: id → label, precedence order
        component_names: tuple[str, ...]             # reward components tabulated (() = as stored)
        export_formats: dict[str, str]               # format → help, beyond the generic "jsonl"
        viewer_hints: dict                           # how the report's trajectory viewer shows its parts
                                                     # (data only; see VIEWER_HINTS below)

        select(exp, source) -> Selection             # load and select the tasks
        check(exp, source, selection) -> None        # experiment-wide checks (ConfigError)
        roles_needed(exp, arm, tasks) -> set[str]    # roles its trials call for this arm
        role_reason(exp, role, arm, tasks) -> (why, fix)   # a needed role without a model
        check_arm(exp, where, arm, tasks) -> None    # benchmark-specific arm checks
        comparability(r) -> dict                     # what makes trials comparable (hashed files…)
        trial_context(r, spec, ctx) -> TrialContext        # adds its parts to the executor's
        async play(r, ctx, arm, limits, attempt) -> TrialRecord   # the episode and its Verdict
        async settle() -> None                       # wait for what trials left running after they
                                                     # returned (SETTLES; the local executor awaits it)
        worker_data(r) -> [Path]                     # files under r.data_root a trial reads (Ray
                                                     # workers on other nodes get them; run/ray/data.py)
        relocate(r, root) -> None                    # make r read them from root, a node-local copy
        smoke_task(r) -> (domain, task)              # the task `run --smoke` plays
        smoke_transcript(record) -> [(label, text)]  # what `run --smoke` shows of its trial ([]: nothing)
        smoke_problem(record) -> str | None          # a valid smoke trial that still fails the check
        expected_calls(r, arm, domain, task) -> {role: n} | None   # a trial's model calls per role as
                                                     # the task's structure predicts (run --estimate)
        prepare(exp, source, selection) -> None      # build what the selected tasks need before a
                                                     # run plays them (not run by --smoke/--estimate)
        failure_context(config) -> Any               # what classify needs (AgentrigError: none)
        classify(record, context) -> FailureLabel | None
        action_sequence(record) -> tuple[token, …]   # for divergence; default: the tool calls
        task_values(config) -> {"domain/id": [str, …]} # each task's literal values (ids, names,
                                                     # amounts…) a derived guideline must not repeat
        export(fmt, store, config, run_dir, arm=, domain=, out_path=) -> (n, path, noun)
        tasks_app() -> typer.Typer | None            # `agentrig tasks … --bench KIND`
        audit_command() -> callable | None           # `agentrig audit --bench KIND` (ctx.obj["load_experiment"]: run's loader)
        scripted_endpoint(**settings) -> FakeEndpoint | None   # a local endpoint that plays its tasks'
                                                     # reference (on testing/'s scripted base; the demo)
        demo_setup() -> DemoSetup                    # where its section of `agentrig demo` plays here

Tasks are ``(domain, task)`` pairs: the domain is the ``TrialKey.domain`` of its trials (τ²'s
domain; one fixed name for a benchmark without domains, e.g. ``terminal``) and ``task.id`` its
``task_id``. "Domain" is the one name of that field everywhere (stores, exports, labels).

Playing: ``play`` returns a ``TrialRecord`` whatever happens inside the trial except a
``FatalChannelError`` (it propagates: the run stops). An infrastructure fault (the channel's
retries exhausted, a sandbox that cannot start) is a ``Verdict(valid=False, invalid_cause=…)``:
the executor stores it as an attempt and replays the trial. The ``Verdict``'s ``reward_info``
carries the named reward components.

Adding a benchmark: one package under ``bench/`` with a ``Benchmark`` subclass (its scripted
endpoint, its exceptions and its demo part included), and one line in ``_BUILTIN`` below (or
``register(kind, "module:Class")`` from a plug-in or a test). Nothing outside ``bench/`` imports a
benchmark's package: only this registry names them, by import path. docs/benchmarks.md walks
through it.
"""

from __future__ import annotations

import contextvars
import hashlib
import importlib
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, ClassVar

from pydantic import BaseModel

from agentrig.errors import ConfigError
from agentrig.types import FailureLabel

from agentrig.task_values import literal_values

__all__ = ["Benchmark", "DemoSetup", "Limits", "Selection", "register", "get_benchmark", "settings_model",
           "tables", "known_kinds", "playable_kinds", "DEFAULT_KIND", "sha", "json_sha", "literal_values"]

DEFAULT_KIND = "tau2"


def sha(data: bytes | str) -> str:
    """The short hash comparability snapshots use (of a file's bytes, a prompt's text, …)."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    return hashlib.blake2b(data, digest_size=12).hexdigest()


def json_sha(value: Any) -> str:
    """``sha`` of a JSON value, independent of key order."""
    return sha(json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":")))


VIEWER_HINTS = """Rendering hints a benchmark gives the report's trajectory viewer (plain data, JSON):

    {"code_arguments": {TOOL: ARGUMENT},   # a call of TOOL shows its string ARGUMENT as code
                                           # (a shell command), not as the JSON of its arguments
     "events": {"PLUGIN.KIND": {           # an event of the trajectory, shown as one line:
         "label": str,                     #   its name in the viewer
         "fields": [KEY, …],               #   data values shown on the line (KEY value)
         "table": KEY,                     #   a list of objects shown as a table (e.g. tests)
         "text": KEY}}}                    #   a long text shown folded (e.g. the verifier's output)

The event's whole data stays one click away. Without hints the viewer shows calls and events as JSON."""


@dataclass(frozen=True)
class Limits:
    """The generic limits of a trial, from the experiment's [run] table."""

    max_steps: int = 200
    max_errors: int = 10
    trial_timeout_s: float | None = 1800.0


@dataclass
class Selection:
    """The tasks an experiment selected: ``(domain, task)`` pairs in play order, where they come
    from (``data_root``, stored in the config snapshot) and per domain the subset used."""

    tasks: list[tuple[str, Any]]
    data_root: Path | None = None
    splits: dict[str, str | None] = field(default_factory=dict)
    # tasks the benchmark left out before the run, with why ("domain/id" → reason): listed before
    # the run and in config.json, never played (terminal: a task the sandbox cannot run)
    excluded: dict[str, str] = field(default_factory=dict)


# True while the local executor plays a run's trials (it awaits ``Benchmark.settle`` before the run
# ends): a benchmark may then let a trial return before its teardown has ended.
SETTLES: contextvars.ContextVar[bool] = contextvars.ContextVar("agentrig_settles", default=False)


class Benchmark:
    """Base class of a benchmark (see the module docstring for the protocol)."""

    kind: ClassVar[str]
    settings_model: ClassVar[type[BaseModel]]
    tables: ClassVar[dict[str, type[BaseModel]]] = {}
    agent_kinds: ClassVar[tuple[str, ...] | None] = None
    # the agent kind that calls the model (as role "agent") and what it is; None: the benchmark decides;
    # the kinds that play without a model (named in the fix when the agent's model is missing)
    llm_agent: ClassVar[tuple[str, str] | None] = None
    reference_agents: ClassVar[tuple[str, ...]] = ()
    failure_classes: ClassVar[dict[str, str]] = {"other": "Other"}
    component_names: ClassVar[tuple[str, ...]] = ()
    export_formats: ClassVar[dict[str, str]] = {}
    viewer_hints: ClassVar[dict[str, Any]] = {}  # see VIEWER_HINTS

    # -- tasks ------------------------------------------------------------------------------
    def select(self, exp: Any, source: Path) -> Selection:
        raise NotImplementedError

    def check(self, exp: Any, source: Path, selection: Selection) -> None:
        """Experiment-wide checks, before anything is played (raise ConfigError)."""

    # -- arms -------------------------------------------------------------------------------
    def roles_needed(self, exp: Any, arm: Any, tasks: list[tuple[str, Any]]) -> set[str]:
        """The roles this arm's participants call: ``agent`` when its agent is the ``llm_agent`` kind."""
        return {"agent"} if self.llm_agent is not None and arm.agent.kind == self.llm_agent[0] else set()

    def role_reason(self, exp: Any, role: str, arm: Any, tasks: list[tuple[str, Any]]) -> tuple[str, str]:
        """(why the role is needed, how to fix a missing model) for a role of ``roles_needed``."""
        if role == "agent" and self.llm_agent is not None:
            kind, what = self.llm_agent
            others = " / ".join(f'"{k}"' for k in self.reference_agents)
            return (f"its agent kind is '{kind}' ({what})",
                    "set `model` in [roles.agent] (or [channel])" + (f", or use a reference agent (kind = {others})"
                                                                      if others else ""))
        return (f"the {self.kind} benchmark calls it", f"set `model` in [roles.{role}] (or [channel])")

    def check_arm(self, exp: Any, where: str, arm: Any, tasks: list[tuple[str, Any]]) -> None:
        """Benchmark-specific checks of one arm (raise ConfigError naming ``where``)."""
        if self.agent_kinds is not None and arm.agent.kind not in self.agent_kinds:
            raise ConfigError(f"{where}: agent.kind {arm.agent.kind!r} cannot play {self.kind} tasks.\n"
                              f"  fix: use one of: {', '.join(self.agent_kinds)}")

    # -- runs -------------------------------------------------------------------------------
    def comparability(self, r: Any) -> dict[str, Any]:
        """The benchmark's part of the comparability snapshot: settings and file hashes whose
        change makes old and new trials incomparable (merged into the generic snapshot)."""
        return {}

    def trial_context(self, r: Any, spec: Any, ctx: Any) -> Any:
        """The trial's context: the executor's ``TrialContext`` (key, task, seed, channel, run id)
        with what the benchmark's participants need added (τ²: the domain, its data, the policy)."""
        return ctx

    async def play(self, r: Any, ctx: Any, arm: Any, limits: Limits, attempt: int = 0) -> Any:
        raise NotImplementedError

    async def settle(self) -> None:
        """Wait for what trials of this process left running after they returned (``SETTLES``: a
        terminal sandbox being removed); the local executor awaits it before its run ends.
        Default: nothing."""

    def warm(self, r: Any) -> None:
        """Load now what every trial of ``r`` reads (parsed data files, modules): a Ray worker
        calls it once before its first trial, so trials start warm. Default: nothing."""

    def worker_data(self, r: Any) -> list[Path]:
        """The files and directories under ``r.data_root`` that a trial reads while it plays (beyond
        the parsed tasks): a Ray worker on a node without the driver's filesystem gets a copy of
        them (run/ray/data.py). Default: none (trials read nothing from disk)."""
        return []

    def relocate(self, r: Any, root: Path) -> None:
        """Make ``r`` (a Ray worker's copy of the experiment) read its trials' files from ``root``,
        a node-local copy of ``worker_data`` laid out as under ``r.data_root``; adapt anything else
        that names a path of the driver's machine. Default: ``r.data_root = root``."""
        r.data_root = root

    def smoke_task(self, r: Any) -> tuple[str, Any]:
        return r.tasks[0]

    def smoke_transcript(self, record: Any) -> list[tuple[str, str]]:
        """What ``run --smoke`` prints of the arm's smoke trial, as (label, text) lines in order
        (e.g. ``("action", "ls -la")``); [] prints nothing beyond the verdict and the roles."""
        return []

    def smoke_problem(self, record: Any) -> str | None:
        """Why a valid smoke trial still fails the smoke check (e.g. the model's replies could not
        be parsed into actions); None: a valid trial passes, whatever its reward."""
        return None

    def expected_calls(self, r: Any, arm: Any, domain: str, task: Any) -> dict[str, float] | None:
        """The model calls per role that one trial of ``task`` by ``arm`` makes, as the task's
        structure predicts (τ²: its gold actions). Only relative sizes matter: ``run --estimate``
        calibrates them on played trials (run/estimate_model.py). None, or a role left out: no
        prediction (the estimate uses the role's mean per trial)."""
        return None

    def prepare(self, exp: Any, source: Path, selection: Selection) -> None:
        """Make the selected tasks ready before a run plays them (build what they need, cached);
        a task that cannot be made ready moves from ``selection.tasks`` to ``selection.excluded``
        with why. ``run --smoke`` and ``run --estimate`` skip it: a trial builds what it plays
        itself. Default: nothing."""

    def first_requests(self, r: Any) -> list[FirstRequest] | None:
        """What the LLM agents of the experiment ``r`` send first (the doctor sends alike: the same
        tools, and the size against the server's window). None: this benchmark cannot say (the
        doctor uses a representative request)."""
        return None

    # -- analysis ---------------------------------------------------------------------------
    def failure_context(self, config: dict) -> Any:
        """What ``classify`` needs for the run (e.g. the tasks); raise AgentrigError when it
        cannot be had (the analysis then says the failures section is unavailable)."""
        return None

    def classify(self, record: Any, context: Any) -> Any:
        """The ``FailureLabel`` of a failed valid trial (None: not classified)."""
        v = record.verdict
        return FailureLabel(primary="other", classes=["other"], termination=v.termination,
                            evidence={"other": [f"termination {v.termination}"]})

    def action_sequence(self, record: Any) -> tuple:
        """The trial's actions as hashable tokens (divergence of repeated trials compares them)."""
        return chain_of(record)

    def task_values(self, config: dict) -> dict[str, list[str]]:
        """Each task of the run (``"domain/task id"``, from its config snapshot) → the literal values
        of its data that a guideline written from it must not repeat (``literal_values``). The
        default knows only the task ids; a benchmark adds its tasks' ids, names, amounts, paths."""
        return {f"{g}/{t}": [t] if len(t) >= 3 else [] for g, ids in (config.get("tasks") or {}).items()
                for t in ids}

    # -- exports and commands ---------------------------------------------------------------
    def export(self, fmt: str, store: Any, config: dict, run_dir: Path, *, arm: str | None = None,
               domain: str | None = None, out_path: Path | None = None) -> tuple[int, Path, str]:
        raise ConfigError(f"the {self.kind} benchmark has no export format {fmt!r}")

    def tasks_app(self) -> Any:
        return None

    def audit_command(self) -> Callable[..., Any] | None:
        return None

    def scripted_endpoint(self, **settings: Any) -> Any:
        """A local OpenAI-compatible endpoint whose replies play this benchmark's tasks' reference (τ²:
        the gold conversation of the built-in domains; terminal: each built-in task's solution) — a
        ``FakeEndpoint`` on testing/'s scripted-responder base, not started (``settings``: the fake
        endpoint's, e.g. ``api_key``, ``fault_rate``, ``fault_kinds``, ``seed``). None: it has none."""
        return None

    def demo_setup(self) -> DemoSetup:
        """Where this benchmark's section of ``agentrig demo`` plays on this machine (terminal: the
        sandbox and root that work here); may start what the section will use. Called in a thread
        while the sections before it play. Default: it plays anywhere, with nothing to fill in."""
        return DemoSetup()

    def doctor(self, target: str | None, as_json: bool, console: Any) -> int:
        """``agentrig doctor --bench KIND [TARGET]``: check what this benchmark needs on this machine
        beyond the endpoints (terminal: the sandboxes, TARGET a sandbox kind; AppWorld: its own
        environment and data); print each problem with its fix; 0 when ready."""
        raise ConfigError(f"--bench {self.kind}: the {self.kind} benchmark has nothing of its own to check "
                          "beyond the endpoints (`agentrig doctor --config EXPERIMENT` checks those)")


@dataclass(frozen=True)
class FirstRequest:
    """One arm's agent's first request on one domain's tasks (``Benchmark.first_requests``)."""

    arm: str
    where: str  # e.g. "arm a, domain airline, tool_mode native"
    messages: list[dict]
    tools: list[dict]
    tools_where: str  # e.g. "arm a, domain airline"
    # an agent we did not write (terminal: mini-swe-agent, Codex, Claude Code): its name and version;
    # its request is the real one, as its proxy forwards it (``tool_choice``, ``parallel_tool_calls``
    # as the proxy sends them), or ``problem`` (and ``fix``) says why it could not be had
    agent: str = ""
    tool_choice: Any = None
    parallel_tool_calls: bool | None = None
    problem: str | None = None
    problem_code: str | None = None  # e.g. AGENT_NOT_INSTALLED
    fix: str | None = None


@dataclass(frozen=True)
class DemoSetup:
    """Where a benchmark's section of ``agentrig demo`` plays on this machine (``Benchmark.demo_setup``)."""

    values: dict[str, str] = field(default_factory=dict)  # what its demo experiments are written with
    skip: str | None = None  # why it cannot play here (the demo says so and goes on without it)
    warnings: tuple[str, ...] = ()  # what stands in for what is missing, said before it plays


# ------------------------------------------------------------------------------------ registry


@dataclass
class _Entry:
    settings: str | type[BaseModel]
    implementation: str | type[Benchmark] | None = None
    tables: dict[str, str | type[BaseModel]] = field(default_factory=dict)
    # top-level `agentrig NAME …` command groups of its own: NAME → a typer.Typer (by import path)
    commands: dict[str, str | Any] = field(default_factory=dict)
    # analysis figures of its own (analysis/figure.py), "module:Class", shown for its runs
    figures: tuple[str, ...] = ()
    # the module whose docstring draws its own exception classes, each under a node of errors.py's
    # tree (DataError, InfrastructureFault, Signal…), in that tree's format (tests/test_errors_tree.py)
    exceptions: str | None = None


# kind → where its parts are (imported only when asked for).
_BUILTIN: dict[str, _Entry] = {
    "tau2": _Entry("agentrig.bench.tau.settings:Tau2Settings", "agentrig.bench.tau.benchmark:Tau2Benchmark",
                   {"user": "agentrig.bench.tau.user:UserSettings",
                    "judge": "agentrig.bench.tau.settings:JudgeSettings"},
                   {"data": "agentrig.bench.tau.commands:data_app"},
                   exceptions="agentrig.bench.tau.benchmark"),
    "terminal": _Entry("agentrig.bench.terminal.settings:TerminalSettings",
                       "agentrig.bench.terminal.benchmark:TerminalBenchmark",
                       {"sandbox": "agentrig.bench.terminal.core.base:SandboxSettings"},
                       {"images": "agentrig.bench.terminal.images_cli:app"},
                       exceptions="agentrig.bench.terminal.benchmark"),
    "appworld": _Entry("agentrig.bench.appworld.settings:AppWorldSettings",
                       "agentrig.bench.appworld.benchmark:AppWorldBenchmark",
                       commands={"appworld": "agentrig.bench.appworld.commands:appworld_app"},
                       figures=("agentrig.bench.appworld.goals:GoalCompletion",),
                       exceptions="agentrig.bench.appworld.benchmark"),
}
_REGISTRY: dict[str, _Entry] = dict(_BUILTIN)
_INSTANCES: dict[str, Benchmark] = {}
_listeners: list[Callable[[], None]] = []


def _load(ref: Any) -> Any:
    if not isinstance(ref, str):
        return ref
    module, _, name = ref.partition(":")
    return getattr(importlib.import_module(module), name)


def register(kind: str, implementation: type[Benchmark] | str, *,
             settings: type[BaseModel] | str | None = None,
             tables: dict[str, type[BaseModel] | str] | None = None,
             commands: dict[str, Any] | None = None, exceptions: str | None = None) -> None:
    """Register (or replace) a benchmark. A class gives its own ``settings_model`` and ``tables``.
    ``commands``: its own top-level command groups (name → typer.Typer or its import path), mounted
    by the CLI (``command_groups``) when registered before the CLI is built. ``exceptions``: the
    module whose docstring draws its own exception classes (``exception_trees``)."""
    if settings is None:
        impl = _load(implementation)
        settings, tables = impl.settings_model, dict(impl.tables) if tables is None else tables
    _REGISTRY[kind] = _Entry(settings, implementation, dict(tables or {}), dict(commands or {}),
                             exceptions=exceptions)
    _INSTANCES.pop(kind, None)
    for listener in _listeners:
        listener()


def figure_refs() -> list[str]:
    """Every registered benchmark's own analysis figures ("module:Class"; analysis/figure.py)."""
    return [ref for entry in _REGISTRY.values() for ref in entry.figures]


def exception_trees() -> dict[str, str]:
    """Every registered benchmark's own exception classes: kind → the module whose docstring draws
    them under errors.py's nodes (errors.py draws the rest; tests/test_errors_tree.py reads both)."""
    return {kind: entry.exceptions for kind, entry in _REGISTRY.items() if entry.exceptions}


def command_groups() -> dict[str, Any]:
    """Every registered benchmark's own top-level command groups: name → typer.Typer."""
    out: dict[str, Any] = {}
    for kind, entry in _REGISTRY.items():
        for name, ref in entry.commands.items():
            if name in out:
                raise ConfigError(f"benchmark {kind!r} registers the command {name!r}, which another benchmark has")
            out[name] = _load(ref)
    return out


def unregister(kind: str) -> None:
    """Remove a benchmark registered at run time (built-in kinds are restored, not removed)."""
    if kind in _BUILTIN:
        _REGISTRY[kind] = _BUILTIN[kind]
    else:
        _REGISTRY.pop(kind, None)
    _INSTANCES.pop(kind, None)
    for listener in _listeners:
        listener()


def on_change(listener: Callable[[], None]) -> None:
    """Call ``listener`` whenever the registry changes (caches of models built from it)."""
    _listeners.append(listener)


def known_kinds() -> list[str]:
    """Every kind whose [benchmark] table can be read."""
    return list(_REGISTRY)


def playable_kinds() -> list[str]:
    """The kinds that can be played (a benchmark implementation is registered)."""
    return [k for k, e in _REGISTRY.items() if e.implementation is not None]


def _entry(kind: str) -> _Entry:
    entry = _REGISTRY.get(kind)
    if entry is None:
        raise ConfigError(f"unknown benchmark kind {kind!r}.\n  fix: use one of: {', '.join(known_kinds())}")
    return entry


def settings_model(kind: str) -> type[BaseModel]:
    """The model of the [benchmark] table of ``kind``."""
    return _load(_entry(kind).settings)


def tables(kind: str) -> dict[str, type[BaseModel]]:
    """The other top-level tables of an experiment file that ``kind`` owns (name → model)."""
    return {name: _load(ref) for name, ref in _entry(kind).tables.items()}


def get_benchmark(kind: str) -> Benchmark:
    """The benchmark of ``kind`` (one object per process)."""
    bench = _INSTANCES.get(kind)
    if bench is not None:
        return bench
    entry = _entry(kind)
    if entry.implementation is None:
        raise ConfigError(f"benchmark kind {kind!r} cannot be played by this version of agentrig yet "
                          f"(its [benchmark] table is read, its trials are not).\n"
                          f"  fix: use one of: {', '.join(playable_kinds())}")
    bench = _load(entry.implementation)()
    _INSTANCES[kind] = bench
    return bench


def benchmark_of_config(config: dict) -> Benchmark:
    """The benchmark of a run, from its config snapshot (runs before the seam: τ²)."""
    exp = config.get("experiment") if isinstance(config, dict) else None
    bench = (exp or {}).get("benchmark") if isinstance(exp, dict) else None
    kind = bench.get("kind") if isinstance(bench, dict) else None
    return get_benchmark(kind or DEFAULT_KIND)


# ------------------------------------------------------------------- the default action sequence

Token = tuple[str, str]  # (tool name — "user:" + name for the user's calls — , canonical JSON arguments)
Chain = tuple[Token, ...]

_USER_PREFIX = "user:"


def _canonical(arguments: dict) -> str:
    try:
        return json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError):  # not JSON-serialisable (never from a store): still a token
        return repr(sorted(arguments.items(), key=lambda kv: str(kv[0])))


def chain_of(record: Any) -> Chain:
    """The trial's tool-call chain (after the task's own history), as interned string tokens."""
    traj = record.trajectory
    out: list[Token] = []
    for m in traj.messages[traj.history_len:]:
        if not m.tool_calls or m.role not in ("assistant", "user"):
            continue
        for call in m.tool_calls:
            name = call.name if m.role == "assistant" else _USER_PREFIX + call.name
            args = _canonical(call.arguments) if call.arguments is not None else "!" + call.arguments_raw
            out.append((sys.intern(name), sys.intern(args)))
    return tuple(out)
