"""The AppWorld episode: one trial — a world opened in a pooled worker, the agent's code run in it,
AppWorld's own ``world.evaluate()`` as the verdict.

    play_trial(ctx, task, agent=…, run=AppWorldRun, limits=…)  →  TrialRecord

1. **World.** A worker is leased from the pool (``pool.py``) and opens the task's world (a fresh
   world per trial: opening it resets it). ``world``/``open`` event: the seconds it took, the worker.
2. **Agent phase.** The arm's agent (``agent.CodeAgent`` for ``kind = "llm"``, a user's Python agent
   for ``kind = "python"`` — ``python_agent.py``, its process ended by its ``aclose()`` when the
   phase ends however it ends —, or a reference agent: ``oracle`` plays the task's solution,
   ``noop`` does nothing) runs code through the session until
   the world reports the task complete (``apis.supervisor.complete_task``), a limit ends it, or the
   run's ``trial_timeout_s`` is up (``agent_timeout``). Each execution is one step of the run's
   ``max_steps`` and a ``world``/``execute`` event (the code, failed or not, seconds).
3. **Evaluation** — whatever ended the phase — by AppWorld's ``world.evaluate()`` in the same
   worker. The ``Verdict``: reward 1 when every test passed (AppWorld's task success), each test a
   component ``"<task id>::<requirement>"`` (1/0), ``task_goal_completion`` beside them, notes with
   the failed tests; a ``world``/``evaluate`` event with the tests, labels and traces.

Terminations: ``completed``, ``never_completed`` (the agent stopped without completing),
``limits_exceeded``, ``format_errors``, ``context_overflow``, ``agent_timeout``, ``agent_error`` (a
Python agent's own failure).

Infrastructure faults make the trial **invalid** and the executor replays it: the worker died,
hung (a request outlived its timeout: it is killed) or garbled its answer (``WorkerError``), or
the engine failed to open or evaluate the world (``EngineError``); a model call whose retries are
exhausted (``channel_error``). A ``FatalChannelError`` propagates.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentrig.agents.base import AgentSettings, AgentStop
from agentrig.benchmark import Limits
from agentrig.trial.envelope import Fault, agent_phase, play_in_envelope
from agentrig.types import Message, RewardInfo, TrialRecord, Verdict

from . import prompts as texts
from .data import AppWorldTask
from .pool import EngineError, WorkerError, WorkerPool

CODE_EVENT_CHARS = 4000
OPEN_TIMEOUT_S = 120.0
EVAL_TIMEOUT_S = 300.0
MARGIN_S = 30.0  # default [benchmark] worker_grace_s: beyond AppWorld's own execution timeout, a worker is hung
TGC = "task_goal_completion"


@dataclass
class AppWorldRun:
    """What every trial of a run shares: the pool, the data root, the [benchmark] settings."""

    pool: WorkerPool
    data_root: Path
    execute_timeout_s: int = 100
    output_limit: int = 20000
    random_seed: int = 100
    grace_s: float = MARGIN_S


@dataclass
class ExecResult:
    output: str
    failed: bool
    omitted_chars: int = 0
    seconds: float = 0.0


@dataclass
class SessionSettings:
    agent: AgentSettings
    limits: Limits
    execute_timeout_s: int
    output_limit: int
    grace_s: float = MARGIN_S


def clip(text: str, limit: int) -> tuple[str, int]:
    """Head and tail of ``text`` within ``limit`` characters, and how many were left out."""
    if len(text) <= limit:
        return text, 0
    head = limit * 2 // 3
    tail = limit - head
    return text[:head] + "\n[...]\n" + text[len(text) - tail:], len(text) - head - tail


@dataclass
class AppWorldSession:
    """What an AppWorld agent sees of its trial: the task, the trajectory, and the world."""

    ctx: Any
    task: AppWorldTask
    worker: Any
    settings: SessionSettings
    plugins: list[Any] = field(default_factory=list)
    steps: int = 0
    completed: bool = False

    def add(self, message: Message) -> Message:
        msgs = self.ctx.trajectory.messages
        message.turn = len(msgs)
        message.t = round(self.ctx.elapsed(), 6)
        msgs.append(message)
        return message

    async def execute(self, code: str) -> ExecResult:
        """Run code in the world. ``AgentStop("limits_exceeded")`` past ``max_steps`` executions;
        a ``WorkerError`` propagates (the trial is invalid)."""
        limits = self.settings.limits
        if self.steps >= limits.max_steps:
            raise AgentStop("limits_exceeded", f"the step limit ({limits.max_steps} executions, [run] max_steps) was reached")
        self.steps += 1
        self.ctx.trajectory.bump("executions")
        answer = await self.worker.call("execute", code=code,
                                        timeout_s=self.settings.execute_timeout_s + self.settings.grace_s)
        output = str(answer.get("output", ""))
        failed = output.lstrip().startswith(texts.FAILED)
        done = await self.worker.call("completed", timeout_s=self.settings.grace_s)
        self.completed = bool(done.get("completed"))
        shown, omitted = clip(output, self.settings.output_limit)
        self.ctx.event("world", "execute", code=code[:CODE_EVENT_CHARS], failed=failed,
                       seconds=answer.get("exec_s"), output_chars=len(output), completed=self.completed)
        if failed:
            self.ctx.trajectory.bump("failed_executions")
        return ExecResult(shown, failed, omitted, float(answer.get("exec_s") or 0.0))

    async def transient(self, step: int) -> list[Any]:
        out: list[Any] = []
        for plugin in self.plugins:
            out.extend(await plugin.before_agent_step(step))
        return out


# the worker died, hung or garbled its answer; the engine failed to open or evaluate the world
WORKER_FAULTS = [
    Fault(WorkerError, "worker_error", lambda e: f"appworld worker: {e}"),
    Fault(EngineError, "engine_error", lambda e: f"appworld engine: {e}"),
]


def first_line(requirement: str) -> str:
    return " ".join(requirement.strip().splitlines()[0].split()) if requirement.strip() else "(unnamed test)"


def verdict_of(task_id: str, termination: str, result: dict) -> Verdict:
    """The verdict from AppWorld's ``TestTracker.to_dict()`` (passes, failures, success)."""
    comps: dict[str, float | None] = {}
    failed = []

    def name_of(requirement: str) -> str:  # two tests with one first line stay two components
        name, n = f"{task_id}::{first_line(requirement)}", 2
        while name in comps:
            name, n = f"{task_id}::{first_line(requirement)} ({n})", n + 1
        return name

    for p in result.get("passes") or []:
        comps[name_of(p["requirement"])] = 1.0
    for f in result.get("failures") or []:
        name = name_of(f["requirement"])
        comps[name] = 0.0
        failed.append(name.split("::", 1)[1])
    basis = list(comps)
    success = bool(result.get("success"))
    comps[TGC] = 1.0 if success else 0.0
    notes = {"num_tests": str(result.get("num_tests", len(basis))), "passed": str(len(result.get("passes") or [])),
             "completed": str(bool(result.get("completed"))).lower()}
    if result.get("difficulty") is not None:
        notes["difficulty"] = str(result["difficulty"])
    if failed:
        notes["failed_tests"] = "\n".join(failed)[:2000]
    reward = 1.0 if success else 0.0
    info = RewardInfo(reward=reward, reward_basis=basis, components=comps, notes=notes)
    return Verdict(reward=reward, termination=termination, reward_info=info)


