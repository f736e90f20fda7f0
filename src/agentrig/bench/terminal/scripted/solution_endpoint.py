"""An OpenAI-compatible endpoint that plays the SOLUTION of every terminal task, as the agent asking.

The terminal counterpart of the gold endpoint: point a bash-agent arm — or an installed agent
(mini-swe-agent, Codex CLI, Claude Code) or a user's own ``kind = "command"`` agent through
agentrig's measuring proxy — at it and each trial
runs its task's reference solution, one command per reply, then finishes as that agent finishes::

    async with SolutionEndpoint(tasks_dir) as ep:
        ...  # [roles.agent] base_url = ep.base_url, model = "solution"

    # or in its own process: python -m agentrig.bench.terminal.scripted.solution_endpoint --tasks DIR

Every answer comes from the request alone (no state between requests, so a retried request gets
the same answer):

- the task is named by the ``X-Agentrig-Task`` header agentrig's channel sends; it is looked up
  in the tasks directory given at start (default: agentrig's built-in tasks; loaded once);
- the solution is cut into commands: each ``solution.yaml`` entry is one command (keys sent
  without Enter are joined to the next entry; a non-blocking entry is started in the background),
  a ``solution.sh`` / ``solve.sh`` is one command that runs the script with bash;
- which agent asks is read from each request (``agent_protocols.protocol_of``, where each
  agent's requests are described as they were seen), no setting needed:

  - agentrig's bash agent: a ``bash`` call ``{"command": …}`` (native), else a reply with one
    ```` ```bash-action ```` block (text); finishes with the command ``echo AGENTRIG_SUBMIT && echo <note>``;
  - mini-swe-agent (tool ``bash`` and its submit sentinel in its prompts, or its fence label in
    text mode): a ``bash`` call ``{"command": …}``, else one ```` ```mswea_bash_command ```` block;
    finishes with the command ``echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && echo <note>``;
  - Codex CLI (tool ``exec_command``): an ``exec_command`` call ``{"cmd": "<the command, a
    string>", "yield_time_ms": 30000}``; finishes with a text and no tool call (its turn ends);
  - Claude Code (tool ``Bash``): a ``Bash`` call ``{"command": …, "description": …, "timeout":
    600000}``; finishes with a text and no tool use (``end_turn``);
  - a user's own agent (none of the above, but a shell-like tool: its name or description says
    shell/bash/terminal commands, or its only required parameter is a string ``cmd``/``command``/
    ``script``; ``agent_protocols.shell_tool``): a call of that tool ``{<its argument, from its
    schema>: …}``; finishes with a text and no tool call (``examples/command_agent/agent.py``);

- the commands already played are counted in the conversation: the agent's calls of its shell
  tool, or (text mode) its replies that hold exactly one action block (parsed as the agent parses
  them) — so format-error retries do not count; the next command is answered in the agent's way,
  and once all are played, its finish, again for every later request;
- Codex: when the last tool output says ``Process running with session ID N`` (a command that ran
  past ``yield_time_ms``), the reply waits for it with ``write_stdin`` (``{"session_id": N,
  "chars": ""}``) — not a command played;
- a side request (a request offering tools but no shell-like one, or no tools and a tiny
  ``max_tokens`` or an agent product's name in its system text — titles, quota checks) gets the
  short text ``SIDE_REPLY``; it is not a step;
- a ``solution.sh`` is sent inline as a quoted heredoc (``bash <<'AGENTRIG_SOLUTION_EOF' …``), so
  the script needs no file in the sandbox whichever agent runs it;
- ``reasoning=True`` adds ``reasoning_content`` to every reply (to test that it is sent back);
- ``flavor="mini"`` (``--flavor mini``) makes every ``bash``-tool and text-mode request mini's,
  whatever its prompts say (``perf/terminal_vs_mini.py``; mini sends the ``X-Agentrig-*``
  headers as ``extra_headers`` when it talks to the endpoint directly);
- role ``memory`` (the memory plug-in) gets the gold endpoint's memory replies, with the task's
  first solution command as the note, and — in the edit phase — a procedural entry for each failed
  command in the window and for the command that fixed it (``memory``).

**Noisy mode** (``noise=Noise(...)``; ``--noise TASK=STEPS --noise-p P --noise-seed N``, see
``_noise``): at the chosen decision steps (the index of the command about to be played; the submit
step is ``len(commands)``) an agent request sampled with ``temperature`` > 0 gets, with
probability ``p``, the wrong command ``NOISE_COMMAND`` instead (it counts as played, so the
solution's command of that step is skipped) — in every agent's protocol (for Codex and Claude
Code a noisy finish step is ``NOISE_COMMAND`` run instead of the final text). Tasks are keyed
``terminal/<id>``, ``<id>`` or ``*``. The step returns its correct command when a system message
of the request holds ``<<do:LABEL>>``, LABEL being the first word of the step's command
(``submit`` for the finish step).

An unknown task or role, a task without a solution, or a request without the headers, is an HTTP
400 whose message says what was wrong (``_scripted``, shared with the gold and AppWorld endpoints).
Everything else (auth, faults at ``fault_rate`` from a seeded generator, delay, usage figures, the
control routes) is ``FakeEndpoint``'s.
"""

