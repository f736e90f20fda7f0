"""The τ² episode: the turn loop of one trial, in τ²-bench's half-duplex structure, then its
judgement (``Tau2Benchmark.play`` in ``benchmark.py`` calls ``play_trial``).

Routing (tau2's ``Orchestrator.step``): a message goes from one side to the next —

- agent text → user; agent tool calls → environment (requestor ``assistant``) → results → agent;
- user text → agent; user tool calls → environment (requestor ``user``) → results → user.

Every delivery is one step (``step_count``). After a step that is not waiting for the
environment, the limits are checked as tau2 checks them: ``step_count >= max_steps`` ends the
trial (``max_steps``), a total of ``max_errors`` tool errors ends it (``too_many_errors``); as in
tau2, a limit reached on the step that also carried a stop token overrides the stop. The agent's
``transfer_to_human_agents`` call ends the trial once its result is in (``agent_transfer``).
A user message with ``###STOP###`` / ``###TRANSFER###`` / ``###OUT-OF-SCOPE###`` ends it
(``user_stop``). A wall-clock limit bounds the whole conversation (``timeout``).

A tool call whose arguments are not a JSON object is answered with an ``Error:`` result without
reaching the environment; like every ``Error:`` result it counts towards ``max_errors``
(``invalid_tool_args`` / ``unknown_tools`` are counted apart as well).

Before each agent step the arm's plug-ins may add transient context to that one call.

An agent that holds a process or a server of its own (a Python agent: ``agents/python_agent``;
Codex or Claude Code: ``cli_agent.py``) has an ``aclose()``, awaited when the conversation ends
however it ends (cancellation included, bounded by ``CLOSE_BOUND_S``), before the judge runs.

An agent that runs its own tool loop (a Python agent calling its tools itself, an MCP agent such as
Codex or Claude Code) makes its calls in the middle of its step through ``Episode.agent_tool_call``
(also ``TauTrial.call_tool``): each call is recorded as an assistant message holding that one call,
applied and answered exactly as a call of the turn loop, and counted as the turn loop counts it (two
steps); a limit or a transfer reached there ends the trial (``Episode.ended``) and the step's reply
is dropped (``Episode.ended_event``, also ``TauTrial.ended``, is set then: such an agent stops its
own work at once). Its reply to the user is the step's message, as for any agent. Codex and Claude
Code play so (``cli_agent.py``).

Context: a ``ContextOverflow`` from the agent, the user simulator or a plug-in in the middle of
the conversation (that role had been answered before in this trial) ends the trial
``context_overflow`` — valid, reward 0 (the conversation outgrew the model's window, as τ²-bench
ends a participant that fails with an error). On a role's *first* request of the trial it is the
window that is too small for the task: ``CONTEXT_TOO_SMALL`` propagates and the run stops.

Infrastructure failures (the trial envelope, trial/envelope.py): a ``RetriesExhausted`` from any
model call (agent, user, plug-in, judge), a ``PromptTruncated`` (the server silently cut a prompt),
a ``JudgeFailed`` or a timeout while an outage held the model calls makes the trial invalid
(``Verdict.valid = False`` with the cause); a ``FatalChannelError`` propagates so that the runner
stops the whole run.
"""

from __future__ import annotations

import asyncio
from typing import Any

from agentrig.agents import build_agent
from agentrig.agents.base import GREETING, AgentSettings
from agentrig.benchmark import Limits
from agentrig.errors import Signal
from agentrig.plugins import build_plugin
from agentrig.plugins.base import PluginSettings
from agentrig.procs import finish_despite_cancel
from agentrig.trial.context import TrialContext
from agentrig.trial.envelope import Fault, agent_phase, play_in_envelope
from agentrig.types import Message, ToolCall, TrialRecord, Verdict

from .environment import Environment, field_of
from .judge import JudgeFailed, judge_trial
from .user import UserSettings, build_user, is_stop

__all__ = ["Episode", "Limits", "TRANSFER_TOOL", "play_trial"]

TRANSFER_TOOL = "transfer_to_human_agents"
CLOSE_BOUND_S = 10.0  # how long an agent's close() may take at the trial's end, a cancellation included


class _Stop(Signal):
    def __init__(self, termination: str):
        self.termination = termination


