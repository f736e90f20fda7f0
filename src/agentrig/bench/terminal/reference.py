"""Reference agents for terminal tasks — no model: ``oracle``, ``flaky-oracle`` and ``noop``.

``oracle`` plays the task's own solution through the trial's session, then submits:

- a script (Terminal-Bench 1 ``solution.sh``; Harbor ``solution/solve.sh``) is copied in the way
  the harnesses do — ``/oracle/solution.sh`` (TB1), the whole ``solution/`` directory at
  ``/solution`` (Harbor) — and run as one command, ``bash /oracle/solution.sh`` /
  ``bash /solution/solve.sh``, with the whole agent time as its timeout;
- ``solution.yaml`` entries are typed in order into one shell — the trial's persistent shell,
  as Terminal-Bench types them into its tmux session: a ``block`` entry runs and is waited for
  (the time the agent has left as its timeout); a non-blocking entry (``block: false``) is sent
  and the oracle moves on after ``min_timeout_sec`` whether it has ended or not — the next entry
  is queued behind it and runs when it ends, as typeahead in a terminal. The oracle submits once
  the commands it typed ahead have ended, or ``TYPED_AHEAD_GRACE_S`` after its last entry:
  Terminal-Bench's test scripts spend that long and more setting up their tool chain (apt-get,
  uv's installer, a venv, pytest) before a test reads anything, which agentrig's offline verifier
  does not, so its tests would otherwise race a solution's last 0.01 s entries (TB's
  new-encrypt-command). A command still running then (a server started in the foreground) keeps
  running into the tests. An entry with ``append_enter = false`` is
  typed but not run: its text is put in front of the next entry. (Each entry is a shell command:
  keys meant for a program reading the terminal — a REPL, an editor — are not delivered to it.)

Each command is recorded as native tool mode records it: an assistant message with one ``bash``
tool call ``{"command": …}`` (for a script, the message's text is the script), then a ``tool``
message with the exit code and the output in the bash agent's observation template.

``flaky-oracle`` is the oracle that, with probability ``drop_p``, skips one step of the solution,
chosen uniformly (a script is one step: skipping it skips the whole solution). It draws once from
the trial's ``ctx.rng`` (seeded by the trial seed) for the decision and once more for the step
when it skips, so a run's outcomes are reproducible; a skip is recorded as a
``flaky-oracle``/``drop`` event.

``noop`` submits at once without running a command.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from agentrig.agents.base import AgentSettings
from agentrig.agents.bash_prompts import observation
from agentrig.types import Message, ToolCall


# How long the oracle lets the commands it typed ahead run before it submits, at most: about what
# Terminal-Bench's own test setup gives them before its tests read anything (module docstring).
TYPED_AHEAD_GRACE_S = 10.0

__all__ = ["TYPED_AHEAD_GRACE_S", "NoopTerminalAgent", "OracleAgent", "OracleStep", "build_reference", "oracle_steps"]


@dataclass(frozen=True)
class OracleStep:
    command: str  # what is run
    block: bool = True
    min_timeout_s: float = 0.0
    script: str | None = None  # a solution script's text (shown as the message's text)
    upload: tuple[str, str] | None = None  # (host path, sandbox path) copied in before the command


def oracle_steps(task: Any) -> list[OracleStep]:
    """The oracle's steps for a task (empty when the task ships no solution)."""
    if task.solution_script is not None:
        script = task.solution_script
        if task.format == "harbor":
            dest = "/solution"
            return [OracleStep(command=f"bash {dest}/{script.name}", script=script.read_text(errors="replace"),
                               upload=(str(script.parent), dest))]
        return [OracleStep(command="bash /oracle/solution.sh", script=script.read_text(errors="replace"),
                           upload=(str(script), "/oracle/solution.sh"))]
    steps: list[OracleStep] = []
    pending = ""
    for entry in task.solution or []:
        if not entry.append_enter:
            pending += entry.command
            continue
        steps.append(OracleStep(command=pending + entry.command, block=entry.block,
                                min_timeout_s=entry.min_timeout_sec))
        pending = ""
    return steps


class OracleAgent:
    """``kind="oracle"`` (and, with ``flaky=True``, ``kind="flaky-oracle"``)."""

    def __init__(self, settings: AgentSettings, session: Any, *, flaky: bool = False):
        self.settings = settings
        self.session = session
        self.flaky = flaky
        self.steps = oracle_steps(session.task)

    def _maybe_drop(self) -> None:
        ctx = self.session.ctx
        if not ctx.rng.random() < self.settings.drop_p:
            return
        if not self.steps:
            ctx.event("flaky-oracle", "drop", index=None, reason="the task has no solution step")
            return
        k = ctx.rng.randrange(len(self.steps))
        step = self.steps[k]
        ctx.event("flaky-oracle", "drop", index=k, steps=len(self.steps), command=step.command[:500],
                  script=step.script is not None)
        self.steps = self.steps[:k] + self.steps[k + 1:]

    async def run(self, session: Any) -> None:
        if self.flaky:
            self._maybe_drop()
        for i, step in enumerate(self.steps):
            await self._play(session, i, step)
        if any(not step.block for step in self.steps):  # what it typed ahead gets the time TB's test setup gives it
            await session.wait_typed_ahead(TYPED_AHEAD_GRACE_S)
        session.add(Message(role="assistant", content="The task is done; submitting."))
        session.submit("")

    async def _play(self, session: Any, i: int, step: OracleStep) -> None:
        command = step.command
        if step.upload is not None:
            src, dest = step.upload
            await session.upload(src, dest)  # the sandbox maps the path (local: under its root)
            command = command.replace(dest, session.path(dest))
        args = {"command": command}
        call = ToolCall(id=f"oracle-{i}", name="bash", arguments=args, arguments_raw=json.dumps(args))
        session.add(Message(role="assistant", content=step.script, tool_calls=[call]))
        if step.block:
            result = await session.execute(command, timeout_s=max(session.remaining(), 0.001))
        else:  # typed, then min_timeout_sec later the next entry: Terminal-Bench's non-blocking send_keys
            result = await session.execute(command, timeout_s=max(session.remaining(), 0.001),
                                           detach_after_s=step.min_timeout_s)
        shown = observation(result.exit_code, result.output, omitted_chars=result.omitted_chars,
                            timed_out=result.timed_out, note=result.note)
        session.add(Message(role="tool", content=shown, tool_call_id=call.id,
                            requestor="assistant", error=bool(result.timed_out or result.exit_code)))


class NoopTerminalAgent:
    """``kind="noop"``: submits at once."""

    def __init__(self, settings: AgentSettings, session: Any):
        self.settings = settings
        self.session = session

    async def run(self, session: Any) -> None:
        session.add(Message(role="assistant", content="Nothing to do; submitting."))
        session.submit("")


def build_reference(settings: AgentSettings, session: Any) -> Any:
    if settings.kind == "oracle":
        return OracleAgent(settings, session)
    if settings.kind == "flaky-oracle":
        return OracleAgent(settings, session, flaky=True)
    return NoopTerminalAgent(settings, session)
