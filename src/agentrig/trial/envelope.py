"""The trial envelope: the one place where "infrastructure faults are not agent failures" is written.

Every benchmark plays a trial as a *body* inside this envelope::

    async def body() -> Verdict:
        ...                                              # set up, play the agent, judge
        termination = await agent_phase(ctx, agent.run(session), budget=limits.trial_timeout_s)
        ...
        return Verdict(reward=…, termination=termination, reward_info=…)

    return await play_in_envelope(ctx, body, attempt=attempt,
                                  faults=[Fault(SandboxError, "sandbox_error", lambda e: f"sandbox: {e}")])

``play_in_envelope`` starts the trial's clock, awaits the body and turns what goes wrong on the
infrastructure's side into an **invalid** verdict (the executor stores it as an attempt and replays
the trial; it never counts as the agent's failure):

- a model call whose retries are exhausted (``RetriesExhausted``) or whose answer shows a silently
  cut prompt (``PromptTruncated``) → ``channel_error``, cause ``"CODE: message"``;
- the agent's time ran out while an endpoint outage held its calls (``OutageTimeout``, raised by
  ``agent_phase``) → ``channel_error``;
- each of the benchmark's own infrastructure exceptions (``faults``: a sandbox that cannot start,
  a dead AppWorld worker, a judge that never answered…) → the termination and cause it names.

A ``FatalChannelError`` (a wrong key, an unknown model, a window too small for the task's first
request) is not caught: the run stops. The record is always built here: key, run id, seed, attempt,
start time, duration, the trajectory and the verdict.

``agent_phase`` bounds the agent's part of a trial by its time budget and maps how it ended: the
budget reached (``agent_timeout``, or the benchmark's own name for it), an ``AgentStop`` (its
termination), a ``ContextOverflow`` in the middle of the trial (``context_overflow``, valid; on a
role's first request it is the window that is too small: ``CONTEXT_TOO_SMALL`` propagates). When
the budget ran out while an outage held the model calls, it raises ``OutageTimeout``.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Awaitable, Callable, Literal, Sequence

from agentrig.channel.faults import window_too_small
from agentrig.errors import AgentStop, ContextOverflow, InfrastructureFault, PromptTruncated, RetriesExhausted
from agentrig.types import TrialRecord, Verdict

__all__ = ["CAUSE_CHARS", "Fault", "OutageTimeout", "agent_phase", "play_in_envelope"]

CAUSE_CHARS = 500  # characters of an invalid trial's cause kept in its verdict


class OutageTimeout(InfrastructureFault):
    """The agent's time ran out while an endpoint outage held its model calls (trial/context.py)."""


@dataclass(frozen=True)
class Fault:
    """One of a benchmark's infrastructure exceptions: the trial is invalid, with this termination
    and the cause ``cause(exc)``."""

    exceptions: type[BaseException] | tuple[type[BaseException], ...]
    termination: str
    cause: Callable[[BaseException], str] = str


def _channel_cause(exc: BaseException) -> str:
    return f"{exc.code}: {exc.diagnosis.message}"  # type: ignore[attr-defined]


_CHANNEL_FAULTS = (
    Fault((RetriesExhausted, PromptTruncated), "channel_error", _channel_cause),
    Fault(OutageTimeout, "channel_error"),
)


async def play_in_envelope(ctx: Any, body: Callable[[], Awaitable[Verdict]], *, attempt: int = 0,
                           faults: Sequence[Fault] = ()) -> TrialRecord:
    """Play ``body`` as one trial of ``ctx`` (a ``TrialContext``) and build its record."""
    started_at = datetime.now(timezone.utc).isoformat()
    ctx.started = time.perf_counter()
    handled = (*faults, *_CHANNEL_FAULTS)
    try:
        verdict = await body()
    except tuple(t for f in handled for t in (f.exceptions if isinstance(f.exceptions, tuple) else (f.exceptions,))) as exc:
        fault = next(f for f in handled if isinstance(exc, f.exceptions))
        verdict = Verdict(valid=False, termination=fault.termination, invalid_cause=fault.cause(exc)[:CAUSE_CHARS])
    return TrialRecord(key=ctx.key, run_id=ctx.run_id or "", seed=ctx.seed, attempt=attempt,
                       started_at=started_at, duration_s=round(ctx.elapsed(), 6),
                       trajectory=ctx.trajectory, verdict=verdict)


def _timed_out(ctx: Any, timeout: str) -> str:
    outage = ctx.outage_verdict_cause()
    if outage is not None:  # an outage held the agent's calls: its clock ran out on the channel
        raise OutageTimeout(outage)
    return timeout


async def agent_phase(ctx: Any, play: Awaitable[str | None], *, budget: float | None,
                      timeout: str = "agent_timeout", timeout_detail: str | None = None,
                      overflow_event: Literal["agent", "channel"] = "agent") -> str:
    """Await the agent's part of the trial within ``budget`` seconds; returns its termination.

    ``play`` returns the termination of a phase that ended by itself (``None``: the benchmark
    decides after). ``timeout`` names the budget's end; with ``timeout_detail`` it is recorded as an
    ``agent``/``stop`` event. A context overflow is recorded as an ``agent``/``stop`` event, or as
    a ``channel``/``context_overflow`` event with the sizes (``overflow_event="channel"``)."""
    try:
        async with asyncio.timeout(budget) as clock:
            termination = await play
    except TimeoutError:
        if not clock.expired():
            raise
        if timeout_detail is not None:
            ctx.event("agent", "stop", termination=timeout, detail=timeout_detail)
        return _timed_out(ctx, timeout)
    except AgentStop as stop:
        ctx.event("agent", "stop", termination=stop.termination, detail=stop.detail[:500])
        # an agent that saw its own time run out (e.g. a command cut by the deadline) stops the same way
        return _timed_out(ctx, timeout) if stop.termination == timeout else stop.termination
    except ContextOverflow as exc:  # an agent that cannot shorten its context, a user simulator, a plug-in
        role = next((c.role for c in reversed(ctx.trajectory.model_calls) if c.error), None)
        if exc.first:
            raise window_too_small(exc, role, ctx.key.label()) from None
        if overflow_event == "channel":
            ctx.event("channel", "context_overflow", role=role, prompt_tokens=exc.prompt_tokens, window=exc.window,
                      detail=exc.diagnosis.message[:500])
        else:
            ctx.event("agent", "stop", termination="context_overflow", detail=exc.diagnosis.message[:500])
        return "context_overflow"
    return termination  # type: ignore[return-value]