async def play_trial(ctx: Any, task: AppWorldTask, *, agent: AgentSettings, run: AppWorldRun, limits: Limits,
                     attempt: int = 0, plugins: list[Any] | None = None) -> TrialRecord:
    from agentrig.plugins import build_plugin

    from .reference import build_appworld_agent

    settings = SessionSettings(agent=agent, limits=limits, execute_timeout_s=run.execute_timeout_s,
                               output_limit=run.output_limit, grace_s=run.grace_s)
    budget = limits.trial_timeout_s

    async def body() -> Verdict:
        async with run.pool.lease() as worker:
            opened = await worker.call("open", task_id=task.id, exec_timeout_s=run.execute_timeout_s,
                                       max_interactions=max(limits.max_steps, 1) + 1, random_seed=run.random_seed,
                                       raise_on_failure=agent.kind != "oracle",  # as AppWorld's verify plays solutions
                                       timeout_s=OPEN_TIMEOUT_S)
            ctx.event("world", "open", seconds=opened.get("open_s"), worker=worker.pid, worker_trials=worker.trials)
            session = AppWorldSession(ctx, task, worker, settings, [build_plugin(p, ctx) for p in plugins or []])
            agent_impl = build_appworld_agent(agent, session, run)

            async def run_agent() -> str:
                await agent_impl.run(session)
                return "completed" if session.completed else "never_completed"

            try:
                termination = await agent_phase(ctx, run_agent(), budget=budget,
                                                timeout_detail=f"the trial timeout ({budget or 0:g} s) was reached")
            finally:
                close = getattr(agent_impl, "aclose", None)  # an agent holding a process (kind python)
                if close is not None:
                    await close()
            result = await worker.call("evaluate", timeout_s=EVAL_TIMEOUT_S)
            ctx.event("world", "evaluate", success=result.get("success"), num_tests=result.get("num_tests"),
                      completed=result.get("completed"), seconds=result.get("eval_s"),
                      tests=[{"test": first_line(p["requirement"]), "passed": True, "label": p.get("label")}
                             for p in result.get("passes") or []]
                      + [{"test": first_line(f["requirement"]), "passed": False, "label": f.get("label"),
                          "trace": (f.get("trace") or "")[-1500:]} for f in result.get("failures") or []])
            return verdict_of(task.id, termination, result)

    return await play_in_envelope(ctx, body, attempt=attempt, faults=WORKER_FAULTS)
