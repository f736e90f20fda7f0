"""Terminal tasks as a ``Benchmark`` (``benchmark.py``): Terminal-Bench 1 and Harbor task directories.

    [benchmark] kind = "terminal", tasks, task_ids, num_tasks, skip_invalid   (settings.TerminalSettings)
    [sandbox]   kind, keep, network, memory_mb, pids, cpus, shell, output_limit, …  (core.base.SandboxSettings)

Selection (``select``): the tasks of ``tasks`` (default: the built-in tasks), then every task the
chosen sandbox cannot run is **excluded before the run**, with its reason, and never played:
``needs_container`` (a Dockerfile outside the subset bwrap replays, a prebuilt image; under
``local`` without root also any ``RUN`` step), ``needs_network`` (tests that fetch from the
network in a sandbox without it), ``needs_services`` (a compose file with services beside the
agent's), ``missing_files`` (Git LFS pointers instead of the task's files), ``unsupported`` (a ``parser_name``
none of Terminal-Bench's parsers has: nothing could judge its output), ``invalid`` (a malformed task skipped with
``skip_invalid``), and ``broken_task`` — under ``bwrap`` the selected tasks' layers are built
(once, cached by content hash: the trials reuse them) and a task whose own build fails is left
out with the failing step's output. Excluded tasks are printed before the run, stored in
``config.json`` (``excluded``) and shown by ``agentrig tasks list --bench terminal``.

Trials: ``episode.play_trial`` (agent phase in the sandbox, then the verifier). Tasks are one group,
``terminal``. Comparability: a hash of each task directory's files, and the ``[sandbox]`` settings
that change what a trial sees (not ``keep``, ``cache_dir``, ``bwrap_path``, ``build_timeout_s``,
``warm_verifier``; ``build_network = "auto"`` compared as ``true``, its default before: ``compared_sandbox``).
The failure taxonomy is ``FAILURE_CLASSES`` (the verifier's failure modes, plus ``broken_task`` and
``excluded``); the action sequence for divergence is the trial's commands, whitespace-normalised.
``agentrig tasks list|show --bench terminal`` and ``agentrig audit --bench terminal`` are in
``commands.py``.

Its own exceptions, each under a node of ``agentrig/errors.py``'s tree (drawn as there; this module
is named by ``exceptions=`` in its registry entry, ``agentrig/benchmark.py``, and
``tests/test_errors_tree.py`` reads the drawing):

    DataError
    ├── TaskFileError       bench/terminal/tasks/taskfile a malformed terminal task (file, field, problem, fix)
    ├── ComposeError (ValueError) bench/terminal/tasks/compose  a terminal task's compose file that cannot be
    │                                                 read (names the file and why)
    └── TaskBuildError      bench/terminal/core/base  a terminal task's own build fails deterministically:
                                                      its trials are valid and score 0 (``broken_task``), or
                                                      it is excluded (``needs_network`` / ``needs_container``)
    InfrastructureFault
    └── SandboxError        bench/terminal/core/base  the sandbox could not start or was killed, or a build
                                                      failed for a reason not the task's (no bwrap, no disk)
    Signal
    └── ParseError (ValueError) bench/terminal/tasks/parsers  the verifier's output is unreadable: the trial is
                                                      valid, failure mode ``parse_error``
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from pathlib import Path
from typing import Any

from agentrig.analysis.shell_tools import code_arguments
from agentrig.benchmark import SETTLES, Benchmark, Limits, Selection, sha
from agentrig.errors import ConfigError, DataError

from .availability import bwrap_problem, build_check, task_support, warn_local_once
from .core.base import SandboxSettings
from .settings import TerminalSettings, rel_path as _rel, sandbox_settings

GROUP = "terminal"

# the taxonomy, in precedence order (the first matching class is the primary one)
FAILURE_CLASSES: dict[str, str] = {
    "broken_task": "Broken task (its own build fails)",
    "excluded": "Not runnable in this sandbox",
    "broke_environment": "Broke the environment (the tests could not start)",
    "test_timeout": "Tests timed out",
    "parse_error": "Test output unreadable",
    "agent_timeout": "Agent timeout",
    "format_errors": "Format errors",
    "limits_exceeded": "Limits exceeded (steps, cost, tokens)",
    "context_overflow": "Context overflow",
    "never_submitted": "Never submitted",
    "wrong_output": "Wrong output (tests failed)",
    "other": "Other",
}
# how the report's trajectory viewer shows a terminal trial (benchmark.py VIEWER_HINTS)
VIEWER_HINTS: dict[str, Any] = {
    "code_arguments": code_arguments(),  # bash, and the installed agents' shell tools (exec_command, Bash…)
    "events": {
        "sandbox.command": {"label": "command ran", "fields": ["exit_code", "timed_out", "duration_s"]},
        "verifier.result": {"label": "verifier", "fields": ["resolved", "reward", "failure_mode", "exit_code",
                                                             "timed_out", "duration_s"],
                            "table": "tests", "text": "output"},
        "agent.submit": {"label": "submission", "text": "submission"},
        "agent.stop": {"label": "agent stopped", "fields": ["termination", "detail"]},
        "agent.format_error": {"label": "format error", "fields": ["problem"], "text": "reply"},
        "agent.record": {"label": "agent's own record", "fields": ["agent", "steps", "commands", "finished", "exit_status"]},
        "agent.record_unreadable": {"label": "agent's record unreadable", "fields": ["agent", "file", "reason"]},
        "agent.record_unmatched": {"label": "record results no reply asked for", "fields": ["agent", "results"]},
    },
}
# [sandbox] fields that do not change what a trial sees (left out of comparability)
_NOT_COMPARED = {"keep", "cache_dir", "bwrap_path", "build_timeout_s", "warm_verifier"}


def compared_sandbox(sb: SandboxSettings) -> dict[str, Any]:
    """The [sandbox] settings the comparability snapshot holds. ``build_network = "auto"`` (the
    default since issue 33) is compared as ``true``, the default before it: either way the builds
    have the network, and which of the host's settings carry it leaves the image unchanged — so a
    run stored under the old default still resumes and compares equal."""
    out = sb.model_dump(mode="json", exclude=_NOT_COMPARED)
    if out.get("build_network") == "auto":
        out["build_network"] = True
    return out


def run_sync(coro: Any) -> Any:
    """Run a coroutine to its end from synchronous code (in a thread when a loop is running here)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = asyncio.run(coro)
        except BaseException as exc:  # noqa: BLE001 - handed back to the caller
            box["error"] = exc

    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


