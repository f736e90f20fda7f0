"""The terminal episode: one trial of a terminal task — the agent phase in a sandbox, then the verifier.

    play_trial(ctx, task, agent=…, sandbox=…, limits=…)  →  TrialRecord

1. **Sandbox.** ``open_sandbox`` builds the task's layer (cached by content hash) and starts the
   trial's sandbox. A task with ``run_tests_in_same_shell`` always gets the persistent shell (its
   tests read the session's directory and exported variables), whatever ``[sandbox] shell`` says;
   so does the oracle playing a ``solution.yaml`` (keystrokes typed into one terminal, as
   Terminal-Bench types them into its tmux session).
2. **Agent phase.** The arm's agent (``agents.build_terminal_agent`` of this package) gets a ``TerminalSession``
   and runs until it submits, gives up, or a limit ends it. The phase is bounded by the task's
   agent timeout (and the run's ``trial_timeout_s`` when that is shorter): ``agent_timeout``.
   Each command runs with the per-command timeout, cut to the time the agent has left; more than
   ``max_steps`` commands end the phase with ``limits_exceeded``. An agent raising
   ``AgentStop(termination)`` ends it with that termination (``format_errors``, ``limits_exceeded``…).
3. **Verifier** (``verifier.verify``) — also after an agent timeout or any other agent end — in
   the sandbox's final state. Its result becomes the ``Verdict``: reward (TB1: 1 when every test
   passed; Harbor: the reward file's number), ``reward_info.components`` = one component per test
   (``"<task id>::<test name>"`` → 1/0; Harbor: the reward file's numbers, e.g.
   ``"<task id>::reward"``; every one in ``reward_basis``), ``reward_info.notes`` = the
   failure mode (``verifier.FAILURE_MODES``) and its detail, and a ``verifier``/``result`` event
   in the trajectory with the tests, the exit code and the verifier's bounded output.

Terminations (``Verdict.termination``): how the agent phase ended — ``submitted``,
``never_submitted``, ``agent_timeout``, ``limits_exceeded``, ``format_errors``,
``context_overflow`` (the conversation outgrew the model's window even with old outputs elided;
the verifier still runs), or another ``AgentStop`` name — or ``broken_task`` when the task's own
build failed deterministically (``TaskBuildError``: a valid trial, reward 0, failure mode ``broken_task``; the benchmark's
build check normally excludes such tasks before the run), or ``needs_network`` /
``needs_container`` when the task turned out not to be runnable here (valid, reward 0; the
selection normally excludes them before the run).

Infrastructure faults make the trial **invalid** (the executor replays it): a ``SandboxError``
anywhere (the sandbox cannot start, dies, a copy fails) → ``invalid_cause = "sandbox: …"``; a
model call whose retries are exhausted, or whose answer shows a silently cut prompt
(``PROMPT_TRUNCATED``) → ``channel_error``. A ``FatalChannelError`` propagates — among them a
``ContextOverflow`` on the trial's first model call (``CONTEXT_TOO_SMALL``: the window is too small
for the task, the run stops).

Every command is recorded as a ``sandbox``/``command`` event (command, exit code, timed out,
duration) whatever the agent's tool mode: the analysis reads the trial's command sequence there.
A submission is recorded as an ``agent``/``submit`` event (its text, bounded).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from agentrig.agents.base import AgentSettings, AgentStop
from agentrig.benchmark import Limits
from agentrig.procs import finish_despite_cancel
from agentrig.trial.envelope import Fault, agent_phase, play_in_envelope
from agentrig.types import Message, RewardInfo, TrialRecord, Verdict

from .core.base import effective_limits
from .sandbox import CommandResult, SandboxError, SandboxSettings, TaskBuildError, open_sandbox
from .tasks.taskmodel import TerminalTask

__all__ = ["AGENT_ENDS", "DEFAULT_COMMAND_TIMEOUT_S", "SessionSettings", "TerminalAgent", "TerminalSession",
           "play_trial", "verdict_of"]

DEFAULT_COMMAND_TIMEOUT_S = 180.0
AGENT_ENDS = ("submitted", "agent_timeout", "format_errors", "limits_exceeded", "context_overflow", "never_submitted")
TEARDOWN_BOUND_S = 20.0  # a sandbox's removal goes on this long after Ctrl-C cancelled its trial
COMMAND_EVENT_CHARS = 2000  # characters of a command kept in its event
SUBMISSION_EVENT_CHARS = 4000  # characters of a submission kept in its event
TYPED_AHEAD_MARGIN_S = 1.0  # the wait for typed-ahead commands ends this long before the agent timeout (it submits in time)


@dataclass(frozen=True)
class SessionSettings:
    """What bounds one trial's agent phase: the arm's agent settings, the [sandbox] table (after
    the task's own shell needs), the run's limits, and the two clocks."""

    agent: AgentSettings
    sandbox: SandboxSettings
    limits: Limits
    agent_timeout_s: float
    command_timeout_s: float = DEFAULT_COMMAND_TIMEOUT_S


class TerminalSession:
    """What a terminal agent sees of its trial: the task, the trajectory, and the sandbox's shell."""

    def __init__(self, ctx: Any, task: TerminalTask, sandbox: Any, settings: SessionSettings,
                 plugins: list[Any] | None = None):
        self.ctx = ctx
        self.task = task
        self.sandbox = sandbox
        self.settings = settings
        self.plugins = list(plugins or [])
        self.workdir: str = sandbox.workdir  # where commands start, as commands see it
        self.steps = 0  # commands run
        self.submitted = False
        self.submission: str | None = None
        self.started = time.monotonic()
        self.deadline = self.started + settings.agent_timeout_s

    def remaining(self) -> float:
        """Seconds the agent phase has left."""
        return self.deadline - time.monotonic()

    def add(self, message: Message) -> Message:
        """Append a message to the trajectory (sets its turn and time)."""
        msgs = self.ctx.trajectory.messages
        message.turn = len(msgs)
        message.t = round(self.ctx.elapsed(), 6)
        msgs.append(message)
        return message

    async def execute(self, command: str, timeout_s: float | None = None,
                      env: dict[str, str] | None = None, detach_after_s: float | None = None) -> CommandResult:
        """Run one command in the sandbox (per-command timeout, cut to the time left).

        Raises ``AgentStop("limits_exceeded")`` past ``max_steps`` commands and
        ``AgentStop("agent_timeout")`` when the agent's time is up (also when a command was still
        running as it ran out). A ``SandboxError`` propagates: the trial is invalid.
        ``detach_after_s`` (the persistent shell): return after that long while the command goes
        on, the next one queued behind it — keys typed with ``block: false``."""
        limits = self.settings.limits
        if self.steps >= limits.max_steps:
            raise AgentStop("limits_exceeded", f"the step limit ({limits.max_steps} commands, [run] max_steps) was reached")
        left = self.remaining()
        if left <= 0:
            raise AgentStop("agent_timeout", f"the agent timeout ({self.settings.agent_timeout_s:g} s) was reached")
        bound = min(timeout_s if timeout_s is not None else self.settings.command_timeout_s, left)
        self.steps += 1
        self.ctx.trajectory.bump("commands")
        if detach_after_s is None:
            result = await self.sandbox.run(command, timeout_s=max(bound, 0.001), env=env)
        else:  # typed ahead (persistent shell): return after detach_after_s, the command may go on
            result = await self.sandbox.run(command, timeout_s=max(bound, 0.001), env=env, detach_after_s=detach_after_s)
        self.ctx.event("sandbox", "command", command=command[:COMMAND_EVENT_CHARS], exit_code=result.exit_code,
                       timed_out=result.timed_out, duration_s=round(result.duration_s, 4),
                       omitted_chars=result.omitted_chars)
        if result.timed_out:
            self.ctx.trajectory.bump("command_timeouts")
            if self.remaining() <= 0.01:
                raise AgentStop("agent_timeout", "a command was still running when the agent timeout "
                                f"({self.settings.agent_timeout_s:g} s) was reached")
        return result

    async def transient(self, step: int) -> list[Any]:
        """The arm's plug-ins' context for the agent's next model call (``before_agent_step``);
        asked by the bash agent, or by an installed agent's proxy before each of its calls."""
        out: list[Any] = []
        for plugin in self.plugins:
            out.extend(await plugin.before_agent_step(step))
        return out

    async def wait_typed_ahead(self, timeout_s: float) -> bool:
        """Wait until the commands typed ahead (``detach_after_s``) have ended, at most `timeout_s`
        and never past the agent's time; one still running then keeps running into the tests.
        Recorded as a ``sandbox``/``typed_ahead`` event. True when none is left running."""
        started = time.monotonic()
        ended = await self.sandbox.wait_typed_ahead(max(min(timeout_s, self.remaining() - TYPED_AHEAD_MARGIN_S), 0))
        self.ctx.event("sandbox", "typed_ahead", ended=ended, waited_s=round(time.monotonic() - started, 4))
        return ended

    def submit(self, text: str = "") -> None:
        """The agent phase ends: the agent says it is done (termination ``submitted``). The
        submission is kept as an ``agent``/``submit`` event (exports and ``--smoke`` show it)."""
        self.submitted = True
        self.submission = text
        self.ctx.event("agent", "submit", submission=text[:SUBMISSION_EVENT_CHARS])

    async def upload(self, src: Path, dest: str) -> None:
        """Copy a host file or directory to ``dest`` (a task path such as ``/oracle/solution.sh``;
        the sandbox maps it) — the reference agents' way to bring in the task's solution."""
        await self.sandbox.copy_in(Path(src), dest)

    def path(self, path: str) -> str:
        """An absolute task path (``/app``, ``/solution``) as commands in this sandbox see it."""
        return self.sandbox.sandbox_path(path)


class TerminalAgent(Protocol):
    async def run(self, session: TerminalSession) -> None: ...


# ------------------------------------------------------------------------------------------ trial


# the sandbox failing (it cannot start, dies, a copy fails; the host's disk, a file gone): not the agent's doing
SANDBOX_FAULTS = [
    Fault(SandboxError, "sandbox_error", lambda e: f"sandbox: {e}"),
    Fault(OSError, "sandbox_error", lambda e: f"sandbox: {type(e).__name__}: {e}"),
]


def clip_detail(detail: str, limit: int = 1000) -> str:
    """A failure's detail within `limit` characters: its first line (what failed) and its end (a
    build's or a command's last lines, where the error is), the middle left out."""
    if len(detail) <= limit:
        return detail
    first = detail.split("\n", 1)[0][: limit // 2]
    return f"{first}\n…\n{detail[-(limit - len(first) - 3):]}"


def verdict_of(termination: str, result: Any) -> Verdict:
    """The trial's verdict from how the agent phase ended and the verifier's result."""
    comps = {f"{result.task_id}::{name}": float(v) for name, v in result.components.items()}
    notes = {"failure_mode": result.failure_mode}
    if result.detail:
        notes["detail"] = clip_detail(result.detail)
    info = RewardInfo(reward=result.reward, reward_basis=list(comps), components=comps, notes=notes)
    return Verdict(reward=result.reward, termination=termination, reward_info=info)


def _not_runnable(termination: str, mode: str, detail: str) -> Verdict:
    info = RewardInfo(reward=0.0, notes={"failure_mode": mode, "detail": clip_detail(detail)})
    return Verdict(reward=0.0, termination=termination, reward_info=info)


def agent_end(termination: str) -> str:
    return termination if termination in AGENT_ENDS else "never_submitted"


# sandboxes being removed after their trial returned (``detach_close``); each task ends by itself
_CLOSING: set[asyncio.Task] = set()


async def _close(box: Any) -> None:
    with contextlib.suppress(Exception):  # removed to the end even while Ctrl-C cancels the trial (procs.py)
        await finish_despite_cancel(box.close(), TEARDOWN_BOUND_S)


async def settle() -> None:
    """Wait until every sandbox left to be removed (``detach_close``) is removed."""
    while _CLOSING:
        await asyncio.gather(*list(_CLOSING), return_exceptions=True)


async def play_trial(ctx: Any, task: TerminalTask, *, agent: AgentSettings, sandbox: SandboxSettings,
                     limits: Limits, attempt: int = 0, command_timeout_s: float = DEFAULT_COMMAND_TIMEOUT_S,
                     plugins: list[Any] | None = None, detach_close: bool = False) -> TrialRecord:
    """Play one terminal trial and judge it (see the module docstring). ``plugins``: the arm's
    plug-in settings (built per trial; the agent asks ``session.transient`` before each call — an
    agent we did not write: its proxy, ``installed.py``). ``detach_close`` (the local executor's
    trials, ``benchmark.SETTLES``): a trial judged without a stop returns at once and its sandbox is
    removed by a task of its own (every process killed, its cgroups and directory removed, as
    otherwise), so the next trial starts meanwhile; the executor awaits ``settle`` before its run
    ends. A trial that raises or is cancelled removes its sandbox before it returns, as without it."""
    from agentrig.plugins import build_plugin

    from .agents import build_terminal_agent
    from .verifier import capture_shell_state, verify

    typed = agent.kind in ("oracle", "flaky-oracle") and task.solution_script is None and bool(task.solution)
    if (task.run_tests_in_same_shell or typed) and sandbox.shell != "persistent":
        # the tests read the agent's shell; solution.yaml is keystrokes typed into one terminal
        sandbox = sandbox.model_copy(update={"shell": "persistent"})
    budget = task.agent_timeout_s
    if limits.trial_timeout_s is not None:
        budget = min(budget, limits.trial_timeout_s)
    settings = SessionSettings(agent=agent, sandbox=sandbox, limits=limits, agent_timeout_s=budget,
                               command_timeout_s=command_timeout_s)

    async def body() -> Verdict:
        box = None
        judged = False
        try:
            try:
                label = f"{ctx.key.arm}-{task.id}-{ctx.key.trial}"
                box = await open_sandbox(task, sandbox, label=label)
            except TaskBuildError as exc:
                mode = exc.exclusion or "broken_task"
                ctx.event("sandbox", "build_failed", exclusion=exc.exclusion, detail=str(exc)[-2000:])
                return _not_runnable(mode, mode, str(exc))
            for why in getattr(box, "build_unreached", None) or []:  # the image lacks what its build could not fetch
                ctx.event("sandbox", "build_unreached", detail=why[:500])
            session = TerminalSession(ctx, task, box, settings, [build_plugin(p, ctx) for p in plugins or []])
            agent_impl = build_terminal_agent(agent, session)

            async def run_agent() -> str:
                await agent_impl.run(session)
                return "submitted" if session.submitted else "never_submitted"

            termination = await agent_phase(ctx, run_agent(), budget=settings.agent_timeout_s,
                                            timeout_detail=f"the agent timeout ({settings.agent_timeout_s:g} s) was reached")
            state = await capture_shell_state(box) if task.run_tests_in_same_shell else None
            network, *_ = effective_limits(task, sandbox)
            result = await verify(box, task, agent_end=agent_end(termination), network=network,  # type: ignore[arg-type]
                                  shell_state=state)
            ctx.event("verifier", "result", **result.model_dump(mode="json", exclude={"task_id"}))
            judged = True
            if result.excluded:
                return _not_runnable(result.failure_mode, result.failure_mode, result.detail or "")
            return verdict_of(termination, result)
        finally:
            if box is not None and judged and detach_close:
                closing = asyncio.ensure_future(_close(box))
                _CLOSING.add(closing)
                closing.add_done_callback(_CLOSING.discard)
            elif box is not None:
                await _close(box)

    return await play_in_envelope(ctx, body, attempt=attempt, faults=SANDBOX_FAULTS)
