"""What one trial's participants share: the task, the domain, the channel, the trajectory.

The episode builds one ``TrialContext`` per trial and hands it to the agent, the user simulator,
the plug-ins and the judge. Every model call of a trial goes through ``TrialContext.complete``,
which records a ``ModelCall`` in the trajectory — also when the call fails — so that usage and
retries are stored with the trial whatever happens.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentrig.trial.truncation import TruncationWatch, request_chars
from agentrig.errors import ChannelError, ContextOverflow, PromptTruncated
from agentrig.types import AgentRequest, CallContext, Completion, ModelCall, PluginEvent, TrialKey, Trajectory

if TYPE_CHECKING:
    from agentrig.channel.client import Channel


@dataclass(kw_only=True)
class TrialContext:
    key: TrialKey
    task: Any  # the benchmark's task (τ²: bench.tau.taskmodel.Task)
    seed: int
    # the benchmark's own part of the context, set by its ``trial_context`` (τ²: bench.tau.domain.TauTrial
    # — the domain's spec, its data directory, the policy text); None for benchmarks that need none
    bench: Any = None
    channel: Channel | None = None
    run_id: str | None = None
    data_root: Path | None = None
    # send the trial's seed with every model call whose role sets no seed of its own
    send_seed: bool = True
    trajectory: Trajectory = field(default_factory=Trajectory)
    rng: random.Random = field(init=False)
    started: float = field(default_factory=time.perf_counter)
    # silent truncation: every answered request's prompt_tokens against its size (trial/truncation.py)
    truncation: TruncationWatch = field(default_factory=TruncationWatch)
    # the previous agent-role request (messages, tools), for the deltas of Trajectory.agent_requests
    _last_request: tuple[list, Any] | None = field(default=None, init=False, repr=False)
    # [channel] cache = "replay": this attempt's view of the run's response cache (store/replay_cache.py)
    _replay: Any = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)

    def _record_request(self, call: int, messages: list[dict], tools: list[dict] | None,
                        kwargs: dict[str, Any]) -> None:
        """Store an agent request as a delta of the previous one (``AgentRequest``). Messages are
        compared by identity, then by value: agents append new dicts and replace (never mutate)
        the ones they change."""
        keep, same_tools = 0, False
        if self._last_request is not None:
            previous, previous_tools = self._last_request
            limit = min(len(previous), len(messages))
            while keep < limit and (previous[keep] is messages[keep] or previous[keep] == messages[keep]):
                keep += 1
            same_tools = previous_tools is tools or previous_tools == tools
        tail = json.loads(json.dumps(messages[keep:], ensure_ascii=False))
        params = {k: v for k, v in kwargs.items() if k != "seed"}
        self.trajectory.agent_requests.append(AgentRequest(
            call=call, keep=keep, tail=tail, same_tools=same_tools,
            tools=None if same_tools or tools is None else json.loads(json.dumps(tools)), params=params))
        self._last_request = (list(messages), tools)

    @property
    def turn(self) -> int:
        """The index the next message will get."""
        return len(self.trajectory.messages)

    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def outage_s(self) -> float:
        """Seconds of this trial during which an endpoint of its channel was out (channel/breaker.py)."""
        seconds = getattr(self.channel, "outage_seconds", None)
        return seconds(self.elapsed()) if seconds is not None else 0.0

    def outage_verdict_cause(self) -> str | None:
        """Why a trial whose clock ran out is invalid rather than failed: an outage held its calls
        (an outage costs time, never a trial). None when there was no outage in the trial."""
        down = self.outage_s()
        if down <= 0:
            return None
        return (f"OUTAGE: the trial's time limit ran out after the endpoint had been down for {down:.0f}s "
                "of it; replayed as a channel fault, not counted as the agent's timeout")

    def call_context(self) -> CallContext:
        return CallContext(run=self.run_id, arm=self.key.arm, domain=self.key.domain,
                           task=self.key.task_id, trial=self.key.trial)

    async def complete(self, role: str, messages: list[dict], tools: list[dict] | None = None, *,
                       purpose: str | None = None, **kwargs: Any) -> tuple[Completion, int]:
        """One model call through the channel, recorded in the trajectory.

        Returns the completion and the index of its ``ModelCall`` (for ``Message.call``).
        A ``ChannelError`` is recorded (``ModelCall.error``) and re-raised; a ``ContextOverflow``
        gets ``first`` (the role had no answered call in this trial before) and ``request_chars``.
        An answer whose usage shows a cut prompt is recorded, then ``PromptTruncated`` is raised
        (the trial is invalid: ``trial/truncation.py``)."""
        if self.channel is None:
            raise RuntimeError(f"role '{role}' needs a model, but this trial has no channel")
        calls = self.trajectory.model_calls
        turn = self.turn
        if self.send_seed:
            kwargs.setdefault("seed", self.seed)
        sent_at = round(time.time(), 3)
        replay, hit = self._replay_view(), None
        if replay is not None:  # the same trial's stored answer to this request: no endpoint call
            request, occurrence, hit = replay.lookup(role, self.channel.role(role), messages, tools, kwargs)
        asked = None  # the role's first live call: the channel learns the server while it is answered
        if hit is None and self.truncation.first_request(role) and hasattr(self.channel, "server_info"):
            asked = asyncio.ensure_future(self.channel.server_info(role))
        try:
            done = hit if hit is not None else \
                await self.channel.complete(role, messages, tools, self.call_context(), **kwargs)
        except BaseException as exc:
            if asked is not None:
                asked.cancel()  # the channel's own question goes on (shared, cached); this wait does not
            if not isinstance(exc, ChannelError):
                raise
            calls.append(ModelCall(role=role, purpose=purpose or role, turn=turn, sent_at=sent_at,
                                   model=self.channel.role(role).model or "",
                                   attempts=list(getattr(exc, "attempts", None) or []),
                                   latency_s=exc.elapsed_s,
                                   error=getattr(getattr(exc, "diagnosis", None), "code", None) or type(exc).__name__))
            if role == "agent":
                self._record_request(len(calls) - 1, messages, tools, kwargs)
            if isinstance(exc, ContextOverflow):
                exc.first = not any(c.role == role and c.error is None for c in calls[:-1])
                exc.request_chars = request_chars(messages) + (
                    len(json.dumps(tools, ensure_ascii=False, separators=(",", ":"))) if tools else 0)
            raise
        calls.append(ModelCall(role=role, purpose=purpose or role, turn=turn, model=done.model, sent_at=sent_at,
                               usage=done.usage, latency_s=done.latency_s, attempts=done.attempts,
                               finish_reason=done.finish_reason, request_id=done.request_id))
        if role == "agent":
            self._record_request(len(calls) - 1, messages, tools, kwargs)
        server = None
        if self.truncation.first_request(role) and hasattr(self.channel, "server_info"):
            # once per endpoint and model, then cached (asked as the call went out: no wait after it)
            server = await (asked if asked is not None else self.channel.server_info(role))
        cut = self.truncation.check(role, messages, done.usage, tools, server)
        if cut is not None:
            self.event("channel", "prompt_truncated", role=role, call=len(calls) - 1,
                       prompt_tokens=done.usage.prompt_tokens, request_chars=request_chars(messages),
                       window=server.window if server is not None else None, fix=cut.fix)
            raise PromptTruncated(cut, status=200, attempts=list(done.attempts))
        if replay is not None and hit is None:
            replay.keep(request, occurrence, done)
        return done, len(calls) - 1

    def _replay_view(self) -> Any:
        if self._replay is None:
            cache = getattr(self.channel, "replay_cache", None)
            if cache is not None:
                from agentrig.store.replay_cache import TrialReplay

                self._replay = TrialReplay(cache, self.key)
        return self._replay

    def event(self, plugin: str, kind: str, **data: Any) -> None:
        self.trajectory.events.append(PluginEvent(plugin=plugin, turn=self.turn, kind=kind, data=data))
