"""AppWorld as a ``Benchmark`` (``agentrig/benchmark.py``).

    [benchmark] kind = "appworld", data, dataset, task_ids, num_tasks, python, workers,
                execute_timeout_s, output_limit, random_seed            (settings.AppWorldSettings)

Tasks: one group, ``appworld``; the selected dataset's tasks (``data.py``). Trials: ``episode.play_trial``
in a pooled worker of AppWorld's own environment (``pool.py``, ``env.py``), judged by AppWorld's
``world.evaluate()``. Agents: ``llm`` (our code agent), ``oracle``, ``noop``, ``python`` (a user's own
Python agent: ``python_agent.py``; its settings checked and its entry imported before the run),
``codex`` / ``claude-code`` (Codex CLI, Claude Code: ``cli_agent.py``; installed, or found in the
cache, before the run).

The failure taxonomy reads the failed tests' requirements (AppWorld's own test names): a failed
answer test (AppWorld's ``assert answers match.``) is ``wrong_answer``; a failed "nothing else
changed" test — one about which models changed: AppWorld's ``assert model changes match <models>.``,
``changed_model_names``, "no model other than", "nothing else" — is ``collateral_change``; other
failed tests (a record's content, ``models.changed_records`` counts) ``wrong_state``; plus the
terminations (``never_completed``, limits, format errors, context overflow, timeout). The action
sequence for divergence is the trial's executed code, whitespace-normalised.

Its own exceptions, each under a node of ``agentrig/errors.py``'s tree (drawn as there; this module
is named by ``exceptions=`` in its registry entry, ``agentrig/benchmark.py``, and
``tests/test_errors_tree.py`` reads the drawing):

    InfrastructureFault
    ├── WorkerError         bench/appworld/pool       an AppWorld worker died, hung or garbled its answer
    └── EngineError         bench/appworld/pool       AppWorld's engine failed to open or judge the world
"""

from __future__ import annotations

import asyncio
import re
import sys
from pathlib import Path
from typing import Any

from agentrig.benchmark import Benchmark, Limits, Selection, literal_values, sha
from agentrig.errors import ConfigError

from .settings import AppWorldSettings

GROUP = "appworld"

FAILURE_CLASSES: dict[str, str] = {
    "agent_error": "Agent error (a Python agent raised or its process died)",
    "format_errors": "Format errors",
    "limits_exceeded": "Limits exceeded (steps, cost, tokens)",
    "context_overflow": "Context overflow",
    "agent_timeout": "Trial timeout",
    "never_completed": "Never completed the task",
    "collateral_change": "Collateral change (changed what the task did not ask)",
    "wrong_answer": "Wrong answer",
    "wrong_state": "Wrong end state (a required change missing or wrong)",
    "other": "Other",
}
VIEWER_HINTS: dict[str, Any] = {
    "code_arguments": {"execute": "code"},
    "events": {
        "world.open": {"label": "world opened", "fields": ["seconds", "worker", "worker_trials"]},
        "world.execute": {"label": "code ran", "fields": ["failed", "seconds", "output_chars", "completed"]},
        "world.evaluate": {"label": "AppWorld evaluation", "fields": ["success", "num_tests", "completed", "seconds"],
                           "table": "tests"},
        "agent.stop": {"label": "agent stopped", "fields": ["termination", "detail"]},
        "agent.format_error": {"label": "format error", "fields": ["problem"], "text": "reply"},
    },
}
# A "nothing else changed" test is one about WHICH models changed, not about the records of one: AppWorld's
# real tasks say "assert model changes match <models>." (or "assert no model changes."), and
# "models.changed_model_names" is the call that checks it; "models.changed_records" (one model's added,
# updated, removed records) is a test of the end state. Matched on the requirement with its whitespace
# collapsed, case-insensitively.
_COLLATERAL = re.compile(
    r"changed_model_names"                      # the API that lists the changed models
    r"|\bmodel(?:s)?\s+(?:changes|changed)\b"   # "model changes match …", "no models changed"
    r"|\bchanged\s+models?\b"                   # "the changed models are …"
    r"|\bno\s+(?:other\s+)?models?\b"           # "no model other than … was changed"
    r"|\bother\s+than\b|\bno\s+other\b|\bnothing\s+else\b", re.I)
_ANSWER = re.compile(r"\banswers?\b", re.I)