from __future__ import annotations

import re
import shlex
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentrig.agents.bash import parse_action
from agentrig.agents.bash_prompts import ACTION_LABEL
from agentrig.errors import AgentrigError
from agentrig.testing._noise import Noise, add_noise_arguments, noise_of, obeys, wrong_word
from agentrig.testing._scripted import GoldRequestError, ScriptedResponder, actions_played, header_form
from agentrig.testing.fake_endpoint import FakeEndpoint

from .agent_protocols import (AGENTRIG_NATIVE, AGENTRIG_TEXT, CODEX, CODEX_POLL_TOOL, MINI_ACTION_LABEL,
                              MINI_NATIVE, MINI_SUBMIT_SENTINEL, MINI_TEXT, SIDE_REPLY, Protocol, codex_poll,
                              protocol_of)
from .memory import memory_reply

__all__ = ["FLAVORS", "MINI_SUBMIT_SENTINEL", "SOLUTION_MODELS", "SolutionEndpoint", "SolutionResponder",
           "SolutionScript", "main"]

SOLUTION_MODELS = ("solution", "solution-agent", "solution-memory")
FLAVORS = ("agentrig", "mini")
_MINI_ACTION = re.compile(r"```" + MINI_ACTION_LABEL + r"\s*\n(.*?)\n```", re.DOTALL)
SUBMIT_NOTE = "solution played"
FINAL_TEXT = "The solution is played; the task is done."
NOISE_COMMAND = "echo 'not sure what to do yet'"
NOISE_GROUP = "terminal"


def step_label(command: str, submit: bool = False) -> str:
    """The label a guideline names to make a noisy step play this command (see ``_noise``)."""
    if submit:
        return "submit"
    words = command.split()
    return words[0] if words else ""


def _heredoc(script: str) -> str:
    marker = "AGENTRIG_SOLUTION_EOF"
    while marker in script:
        marker += "_"
    return f"bash <<'{marker}'\n{script.rstrip()}\n{marker}"


def _fenced(command: str, flavor: str = "agentrig") -> str:
    if flavor == "mini":  # mini's action regex wants exactly three backticks
        return f"```{MINI_ACTION_LABEL}\n{command}\n```"
    longest, run = 0, 0
    for ch in command:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{ACTION_LABEL}\n{command}\n{fence}"