def _history_messages(task: Any) -> list[Message]:
    """The task's ``initial_state.message_history`` as our Messages (tau2 message dicts)."""
    raw = field_of(field_of(task, "initial_state"), "message_history") or []
    out: list[Message] = []
    for i, m in enumerate(raw):
        role = m.get("role")
        calls = [
            ToolCall(id=str(c.get("id", "")), name=str(c.get("name", "")),
                     arguments=c.get("arguments") if isinstance(c.get("arguments"), dict) else None,
                     arguments_raw="")
            for c in (m.get("tool_calls") or [])
        ]
        content = m.get("content")
        if role == "tool":
            out.append(Message(role="tool", content=content, tool_call_id=str(m.get("id", "")),
                               requestor=m.get("requestor") or "assistant", error=bool(m.get("error")), turn=i))
        else:
            out.append(Message(role=role, content=content, tool_calls=calls, turn=i))
    return out


def _agent_view(history: list[Message]) -> list[Message]:
    """tau2's is_valid_agent_history_message: assistant messages, user text, the agent's tool results."""
    return [m for m in history
            if m.role == "assistant" or (m.role == "user" and not m.tool_calls)
            or (m.role == "tool" and m.requestor == "assistant")]


class Episode:
    def __init__(self, ctx: TrialContext, agent: Any, user: Any, plugins: list[Any], limits: Limits):
        self.ctx = ctx
        self.agent = agent
        self.user = user
        self.plugins = plugins
        self.limits = limits
        self.env = Environment.fresh(ctx.bench.spec, ctx.bench.domain_dir, copy_on_write=True)
        self.env.set_state(ctx.task)
        ctx.bench.env = self.env
        ctx.bench.call_tool = self.agent_tool_call
        self.steps = 0
        self.errors = 0
        self.agent_steps = 0
        self.ended: str | None = None  # a termination reached by an agent-driven tool call
        self.ended_event = asyncio.Event()
        ctx.bench.ended = self.ended_event
        self._own_calls = 0

    def _add(self, message: Message) -> Message:
        msgs = self.ctx.trajectory.messages
        message.turn = len(msgs)
        message.t = round(self.ctx.elapsed(), 6)
        msgs.append(message)
        return message

    async def _start(self) -> tuple[str, list[Message]]:
        """Set up both sides; returns (to whom the first delivery goes, what is delivered)."""
        history = _history_messages(self.ctx.task)
        traj = self.ctx.trajectory
        if not history:
            greeting = self._add(Message(role="assistant", content=GREETING))
            await self.agent.start([greeting])
            await self.user.start([])
            return "user", [greeting]
        traj.messages.extend(history)
        traj.history_len = len(history)
        traj.bump("tool_errors", sum(1 for m in history if m.role == "tool" and m.error))
        self.errors = traj.counters["tool_errors"]
        last = history[-1]
        if last.role == "tool":
            k = len(history)
            while k > 0 and history[k - 1].role == "tool":
                k -= 1
            tail = history[k:]
            side = "agent" if last.requestor == "assistant" else "user"
            if side == "agent":
                await self.agent.start(_agent_view(history[:k]))
                await self.user.start(history)
            else:
                await self.agent.start(_agent_view(history))
                await self.user.start(history[:k])
            return side, tail
        if last.role == "assistant":
            await self.agent.start(_agent_view(history))
            await self.user.start(history[:-1])
            return ("env" if last.tool_calls else "user"), [last]
        await self.user.start(history)
        await self.agent.start(_agent_view(history[:-1]))
        if not last.tool_calls and is_stop(last.text):
            raise _Stop("user_stop")
        return ("env" if last.tool_calls else "agent"), [last]

    def _run_calls(self, message: Message) -> list[Message]:
        requestor = "assistant" if message.role == "assistant" else "user"
        traj = self.ctx.trajectory
        results = []
        for call in message.tool_calls:
            if call.arguments is None:
                traj.bump("invalid_tool_args")
                text = f"Error: the arguments of this call are not a valid JSON object ({call.arguments_error or 'unparseable'})"
                error = True
            else:
                if not self.env.has_tool(call.name):
                    traj.bump("unknown_tools")
                out = self.env.call(requestor, call.name, call.arguments)
                text, error = out.text, out.error
            traj.bump("env_calls")
            if error:
                self.errors = traj.bump("tool_errors")
            results.append(self._add(Message(role="tool", content=text, tool_call_id=call.id,
                                             requestor=requestor, error=error)))
        return results

    def agent_tool_call(self, name: str, arguments: dict | None, *, call_id: str | None = None,
                        arguments_error: str = "") -> Message:
        """One tool call made by an agent in the middle of its step (see the module's docstring):
        returns the tool result message (``error`` set for an ``Error:`` result). After the trial
        has ended, a call reaches nothing and is answered with an error."""
        if self.ended is not None:
            return Message(role="tool", content="Error: the conversation has ended; no further tool calls are taken",
                           tool_call_id=call_id or "", requestor="assistant", error=True)
        self._own_calls += 1
        call = ToolCall(id=call_id or f"call_{self._own_calls}", name=name,
                        arguments=arguments if isinstance(arguments, dict) else None,
                        arguments_raw="", arguments_error=arguments_error or None)
        message = self._add(Message(role="assistant", content=None, tool_calls=[call]))
        result = self._run_calls(message)[0]
        self.steps += 2  # the call delivered to the environment, its result back to the agent
        termination = None
        if name == TRANSFER_TOOL and not result.error:
            termination = "agent_transfer"
        if self.steps >= self.limits.max_steps:
            termination = "max_steps"
        if self.errors >= self.limits.max_errors:
            termination = "too_many_errors"
        if termination is not None:
            self.ended = termination
            self.ended_event.set()
        return result

    async def _agent_step(self, incoming: list[Message]) -> Message | None:
        transient = []
        for plugin in self.plugins:
            transient.extend(await plugin.before_agent_step(self.agent_steps))
        self.agent_steps += 1
        self.ctx.trajectory.bump("agent_steps")
        message = await self.agent.respond(incoming, transient)
        if self.ended is not None:  # its own tool calls ended the trial: the step's reply is dropped
            return None
        return self._add(message)

    async def play(self) -> str:
        """Run the conversation to its end; returns the termination reason."""
        try:
            to, delivery = await self._start()
        except _Stop as stop:
            return stop.termination
        termination: str | None = None
        while True:
            if to == "user":
                message = self._add(await self.user.respond(delivery))
                if message.tool_calls:
                    to, delivery = "env", [message]
                else:
                    if is_stop(message.text):
                        termination = "user_stop"
                    to, delivery = "agent", [message]
            elif to == "agent":
                message = await self._agent_step(delivery)
                if message is None:
                    return self.ended  # type: ignore[return-value]
                to, delivery = ("env", [message]) if message.tool_calls else ("user", [message])
            else:
                source = delivery[0]
                results = self._run_calls(source)
                to = "agent" if source.role == "assistant" else "user"
                delivery = results
                if source.role == "assistant" and any(
                        c.name == TRANSFER_TOOL and not r.error for c, r in zip(source.tool_calls, results)):
                    termination = "agent_transfer"
            self.steps += 1
            if to != "env":
                if self.steps >= self.limits.max_steps:
                    termination = "max_steps"
                if self.errors >= self.limits.max_errors:
                    termination = "too_many_errors"
            if termination is not None:
                return termination