def task_hash(root: Path, task_id: str) -> str:
    """What makes a task's trials comparable: its specs, its tests and its answer."""
    folder = root / "data" / "tasks" / task_id
    parts = []
    for rel in ("specs.json", "ground_truth/evaluation.py", "ground_truth/test_data.json", "ground_truth/answer.json"):
        p = folder / rel
        parts.append(rel.encode() + b"\0" + (p.read_bytes() if p.is_file() else b"") + b"\0")
    return sha(b"".join(parts))


def classify_failed_tests(names: list[str]) -> list[str]:
    classes = []
    for name in names:
        text = " ".join(name.split())
        c = "collateral_change" if _COLLATERAL.search(text) else "wrong_answer" if _ANSWER.search(text) else "wrong_state"
        if c not in classes:
            classes.append(c)
    return classes


class AppWorldBenchmark(Benchmark):
    kind = "appworld"
    settings_model = AppWorldSettings
    agent_kinds = ("llm", "oracle", "noop", "python", "codex", "claude-code")
    llm_agent = ("llm", "the AppWorld code agent")
    reference_agents = ("oracle", "noop")
    failure_classes = FAILURE_CLASSES
    component_names = ()
    viewer_hints = VIEWER_HINTS
    export_formats = {"appworld": "AppWorld's own evaluation document per arm (task and scenario goal completion, "
                                  "each task's passes and failures), one per rerun"}

    # -- tasks ------------------------------------------------------------------------------
    def select(self, exp: Any, source: Path) -> Selection:
        from .data import load_tasks, resolve_root

        b = exp.benchmark
        root = resolve_root(b.data, source.parent)
        tasks = load_tasks(root, b.dataset, b.task_ids, b.num_tasks)
        if not tasks:
            raise ConfigError(f"{source}: the {b.dataset!r} dataset under {root} selects no task.\n"
                              "  fix: check [benchmark] dataset / task_ids / num_tasks")
        return Selection([(GROUP, t) for t in tasks], root, splits={GROUP: b.dataset})

    def prepare(self, exp: Any, source: Path, selection: Selection) -> None:
        """Install (or find cached) Codex and Claude Code for the arms that play them (a progress line)."""
        from .cli_agent import CLI_KINDS

        if any(arm.agent.kind in CLI_KINDS for arm in exp.arms):
            from agentrig.agents.installed.toolroot import install_arms

            install_arms(exp.arms, CLI_KINDS, progress=lambda line: print(line, file=sys.stderr, flush=True))

    def check(self, exp: Any, source: Path, selection: Selection) -> None:
        from .env import check, resolve_python

        self._check_oracles(exp, source, selection)
        status = check(resolve_python(exp.benchmark.python))
        if not status.ok:
            where = "[benchmark] python" if exp.benchmark.python else "the AppWorld environment"
            raise ConfigError(f"{source}: {where}: {status.problem}.\n  fix: {status.fix}")

    # -- arms -------------------------------------------------------------------------------
    def roles_needed(self, exp: Any, arm: Any, tasks: list[tuple[str, Any]]) -> set[str]:
        if arm.agent.kind == "python":  # a Python agent's model calls go through its proxy to [roles.agent]
            return {"agent"}
        return super().roles_needed(exp, arm, tasks)

    def role_reason(self, exp: Any, role: str, arm: Any, tasks: list[tuple[str, Any]]) -> tuple[str, str]:
        if role == "agent" and arm.agent.kind == "python":
            return ("its agent kind is 'python' (your agent's model calls go through the trial's proxy to [roles.agent])",
                    "set `model` in [roles.agent] (or [channel]), or use a reference agent (kind = \"oracle\" / \"noop\")")
        return super().role_reason(exp, role, arm, tasks)

    def check_arm(self, exp: Any, where: str, arm: Any, tasks: list[tuple[str, Any]]) -> None:
        super().check_arm(exp, where, arm, tasks)
        from agentrig.agents.base import CONVERSATION_KINDS
        from agentrig.agents.installed.cli_trial import check_conversation_settings
        from agentrig.agents.python_agent import check_agent

        check_agent(arm.agent, where, exp, arm)
        if arm.agent.kind in CONVERSATION_KINDS:
            check_conversation_settings(arm.agent, where)

    @staticmethod
    def _check_oracles(exp: Any, source: Path, selection: Selection) -> None:
        """An ``oracle`` arm plays each task's ground-truth solution; AppWorld ships none for its test
        sets, and there the oracle would store valid reward-0 trials that count in pass^k: refused."""
        from .data import SOLUTION_FILES, solution_code

        oracles = [a.name for a in exp.arms if a.agent.kind == "oracle"]
        if not oracles:
            return
        root = Path(selection.data_root)
        ids = [t.id for _, t in selection.tasks]
        without = [t for t in ids if solution_code(root, t) is None]
        if without:
            b = exp.benchmark
            shown = ", ".join(without[:5]) + (f" … ({len(without)} in all)" if len(without) > 5 else "")
            raise ConfigError(
                f"{source}: arm {oracles[0]!r} (agent kind \"oracle\") plays each task's ground-truth solution, but "
                f"{len(without)} of the {len(ids)} selected task(s) of the {b.dataset!r} split ship none "
                f"({shown}: no ground_truth/{' or '.join(SOLUTION_FILES)} defining solution()); AppWorld ships "
                "solutions for train and dev only, and the oracle's trials there would all score 0.\n"
                f"  fix: play the oracle on the train or dev split (dataset = \"dev\"), or remove the arm "
                f"(`agentrig audit --bench appworld --dataset {b.dataset}` shows which tasks have a solution)")

    # -- runs -------------------------------------------------------------------------------
    def comparability(self, r: Any) -> dict[str, Any]:
        b = r.exp.benchmark
        return {"appworld": {"dataset": b.dataset, "execute_timeout_s": b.execute_timeout_s,
                             "output_limit": b.output_limit, "random_seed": b.random_seed},
                "tasks": {f"{g}/{t.id}": task_hash(Path(r.data_root), t.id) for g, t in r.tasks}}

    def _run(self, r: Any) -> Any:
        run = r.cache.get("appworld.run")
        if run is None:
            from .env import resolve_python
            from .episode import AppWorldRun
            from .pool import get_pool

            b = r.exp.benchmark
            pool = get_pool(resolve_python(b.python), Path(r.data_root), b.workers)
            run = r.cache["appworld.run"] = AppWorldRun(pool, Path(r.data_root), b.execute_timeout_s, b.output_limit,
                                                         b.random_seed, b.worker_grace_s)
        return run

    async def play(self, r: Any, ctx: Any, arm: Any, limits: Limits, attempt: int = 0) -> Any:
        from .episode import play_trial

        return await play_trial(ctx, ctx.task, agent=arm.agent, run=self._run(r), limits=limits, attempt=attempt,
                                plugins=arm.plugins)

    def first_requests(self, r: Any) -> list[Any]:
        """Each LLM arm's first request as a trial makes it: the code agent's system prompt (its tool
        mode's rules and the limits), the task prompt of the selected task with the longest
        instruction, and the ``execute`` tool in native mode. A Python agent's arm: the request it
        really sends first on the first task, against a stub (``first_request.py``)."""
        from agentrig.benchmark import FirstRequest

        from . import prompts as texts

        if not r.tasks:
            return []
        task = max((t for _, t in r.tasks), key=lambda t: len(t.instruction))
        b = r.exp.benchmark
        out = []
        for arm in r.arms:
            if arm.agent.kind == "python":  # the request it really sends first (first_request.py)
                from concurrent.futures import ThreadPoolExecutor

                from .first_request import first_request

                with ThreadPoolExecutor(1) as pool:  # its own loop, whether or not one runs here
                    out.append(pool.submit(asyncio.run, first_request(r, self, arm)).result())
                continue
            if arm.agent.kind != "llm":
                continue
            a = arm.agent
            text_mode = a.tool_mode == "text"
            limits = texts.limits_text(step_limit=a.step_limit, execution_limit=r.exp.run.max_steps,
                                       cost_limit=a.cost_limit, output_limit=b.output_limit,
                                       execute_timeout_s=b.execute_timeout_s)
            system = texts.system_prompt(texts.preamble(a.prompt), text_mode=text_mode, limits=limits)
            out.append(FirstRequest(arm=arm.name, where=f"arm {arm.name}, task {task.id}, tool_mode {a.tool_mode}",
                                    messages=[{"role": "system", "content": system},
                                              {"role": "user", "content": texts.task_prompt(task)}],
                                    tools=[] if text_mode else [texts.EXECUTE_TOOL], tools_where=f"arm {arm.name}"))
        return out

    def warm(self, r: Any) -> None:
        """Start one worker and open the first selected task's world in it (the cold open, ~2–3 s:
        AppWorld loading its models and API docs), so that the first trial starts warm."""
        import json as _json

        from .pool import WorkerError

        run = self._run(r)
        try:
            if run.pool.prestart(1) and r.tasks:
                worker = run.pool.idle[-1]
                line = _json.dumps({"id": 0, "op": "open", "task_id": r.tasks[0][1].id}) + "\n"
                worker._roundtrip(line.encode(), 300.0, "open")
        except (WorkerError, OSError, TimeoutError):
            pass  # the trial's own lease starts a fresh worker and reports what fails

    def smoke_transcript(self, record: Any) -> list[tuple[str, str]]:
        from .smoke import transcript

        return transcript(record)

    def smoke_problem(self, record: Any) -> str | None:
        from .smoke import problem

        return problem(record)

    def worker_data(self, r: Any) -> list[Path]:
        data = Path(r.data_root) / "data"
        return [data / "base_dbs", data / "api_docs", data / "datasets",
                *[data / "tasks" / t.id for _, t in r.tasks]]

    def relocate(self, r: Any, root: Path) -> None:
        r.data_root = root
        r.cache.pop("appworld.run", None)

    # -- analysis ---------------------------------------------------------------------------
    def classify(self, record: Any, context: Any) -> Any:
        from agentrig.types import FailureLabel

        v = record.verdict
        info = v.reward_info
        failed_tests = [c.split("::", 1)[1] for c, x in (info.components if info else {}).items()
                        if "::" in c and x is not None and x < 1]
        classes: list[str] = []
        evidence: dict[str, list[str]] = {}
        if v.termination in FAILURE_CLASSES:
            classes.append(v.termination)
            evidence[v.termination] = [f"the agent phase ended with {v.termination}"]
        for c in classify_failed_tests(failed_tests):
            classes.append(c)
            evidence[c] = [n for n in failed_tests if c == classify_failed_tests([n])[0]][:10]
        if not classes:
            classes, evidence = ["other"], {"other": [f"termination {v.termination}"]}
        order = list(FAILURE_CLASSES)
        classes = sorted(dict.fromkeys(classes), key=order.index)
        return FailureLabel(primary=classes[0], secondary=classes[1:], classes=classes,
                            components=[c for c in (info.components if info else {}) if "::" in c
                                        and (info.components[c] or 0) < 1],
                            termination=v.termination, evidence=evidence)

    def action_sequence(self, record: Any) -> tuple:
        out = []
        for e in record.trajectory.events:
            if e.plugin == "world" and e.kind == "execute":
                out.append(("execute", sys.intern(" ".join(str(e.data.get("code", "")).split()))))
        return tuple(out)

    def task_values(self, config: dict) -> dict[str, list[str]]:
        from .data import load_task

        wanted = list((config.get("tasks") or {}).get(GROUP) or [])
        root = config.get("data_root")
        if not wanted or not root:
            return super().task_values(config)
        out: dict[str, list[str]] = {}
        for task_id in wanted:
            try:
                task = load_task(Path(root), task_id)
            except Exception:  # noqa: BLE001 - a task gone from the data: its id only
                out[f"{GROUP}/{task_id}"] = [task_id]
                continue
            values = {task_id} | literal_values(task.instruction, prose=True)
            values |= {v for v in task.supervisor.values() if len(v) >= 3}
            out[f"{GROUP}/{task_id}"] = sorted(values)
        return out

    # -- exports and commands ---------------------------------------------------------------
    def export(self, fmt: str, store: Any, config: dict, run_dir: Path, *, arm: str | None = None,
               domain: str | None = None, out_path: Path | None = None) -> tuple[int, Path, str]:
        if fmt not in self.export_formats:
            return super().export(fmt, store, config, run_dir, arm=arm, domain=domain, out_path=out_path)
        from .export import export_run

        return export_run(store, config, run_dir, arm=arm, out_path=out_path)

    def tasks_app(self) -> Any:
        from .commands import tasks_app

        return tasks_app

    def audit_command(self) -> Any:
        from .commands import audit_command

        return audit_command

    def doctor(self, target: str | None, as_json: bool, console: Any) -> int:
        """``agentrig doctor --bench appworld``: AppWorld's own environment, its data, a world opened."""
        from .commands import doctor

        return doctor(None, None, as_json, console)