@dataclass(frozen=True)
class SolutionScript:
    task_id: str
    commands: tuple[str, ...]
    flavor: str = "agentrig"  # or "mini": mini-SWE-agent's fence label and submit sentinel

    @classmethod
    def from_task(cls, task: Any) -> "SolutionScript":
        commands: list[str] = []
        if task.solution:
            pending = ""
            for step in task.solution:
                keys = pending + step.command
                if not step.append_enter:  # typed, not entered: goes with the next entry
                    pending = keys
                    continue
                pending = ""
                if not keys.strip():
                    continue
                commands.append(keys if step.block else f"nohup bash -c {shlex.quote(keys)} > /dev/null 2>&1 &")
            if pending.strip():
                commands.append(pending)
        elif task.solution_script is not None:
            commands.append(_heredoc(Path(task.solution_script).read_text(encoding="utf-8")))
        if not commands:
            raise GoldRequestError(f"task {task.id!r} has no solution (solution.yaml, solution.sh or solution/solve.sh)")
        return cls(task.id, tuple(commands))

    def protocol(self, native: bool) -> Protocol:
        """The protocol of this script's flavor (agentrig's bash agent or mini), in a tool mode."""
        if self.flavor == "mini":
            return MINI_NATIVE if native else MINI_TEXT
        return AGENTRIG_NATIVE if native else AGENTRIG_TEXT

    def submit_command(self, protocol: Protocol | None = None) -> str:
        sentinel = (protocol or self.protocol(True)).sentinel
        return f"echo {sentinel} && echo {shlex.quote(SUBMIT_NOTE)}"

    def first_step_text(self) -> str:  # the memory plug-in's note (gold endpoint's memory replies)
        return "run: " + self.commands[0].splitlines()[0][:200]

    def played(self, messages: list[dict], native: bool | Protocol) -> int:
        protocol = native if isinstance(native, Protocol) else self.protocol(native)
        if protocol.label == MINI_ACTION_LABEL:
            def one_action(content: str) -> bool:
                return len(_MINI_ACTION.findall(content)) == 1
        else:
            def one_action(content: str) -> bool:
                return parse_action(content)[0] is not None
        return actions_played(messages, protocol.native, protocol.tool or "", one_action)

    def agent_reply(self, messages: list[dict], native: bool = False, reasoning: bool = False,
                    noise: Noise | None = None, body: dict | None = None, protocol: Protocol | None = None) -> dict:
        """The next reply of the agent speaking ``protocol`` (default: this script's flavor in the
        tool mode ``native``): the next solution command, then the protocol's way of finishing."""
        protocol = protocol or self.protocol(native)
        n = self.played(messages, protocol)
        total = len(self.commands)
        if protocol is CODEX and (poll := codex_poll(messages)) is not None:  # a command still running
            return {"content": None, "tool_calls": [
                {"id": f"sol_{n}_wait_{len(messages)}", "name": CODEX_POLL_TOOL, "arguments": poll}]}
        done = n >= total
        command = self.commands[n] if not done else (self.submit_command(protocol) if protocol.finish == "submit" else "")
        if noise is not None and noise.wrong(body or {}, NOISE_GROUP, self.task_id, n) \
                and not obeys(messages, step_label(command, done)):
            command = wrong_word(command) if noise.mode == "one" and command else NOISE_COMMAND
        if not done:
            thought = f"Step {n + 1} of {total} of the solution."
        else:
            thought = "The solution is played; submitting." if command else FINAL_TEXT
        if not command:  # Codex, Claude Code: a final text, no tool call — the agent's turn ends
            reply: dict = {"content": thought}
        elif protocol.native:
            reply = {"content": thought, "tool_calls": [
                {"id": f"sol_{n + 1}", "name": protocol.tool, "arguments": protocol.arguments(command, n, total)}]}
        else:
            reply = {"content": f"{thought}\n\n{_fenced(command, protocol.name)}"}
        if reasoning:
            reply["reasoning_content"] = f"Reasoning for step {n + 1} of task {self.task_id}."
        return reply


