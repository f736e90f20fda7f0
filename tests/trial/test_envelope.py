"""The trial envelope (trial/envelope.py): the one place where infrastructure faults become invalid
verdicts and never agent failures, with a real TrialContext.

- a body's verdict is the record's; the record carries the key, the seed, the attempt and a duration;
- exhausted retries and a silently cut prompt → invalid ``channel_error`` with the code;
- a benchmark's own fault (named by the benchmark) → invalid with the benchmark's termination;
- a fatal channel error and any other exception propagate (the run stops; a bug is not hidden);
- ``agent_phase``: a stop names the termination; the budget's end is the timeout termination,
  or an invalid ``channel_error`` when an outage held the calls; a mid-trial context overflow is a
  valid ``context_overflow``, a first-request one stops the run (``CONTEXT_TOO_SMALL``).
"""

from __future__ import annotations

import asyncio

import pytest

from agentrig.errors import (AgentStop, AuthError, ContextOverflow, Diagnosis, FatalChannelError, PromptTruncated,
                             RetriesExhausted)
from agentrig.trial.context import TrialContext
from agentrig.trial.envelope import Fault, agent_phase, play_in_envelope
from agentrig.types import ModelCall, TrialKey, Verdict


class SandboxBroke(Exception):
    pass


class Outage:
    """A channel whose endpoint was down for the given seconds of the trial (what ctx asks)."""

    def __init__(self, seconds: float):
        self.seconds = seconds

    def outage_seconds(self, _elapsed: float) -> float:
        return self.seconds


def ctx(channel=None) -> TrialContext:
    return TrialContext(key=TrialKey(arm="a", domain="g", task_id="t1", trial=2), task=None, seed=7, run_id="r",
                        channel=channel)


def play(c: TrialContext, body, **kw):
    return asyncio.run(play_in_envelope(c, body, attempt=3, **kw))


def diag(code: str) -> Diagnosis:
    return Diagnosis(code, f"{code} happened", "fix it")


def test_the_body_s_verdict_is_the_record_s():
    async def body():
        await asyncio.sleep(0.01)
        return Verdict(reward=1.0, termination="done")

    rec = play(ctx(), body)
    assert rec.verdict.valid and rec.verdict.reward == 1.0 and rec.verdict.termination == "done"
    assert (rec.key.task_id, rec.seed, rec.attempt, rec.run_id) == ("t1", 7, 3, "r")
    assert rec.duration_s >= 0.01 and rec.started_at


@pytest.mark.parametrize("exc", [RetriesExhausted(diag("RATE_LIMITED")), PromptTruncated(diag("PROMPT_TRUNCATED"))])
def test_channel_faults_make_the_trial_invalid(exc):
    async def body():
        raise exc

    v = play(ctx(), body).verdict
    assert not v.valid and v.termination == "channel_error"
    assert v.invalid_cause.startswith(f"{exc.diagnosis.code}: {exc.diagnosis.code} happened")


def test_a_benchmark_s_own_fault_is_named_by_the_benchmark():
    async def body():
        raise SandboxBroke("the sandbox died")

    v = play(ctx(), body, faults=[Fault(SandboxBroke, "sandbox_error", lambda e: f"sandbox: {e}")]).verdict
    assert (v.valid, v.termination, v.invalid_cause) == (False, "sandbox_error", "sandbox: the sandbox died")
    long = play(ctx(), lambda: _raise(SandboxBroke("x" * 2000)), faults=[Fault(SandboxBroke, "sandbox_error")]).verdict
    assert len(long.invalid_cause) == 500


async def _raise(exc):
    raise exc


@pytest.mark.parametrize("exc", [AuthError(diag("AUTH_REJECTED")), ValueError("a bug")])
def test_fatal_errors_and_bugs_propagate(exc):
    with pytest.raises(type(exc)):
        play(ctx(), lambda: _raise(exc), faults=[Fault(SandboxBroke, "sandbox_error")])


def phase(c: TrialContext, coro, **kw) -> str:
    return asyncio.run(agent_phase(c, coro, **kw))


def test_agent_phase_endings():
    c = ctx()
    assert phase(c, _value("submitted"), budget=5) == "submitted"
    assert phase(c, _raise(AgentStop("format_errors", "three bad replies")), budget=5) == "format_errors"
    assert c.trajectory.events[-1].kind == "stop" and c.trajectory.events[-1].data["termination"] == "format_errors"
    assert phase(c, asyncio.sleep(5), budget=0.05, timeout_detail="time is up") == "agent_timeout"
    assert c.trajectory.events[-1].data == {"termination": "agent_timeout", "detail": "time is up"}
    assert phase(c, asyncio.sleep(5), budget=0.05, timeout="timeout") == "timeout"


async def _value(v):
    return v


def test_a_timeout_during_an_outage_is_the_channel_s():
    c = ctx(channel=Outage(30.0))
    with pytest.raises(Exception) as info:
        phase(c, asyncio.sleep(5), budget=0.05)
    rec = play(c, lambda: agent_phase(c, asyncio.sleep(5), budget=0.05))
    assert type(info.value).__name__ == "OutageTimeout"
    assert not rec.verdict.valid and rec.verdict.termination == "channel_error"
    assert rec.verdict.invalid_cause.startswith("OUTAGE:")
    # an agent that saw its own deadline pass stops the same way
    rec = play(c, lambda: agent_phase(c, _raise(AgentStop("agent_timeout", "deadline")), budget=5))
    assert rec.verdict.termination == "channel_error"


def test_context_overflow_mid_trial_is_valid_and_on_the_first_request_stops_the_run():
    c = ctx()
    c.trajectory.model_calls.append(ModelCall(role="agent", purpose="agent", turn=0, model="m", error="CONTEXT_OVERFLOW"))
    mid = ContextOverflow(diag("CONTEXT_OVERFLOW"))
    mid.first = False
    assert phase(c, _raise(mid), budget=5, overflow_event="channel") == "context_overflow"
    assert c.trajectory.events[-1].plugin == "channel" and c.trajectory.events[-1].data["role"] == "agent"
    first = ContextOverflow(diag("CONTEXT_OVERFLOW"))
    first.first = True
    with pytest.raises(FatalChannelError) as info:
        phase(c, _raise(first), budget=5)
    assert info.value.diagnosis.code == "CONTEXT_TOO_SMALL"