def _none_runs(source: Path, kind: str, excluded: dict[str, str]) -> None:
    shown = "; ".join(f"{k}: {v.splitlines()[0]}" for k, v in list(excluded.items())[:5])
    raise ConfigError(f"{source}: no selected task can run in the {kind} sandbox ({shown}).\n"
                      "  fix: choose other tasks, or another [sandbox] kind (see `agentrig tasks list --bench terminal`)")


def task_dir_hash(path: Path) -> str:
    """A hash of every file under a task directory (relative names and bytes)."""
    parts: list[bytes] = []
    for f in sorted(p for p in Path(path).rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        parts.append(str(f.relative_to(path)).encode() + b"\0" + f.read_bytes() + b"\0")
    return sha(b"".join(parts))


class TerminalBenchmark(Benchmark):
    kind = "terminal"
    settings_model = TerminalSettings
    tables = {"sandbox": SandboxSettings}
    agent_kinds = ("bash", "oracle", "flaky-oracle", "noop", "mini-swe-agent", "codex", "claude-code", "command", "python")
    llm_agent = ("bash", "the LLM bash agent")
    reference_agents = ("oracle", "noop")
    failure_classes = FAILURE_CLASSES
    component_names = ()  # one component per test, as each verdict names them
    viewer_hints = VIEWER_HINTS
    export_formats = {"terminal-bench": "a Terminal-Bench run directory per arm (results.json, tb.lock, a folder per trial)",
                      "mini-swe-agent": "per trial a mini-SWE-agent trajectory file (info, messages)",
                      "atif": "per trial a trajectory in Harbor's ATIF (steps, tool calls, observations, metrics)"}

    def roles_needed(self, exp: Any, arm: Any, tasks: list[tuple[str, Any]]) -> set[str]:
        """``agent`` for the bash agent and for every agent we did not write (through its proxy)."""
        from .installed import EXTERNAL_KINDS

        return {"agent"} if arm.agent.kind in ("bash", "python", *EXTERNAL_KINDS) else set()

    def role_reason(self, exp: Any, role: str, arm: Any, tasks: list[tuple[str, Any]]) -> tuple[str, str]:
        from .installed import EXTERNAL_KINDS

        if role == "agent" and arm.agent.kind in EXTERNAL_KINDS:
            return (f"its agent kind is '{arm.agent.kind}' (its model calls go through the trial's proxy to [roles.agent])",
                    "set `model` in [roles.agent] (or [channel])")
        if role == "agent" and arm.agent.kind == "python":
            return ("its agent kind is 'python' (your agent's model calls go through the trial's proxy to [roles.agent])",
                    "set `model` in [roles.agent] (or [channel])")
        return super().role_reason(exp, role, arm, tasks)

    def check_arm(self, exp: Any, where: str, arm: Any, tasks: list[tuple[str, Any]]) -> None:
        super().check_arm(exp, where, arm, tasks)
        from agentrig.agents.python_agent import check_agent

        from .installed import EXTERNAL_KINDS, check_settings

        check_agent(arm.agent, where, exp, arm)
        if arm.agent.kind in EXTERNAL_KINDS:
            check_settings(arm.agent, where)
            if exp.sandbox.kind == "local":
                raise ConfigError(f"{where}: agent kind {arm.agent.kind!r} runs inside the task's sandbox, which "
                                  "[sandbox] kind = \"local\" does not have.\n  fix: use [sandbox] kind = \"bwrap\", "
                                  "\"podman\" or \"docker\"")

    # -- tasks ------------------------------------------------------------------------------
    def tasks_root(self, exp: Any, source: Path) -> Path:
        from .tasks.taskfile import builtin_tasks_dir

        return _rel(source, exp.benchmark.tasks) if exp.benchmark.tasks else builtin_tasks_dir()

    def select(self, exp: Any, source: Path) -> Selection:
        from .tasks.taskfile import load_tasks

        b = exp.benchmark
        root = self.tasks_root(exp, source)
        tasks, invalid = load_tasks(root, task_ids=b.task_ids, num_tasks=b.num_tasks, skip_invalid=b.skip_invalid)
        sb = sandbox_settings(exp, source)
        if sb.kind == "local":
            warn_local_once()
        excluded = {f"{GROUP}/{bad.task_id}": f"invalid: {bad.file}: {bad.field}: {bad.problem}" for bad in invalid}
        runnable = []
        for task in tasks:
            found = task_support(task, sb.kind, sb.network)
            if found.ok:
                runnable.append(task)
            else:
                excluded[f"{GROUP}/{task.id}"] = found.reason or "cannot run in this sandbox"
        if sb.kind == "bwrap" and runnable:
            problem = bwrap_problem(sb)
            if problem:
                raise ConfigError(f"{source}: [sandbox] kind = \"bwrap\"{' (the default)' if 'kind' not in exp.sandbox.model_fields_set else ''} "
                                  f"cannot run here: {problem}.\n  fix: see `agentrig doctor --sandbox`; "
                                  "or set [sandbox] kind = \"docker\" / \"podman\" (docker: its daemon must answer; podman: `podman info` must) or \"local\" (no isolation)")
        if sb.kind in ("docker", "podman") and runnable:
            from .sandbox.docker import engine_problem

            problem = run_sync(engine_problem(sb.kind))
            if problem:
                raise ConfigError(f"{source}: [sandbox] kind = \"{sb.kind}\" cannot run here: {problem}.\n"
                                  "  fix: start the daemon (see `agentrig doctor --sandbox`), or use [sandbox] kind = \"bwrap\"")
        if not runnable:
            _none_runs(source, sb.kind, excluded)
        return Selection([(GROUP, t) for t in runnable], root, excluded=excluded)

    def prepare(self, exp: Any, source: Path, selection: Selection) -> None:
        """Under bwrap, build (or find cached) every selected task's layers — its base image and
        its own steps — before the run: a task whose own build fails is excluded (``broken_task``).
        ``run --smoke``/``--estimate`` skip this: their one trial builds what it plays."""
        from .sandbox import SandboxError

        _install_agents(exp)
        sb = sandbox_settings(exp, source)
        if sb.kind != "bwrap" or not selection.tasks:
            return
        try:
            broken = run_sync(build_check([t for _, t in selection.tasks], sb))
        except SandboxError as exc:
            raise ConfigError(f"{source}: the bwrap sandbox could not build the tasks' layers: {exc}\n"
                              "  fix: check the sandbox with `agentrig doctor --sandbox bwrap`") from None
        for task_id, why in broken.items():
            selection.excluded[f"{GROUP}/{task_id}"] = why
        selection.tasks = [(g, t) for g, t in selection.tasks if t.id not in broken]
        if not selection.tasks:
            _none_runs(source, sb.kind, selection.excluded)
        if getattr(exp.run, "executor", "local") != "ray":  # trials play in this process: its helpers start
            from .sandbox import spawner, warm  # now, their start-up beside the run's own (the channel's SDK)

            with contextlib.suppress(SandboxError):  # a trial's own start says why
                spawner.prestart()
            if sb.warm_verifier:
                warm.prestart()

    # -- runs -------------------------------------------------------------------------------
    def comparability(self, r: Any) -> dict[str, Any]:
        sb = sandbox_settings(r.exp, r.source)
        return {
            "terminal": {"command_timeout_s": r.exp.benchmark.command_timeout_s},
            "sandbox": compared_sandbox(sb),
            "tasks": {f"{g}/{t.id}": task_dir_hash(t.path) for g, t in r.tasks},
        }

    async def play(self, r: Any, ctx: Any, arm: Any, limits: Limits, attempt: int = 0) -> Any:
        from .episode import play_trial

        sb = r.cache.get("terminal.sandbox")
        if sb is None:
            sb = r.cache["terminal.sandbox"] = sandbox_settings(r.exp, r.source)
        return await play_trial(ctx, ctx.task, agent=arm.agent, sandbox=sb, limits=limits, attempt=attempt,
                                command_timeout_s=r.exp.benchmark.command_timeout_s, plugins=arm.plugins,
                                # under the local executor the next trial starts while this one's
                                # sandbox goes (``settle`` waits for it); elsewhere a trial removes its own
                                detach_close=SETTLES.get())

    async def settle(self) -> None:
        """Wait until the sandboxes of the trials that returned are removed (``episode.settle``)."""
        from .episode import settle

        await settle()

    def worker_data(self, r: Any) -> list[Path]:
        """Each selected task's directory (task file, Dockerfile and its context, tests, solution)."""
        return [t.path for _, t in r.tasks]

    def relocate(self, r: Any, root: Path) -> None:
        """The tasks' paths moved under ``root``; the sandbox's ``cache_dir`` kept when this node can
        write it, else this node's default cache (layers are built there when missing)."""
        old = Path(r.data_root)

        def moved(p: Path | None) -> Path | None:
            return None if p is None else root / Path(p).relative_to(old)

        fields = ("path", "dockerfile", "compose", "solution_script", "tests_dir", "run_tests")
        r.tasks = [(g, t.model_copy(update={f: moved(getattr(t, f)) for f in fields})) for g, t in r.tasks]
        r.data_root = root
        sb = sandbox_settings(r.exp, r.source)
        if sb.cache_dir is not None:
            try:
                Path(sb.cache_dir).mkdir(parents=True, exist_ok=True)
                usable = os.access(sb.cache_dir, os.W_OK | os.X_OK)
            except OSError:
                usable = False
            if not usable:
                sb = sb.model_copy(update={"cache_dir": None})
        r.cache["terminal.sandbox"] = sb

    def smoke_task(self, r: Any) -> tuple[str, Any]:
        """The smallest built-in task (write-marker), selected or not, when the sandbox can run it."""
        from .smoke import smoke_task

        sb = sandbox_settings(r.exp, r.source)
        return smoke_task(r, GROUP, lambda task: task_support(task, sb.kind, sb.network).ok)

    def smoke_transcript(self, record: Any) -> list[tuple[str, str]]:
        """Thought, action, observation … of the smoke trial (``smoke.transcript``)."""
        from .smoke import transcript

        return transcript(record)

    def smoke_problem(self, record: Any) -> str | None:
        from .smoke import problem

        return problem(record)

    # -- analysis ---------------------------------------------------------------------------
    def classify(self, record: Any, context: Any) -> Any:
        from agentrig.types import FailureLabel

        from .verifier import EXCLUDED_MODES

        v = record.verdict
        info = v.reward_info
        notes = info.notes if info is not None else {}
        mode = notes.get("failure_mode") or v.termination
        if mode in EXCLUDED_MODES:
            mode = "excluded"
        primary = mode if mode in FAILURE_CLASSES else "other"
        classes = [primary]
        evidence: dict[str, list[str]] = {primary: [notes.get("detail") or f"termination {v.termination}"]}
        if v.termination in FAILURE_CLASSES and v.termination not in classes:
            classes.append(v.termination)
            evidence[v.termination] = [f"the agent phase ended with {v.termination}"]
        failing = [name for name, value in (info.components if info else {}).items() if value is not None and value < 1]
        if failing and "wrong_output" not in classes:
            classes.append("wrong_output")
        if failing:
            evidence.setdefault("wrong_output", []).append("failed: " + ", ".join(failing[:10]))
        order = list(FAILURE_CLASSES)
        secondary = sorted((c for c in classes if c != primary), key=order.index)
        return FailureLabel(primary=primary, secondary=secondary, classes=[primary, *secondary], components=failing,
                            termination=v.termination, evidence=evidence)

    def task_values(self, config: dict) -> dict[str, list[str]]:
        """Per task: its id, the quoted phrases, paths and numbers of its instruction, and the
        paths and numbers of its solution (steps or script) — not the shared working directory."""
        from agentrig.benchmark import literal_values
        from agentrig.errors import AgentrigError

        from .tasks.taskfile import load_tasks

        wanted = list((config.get("tasks") or {}).get(GROUP) or [])
        root = config.get("data_root")
        if not wanted or not root:
            return super().task_values(config)
        try:
            tasks, _ = load_tasks(Path(root), task_ids=wanted, skip_invalid=True)
        except AgentrigError as exc:
            raise DataError(f"the terminal tasks under {root} cannot be loaded ({exc})") from None
        out: dict[str, list[str]] = {}
        for task in tasks:
            values = {task.id} | literal_values(task.instruction, prose=True)
            for step in task.solution or []:
                values |= literal_values(step.command, prose=True, quoted=False)
            script = task.solution_script
            if script is not None and script.is_file() and script.stat().st_size <= 65536:
                values |= literal_values(script.read_text(encoding="utf-8", errors="replace"), prose=True, quoted=False)
            values = {v for v in values if v.rstrip("/") != task.workdir.rstrip("/") and not v.startswith("#!")}
            out[f"{GROUP}/{task.id}"] = sorted(values)
        return out

    def action_sequence(self, record: Any) -> tuple:
        """The trial's commands (whitespace-normalised), from its ``sandbox``/``command`` events."""
        import sys

        out = []
        for e in record.trajectory.events:
            if e.plugin == "sandbox" and e.kind == "command":
                out.append(("bash", sys.intern(" ".join(str(e.data.get("command", "")).split()))))
        return tuple(out)

    # -- exports and commands ---------------------------------------------------------------
    def export(self, fmt: str, store: Any, config: dict, run_dir: Path, *, arm: str | None = None,
               domain: str | None = None, out_path: Path | None = None) -> tuple[int, Path, str]:
        if fmt not in self.export_formats:
            return super().export(fmt, store, config, run_dir, arm=arm, domain=domain, out_path=out_path)
        from .export import export_run

        return export_run(fmt, store, config, run_dir, arm=arm, out_path=out_path)

    def first_requests(self, r: Any) -> list[Any] | None:
        """For each arm whose agent is mini-swe-agent, Codex or Claude Code: the request that agent
        really sends first, as its proxy forwards it (the installed agent run once on this host:
        ``first_request.py``). None when no arm has one (the doctor uses a representative request)."""
        from .installed import INSTALLED_KINDS

        arms = [arm for arm in r.arms if arm.agent.kind in INSTALLED_KINDS]
        if not arms:
            return None
        from dataclasses import replace

        from .first_request import first_request

        out, made = [], {}
        for arm in arms:  # arms with the same agent settings and model: the agent is run once
            model = arm.channel.resolve("agent", env={}).model or ""
            key = (arm.agent.model_dump_json(), model)
            if key not in made:
                made[key] = run_sync(first_request(arm.name, arm.agent, model))
            req = made[key]
            out.append(replace(req, arm=arm.name, where=f"arm {arm.name}", tools_where=f"arm {arm.name}"))
        return out

    def tasks_app(self) -> Any:
        from .commands import tasks_app

        return tasks_app

    def audit_command(self) -> Any:
        from .commands import audit_command

        return audit_command

    def scripted_endpoint(self, **settings: Any) -> Any:
        """The solution endpoint (``scripted/solution_endpoint.py``) over the built-in tasks."""
        from .scripted.solution_endpoint import SolutionEndpoint

        return SolutionEndpoint(**settings)

    def demo_setup(self) -> Any:
        """The sandbox and root of the demo's terminal runs (``demo.py``)."""
        from .demo import demo_setup

        return demo_setup()

    def doctor(self, target: str | None, as_json: bool, console: Any) -> int:
        """``agentrig doctor --sandbox [KIND]`` (or ``--bench terminal [KIND]``): what each sandbox kind
        can do on this machine."""
        from .commands import sandbox_doctor

        return sandbox_doctor(target, as_json)


def _install_agents(exp: Any) -> None:
    """Install (or find cached) the tool root of every arm's installed agent before the run, with a
    progress line; a failed install is a ConfigError naming the arm's agent."""
    import sys

    from agentrig.agents.installed.toolroot import install_arms

    from .installed import INSTALLED_KINDS

    install_arms(exp.arms, INSTALLED_KINDS, progress=lambda line: print(line, file=sys.stderr, flush=True))