class SolutionResponder(ScriptedResponder):
    """``responder(body)`` for a FakeEndpoint whose requests carry agentrig's X-Agentrig-* headers."""

    name = "solution endpoint"

    def __init__(self, tasks_dir: str | Path | None = None, *, reasoning: bool = False, flavor: str = "agentrig",
                 noise: Noise | None = None):
        self.noise = noise
        if flavor not in FLAVORS:
            raise ValueError(f"flavor {flavor!r}: use one of {', '.join(FLAVORS)}")
        self.flavor = flavor
        if tasks_dir is None:
            from ..tasks.taskfile import builtin_tasks_dir

            tasks_dir = builtin_tasks_dir()
        self.tasks_dir = Path(tasks_dir)
        self.reasoning = reasoning
        self._scripts: dict[str, SolutionScript | GoldRequestError] | None = None
        self._lock = threading.Lock()

    def _load(self) -> dict[str, SolutionScript | GoldRequestError]:
        from ..tasks.taskfile import load_tasks

        with self._lock:
            if self._scripts is None:
                try:
                    tasks, _invalid = load_tasks(self.tasks_dir, skip_invalid=True)
                except AgentrigError as exc:
                    raise GoldRequestError(f"cannot read the tasks directory: {exc}") from None
                scripts: dict[str, SolutionScript | GoldRequestError] = {}
                for t in tasks:
                    try:
                        script = SolutionScript.from_task(t)
                        scripts[header_form(t.id)] = SolutionScript(script.task_id, script.commands, self.flavor)
                    except (GoldRequestError, OSError) as exc:
                        scripts[header_form(t.id)] = GoldRequestError(str(exc))
                self._scripts = scripts
            return self._scripts

    def script(self, task_id: str) -> SolutionScript:
        scripts = self._load()
        found = scripts.get(task_id)
        if found is None:
            known = ", ".join(sorted(scripts)[:8])
            raise GoldRequestError(f"unknown task {task_id[:120]!r} in the solution endpoint's tasks directory "
                                   f"{self.tasks_dir} ({len(scripts)} tasks: {known}…); check X-Agentrig-Task")
        if isinstance(found, GoldRequestError):
            raise found
        return found

    def play(self, role: str, body: dict, headers: Any) -> dict:
        script = self.script(headers["X-Agentrig-Task"])
        if role == "memory":
            return memory_reply(script, body)
        protocol = protocol_of(body, self.flavor)
        if protocol is None:  # an agent's side request (a title, a quota check…): no step of the solution
            return {"content": SIDE_REPLY}
        return script.agent_reply(body.get("messages") or [], reasoning=self.reasoning, noise=self.noise, body=body,
                                  protocol=protocol)


class SolutionEndpoint(FakeEndpoint):
    """A FakeEndpoint whose replies play each terminal task's solution (see the module docstring)."""

    def __init__(self, tasks_dir: str | Path | None = None, *, models: tuple[str, ...] = SOLUTION_MODELS,
                 reasoning: bool = False, record: bool = False, flavor: str = "agentrig",
                 noise: Noise | None = None, **kwargs: Any):
        self.solutions = SolutionResponder(tasks_dir, reasoning=reasoning, flavor=flavor, noise=noise)
        super().__init__(models=models, responder=self.solutions, record=record, **kwargs)


def main(argv: list[str] | None = None) -> int:
    import argparse

    from agentrig.testing.fake_endpoint import add_server_arguments, serve_main

    ap = argparse.ArgumentParser(prog="python -m agentrig.bench.terminal.scripted.solution_endpoint",
                                 description="Serve the solutions of terminal tasks, as a bash agent's model, "
                                             "until SIGTERM/SIGINT.")
    ap.add_argument("--tasks", metavar="DIR", help="a directory of Terminal-Bench / Harbor tasks (default: the built-in ones)")
    add_server_arguments(ap, ",".join(SOLUTION_MODELS))
    ap.add_argument("--reasoning", action="store_true", help="add reasoning_content to every reply")
    ap.add_argument("--record", action="store_true", help="keep request records (GET /_fake/requests)")
    ap.add_argument("--flavor", choices=FLAVORS, default="agentrig",
                    help="mini: mini-SWE-agent's text-mode fence label and submit sentinel")
    add_noise_arguments(ap)

    def make(args: Any, settings: dict[str, Any]) -> SolutionEndpoint:
        noise = noise_of(args)
        if args.tasks is not None and not Path(args.tasks).is_dir():
            raise ValueError(f"--tasks {args.tasks}: not a directory; give a directory of task directories")
        return SolutionEndpoint(args.tasks, reasoning=args.reasoning, record=args.record, flavor=args.flavor,
                                noise=noise, **settings)

    return serve_main(ap, argv, make)


if __name__ == "__main__":
    raise SystemExit(main())
