"""Silent truncation across a run's trials: what one trial cannot tell alone.

A trial's own watch (``trial/truncation.py``) catches a cut prompt from the usage of the same
conversation (the count stopped growing while the messages grew), or from the server's window when
the run could ask it (Ollama's ``/api/ps``, llama.cpp's ``/props``). Behind a gateway — one base
URL in front of the servers — the window cannot be asked, and a trial whose roles each sent one
request past the window (the agent answers once, the user stops) has nothing to compare: its one
cut request looks like any other. The run sees more than the trial:

- **the ceiling.** A trial whose count stopped growing (or fell under the request's size) shows
  where the server cuts: the count it stopped at (``prompt_truncated``'s ``prompt_tokens``). The
  run keeps that ceiling per endpoint and model (``CutCeilings.learn``). A cut found against a
  window the server told is not learned from: every trial is held against that window already.
- **the trials at the ceiling.** From then on a valid trial with a request of the same endpoint
  and model counted at that ceiling (within ``CEILING``, 90 %, either side of it) was cut like the
  others: the server filled its window and answered, so the trial is invalid ``PROMPT_TRUNCATED``
  (``CutCeilings.judge``). A request that really ends in the last tenth of such a window is judged
  the same way — on a server that cuts, it had no room left to answer in either.
- **the sample held.** The executor's early stop looks at the session's first attempts
  (``TRUNCATION_SAMPLE``). A valid trial among them with a request of ``MIN_CUT_TOKENS`` (512)
  prompt tokens or more is held (not stored) until the sample is complete or the run stops, then
  judged against the ceilings learned meanwhile: so it does not matter which of the sample's
  trials finishes first (``CutCeilings.admit`` / ``flush``). Later trials are judged when they
  finish; a trial stored before any ceiling was learned, after the sample, stays as it is.

Only the stored records are read (their model calls' usage, their ``prompt_truncated`` events), so
the Ray executor's driver judges the same way as the local one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agentrig.trial.truncation import CEILING, MIN_CUT_TOKENS, TRUNCATION_FIX
from agentrig.types import PluginEvent, TrialRecord, Verdict

CAUSE_CHARS = 500  # as trial/envelope.py's


@dataclass(frozen=True)
class Ceiling:
    tokens: int  # the count the server's prompt_tokens stopped at
    trial: str  # the trial that showed it
    role: str
    fix: str


@dataclass
class CutCeilings:
    """The ceilings learned in a session, the sample's held trials. ``endpoint(arm, role)``: the
    key of the endpoint and model that role of that arm calls (roles sharing one share its ceiling)."""

    endpoint: Callable[[str, str], Any]
    sample: int = 0  # the first attempts held back (set when the run's plan is known)
    ceilings: dict[Any, Ceiling] = field(default_factory=dict)
    held: list[tuple[Any, TrialRecord]] = field(default_factory=list)
    finished: int = 0

    def learn(self, record: TrialRecord) -> None:
        """The ceiling a cut trial shows (its last ``prompt_truncated`` event)."""
        cause = record.verdict.invalid_cause or ""
        if record.verdict.valid or not cause.startswith("PROMPT_TRUNCATED"):
            return
        cut = next((e.data for e in reversed(record.trajectory.events) if e.kind == "prompt_truncated"), None)
        if not cut or not cut.get("role") or cut.get("window") is not None:
            return  # a window the server told: the trials' own window rule holds every trial against it
        tokens = cut.get("prompt_tokens") or 0
        if tokens < MIN_CUT_TOKENS:
            return
        key = self.endpoint(record.key.arm, cut["role"])
        if key not in self.ceilings or tokens > self.ceilings[key].tokens:
            self.ceilings[key] = Ceiling(tokens, record.key.label(), cut["role"], cut.get("fix") or TRUNCATION_FIX)

    def judge(self, record: TrialRecord) -> TrialRecord:
        """The record, made invalid ``PROMPT_TRUNCATED`` when a request of a valid trial was counted
        at a learned ceiling."""
        if not record.verdict.valid or not self.ceilings:
            return record
        for i, call in enumerate(record.trajectory.model_calls):
            if call.error or not call.usage.reported:
                continue
            ceiling = self.ceilings.get(self.endpoint(record.key.arm, call.role))
            counted = call.usage.prompt_tokens + (call.usage.cached_tokens or 0)
            if ceiling is None or not CEILING * ceiling.tokens <= counted <= ceiling.tokens / CEILING:
                continue
            same = "" if ceiling.role == call.role else f" (role '{ceiling.role}', same endpoint and model)"
            message = (f"the server cut role '{call.role}''s prompt: it counted {counted:,} prompt tokens, at the "
                       f"ceiling where the server cut the prompt of trial {ceiling.trial}{same} ({ceiling.tokens:,} "
                       f"tokens): the endpoint does not tell its window, and a prompt counted at that ceiling was "
                       f"cut to fit it, so the model did not see all of it")
            trajectory = record.trajectory.model_copy(deep=True)
            trajectory.events.append(PluginEvent(plugin="channel", turn=call.turn, kind="prompt_truncated", data={
                "role": call.role, "call": i, "prompt_tokens": call.usage.prompt_tokens, "window": ceiling.tokens,
                "learned_from": ceiling.trial, "fix": ceiling.fix}))
            verdict = Verdict(valid=False, termination="channel_error",
                              invalid_cause=f"PROMPT_TRUNCATED: {message}"[:CAUSE_CHARS])
            return record.model_copy(update={"trajectory": trajectory, "verdict": verdict})
        return record

    def admit(self, spec: Any, record: TrialRecord) -> list[tuple[Any, TrialRecord]]:
        """The finished attempts to store now, judged: none while a sample trial is held, the whole
        sample when it is complete."""
        self.finished += 1
        self.learn(record)
        if self.finished <= self.sample and record.verdict.valid and _large(record):
            self.held.append((spec, record))
            out = []
        else:
            out = [(spec, self.judge(record))]
        if self.held and self.finished >= self.sample:
            out += self.flush()
        return out

    def flush(self) -> list[tuple[Any, TrialRecord]]:
        """Every held attempt, judged (the sample is complete, or the run stops)."""
        out, self.held = self.held, []
        return [(spec, self.judge(record)) for spec, record in out]


def _large(record: TrialRecord) -> bool:
    return any(c.usage.reported and c.usage.prompt_tokens + (c.usage.cached_tokens or 0) >= MIN_CUT_TOKENS
               for c in record.trajectory.model_calls if c.error is None)