def _build_agent(settings: AgentSettings, ctx: TrialContext) -> Any:
    """The arm's agent: Codex or Claude Code (``cli_agent.py``), else one of ``agentrig.agents``."""
    from .cli_agent import CLI_KINDS, CliTauAgent

    if settings.kind in CLI_KINDS:
        return CliTauAgent(settings, ctx)
    return build_agent(settings, ctx)


async def play_trial(ctx: TrialContext, *, agent: AgentSettings, user: UserSettings,
                     plugins: list[PluginSettings], limits: Limits, nl_judge: str = "auto",
                     attempt: int = 0) -> TrialRecord:
    """Play one trial and judge it, in the trial envelope (trial/envelope.py): fatal channel
    errors propagate; other infrastructure failures (the judge's included) give an invalid verdict."""

    async def body() -> Verdict:
        the_agent = _build_agent(agent, ctx)
        try:
            episode = Episode(ctx, the_agent, build_user(user, ctx), [build_plugin(p, ctx) for p in plugins], limits)
            termination = await agent_phase(ctx, episode.play(), budget=limits.trial_timeout_s, timeout="timeout",
                                            overflow_event="channel")
        finally:  # an agent with processes or servers of its own (a Python agent, cli_agent.py) ends with the conversation
            close = getattr(the_agent, "aclose", None)
            if close is not None:
                await finish_despite_cancel(close(), CLOSE_BOUND_S)
        info = await judge_trial(ctx, termination, nl=nl_judge)
        return Verdict(reward=info.reward, termination=termination, reward_info=info)

    return await play_in_envelope(ctx, body, attempt=attempt,
                                  faults=[Fault(JudgeFailed, "channel_error", lambda e: f"JUDGE_FAILED: {e}")])
