"""The bash agent's tests play on the real terminal session (bench/terminal/episode.py), sandbox
and verifier: ``open_session`` builds a ``TerminalSession`` on a bwrap sandbox for one task.

``HookedSession`` adds the plug-in hook the agent calls before each model call
(``transient(step)``) with fixed transient context, so the agent's side of the hook is tested
here; the episode wires the arm's plug-ins into the same hook.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentrig.agents.base import AgentSettings
from agentrig.benchmark import Limits
from agentrig.bench.terminal.episode import SessionSettings, TerminalSession
from agentrig.bench.terminal.sandbox import SandboxSettings, open_sandbox
from agentrig.bench.terminal.tasks.taskfile import builtin_tasks_dir, load_task
from agentrig.bench.terminal.verifier import capture_shell_state, verify
from agentrig.trial.context import TrialContext
from agentrig.types import Transient, TrialKey


def builtin_task(task_id: str):
    return load_task(builtin_tasks_dir() / task_id)


class HookedSession(TerminalSession):
    transients: list[Transient] = []

    async def transient(self, step: int) -> list[Transient]:
        self.hook_steps = [*getattr(self, "hook_steps", []), step]
        return list(self.transients)

    @property
    def commands(self) -> list[str]:
        return [e.data["command"] for e in self.ctx.trajectory.events if (e.plugin, e.kind) == ("sandbox", "command")]


def make_trial_ctx(task: Any, channel: Any, seed: int = 3) -> TrialContext:
    return TrialContext(key=TrialKey(arm="bash", domain="terminal", task_id=task.id, trial=0), task=task, seed=seed,
                        channel=channel, run_id="run-test")


async def open_session(task: Any, channel: Any, tmp_path: Path, *, command_timeout_s: float = 30.0,
                       max_steps: int = 200, agent: AgentSettings | None = None) -> HookedSession:
    shell = "persistent" if task.run_tests_in_same_shell else "stateless"
    sandbox_settings = SandboxSettings(kind="bwrap", cache_dir=tmp_path / "cache", shell=shell)
    sandbox = await open_sandbox(task, sandbox_settings)
    settings = SessionSettings(agent=agent or AgentSettings(kind="bash"), sandbox=sandbox_settings,
                               limits=Limits(max_steps=max_steps), agent_timeout_s=task.agent_timeout_s,
                               command_timeout_s=command_timeout_s)
    return HookedSession(make_trial_ctx(task, channel), task, sandbox, settings)


async def verify_session(session: TerminalSession):
    state = await capture_shell_state(session.sandbox) if session.task.run_tests_in_same_shell else None
    return await verify(session.sandbox, session.task, agent_end="submitted" if session.submitted else "never_submitted",
                        shell_state=state)
