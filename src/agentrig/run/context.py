"""What one trial's participants share: the task, the domain, the channel, the trajectory.

The episode builds one ``TrialContext`` per trial and hands it to the agent, the user simulator,
the plug-ins and the judge. Every model call of a trial goes through ``TrialContext.complete``,
which records a ``ModelCall`` in the trajectory — also when the call fails — so that usage and
retries are stored with the trial whatever happens.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentrig.errors import ChannelError
from agentrig.types import CallContext, Completion, ModelCall, PluginEvent, TrialKey, Trajectory

if TYPE_CHECKING:
    from agentrig.channel.client import Channel


@dataclass(kw_only=True)
class TrialContext:
    key: TrialKey
    task: Any  # the benchmark's task (τ²: bench.tau.taskmodel.Task)
    seed: int
    # τ²'s (the benchmark builds the context): the domain's DomainSpec, its data dir, the policy text
    spec: Any = None
    domain_dir: Path | None = None
    policy: str = ""
    channel: Channel | None = None
    run_id: str | None = None
    data_root: Path | None = None
    # send the trial's seed with every model call whose role sets no seed of its own
    send_seed: bool = True
    trajectory: Trajectory = field(default_factory=Trajectory)
    # the trial's Environment, set by the episode (the judge may read its end state)
    env: Any = None
    rng: random.Random = field(init=False)
    started: float = field(default_factory=time.perf_counter)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)

    @property
    def turn(self) -> int:
        """The index the next message will get."""
        return len(self.trajectory.messages)

    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def call_context(self) -> CallContext:
        return CallContext(run=self.run_id, arm=self.key.arm, domain=self.key.domain,
                           task=self.key.task_id, trial=self.key.trial)

    async def complete(self, role: str, messages: list[dict], tools: list[dict] | None = None, *,
                       purpose: str | None = None, **kwargs: Any) -> tuple[Completion, int]:
        """One model call through the channel, recorded in the trajectory.

        Returns the completion and the index of its ``ModelCall`` (for ``Message.call``).
        A ``ChannelError`` is recorded (``ModelCall.error``) and re-raised."""
        if self.channel is None:
            raise RuntimeError(f"role '{role}' needs a model, but this trial has no channel")
        calls = self.trajectory.model_calls
        turn = self.turn
        if self.send_seed:
            kwargs.setdefault("seed", self.seed)
        try:
            done = await self.channel.complete(role, messages, tools, self.call_context(), **kwargs)
        except ChannelError as exc:
            calls.append(ModelCall(role=role, purpose=purpose or role, turn=turn,
                                   model=self.channel.role(role).model or "",
                                   attempts=list(getattr(exc, "attempts", None) or []),
                                   error=getattr(getattr(exc, "diagnosis", None), "code", None) or type(exc).__name__))
            raise
        calls.append(ModelCall(role=role, purpose=purpose or role, turn=turn, model=done.model,
                               usage=done.usage, latency_s=done.latency_s, attempts=done.attempts,
                               finish_reason=done.finish_reason, request_id=done.request_id))
        return done, len(calls) - 1

    def event(self, plugin: str, kind: str, **data: Any) -> None:
        self.trajectory.events.append(PluginEvent(plugin=plugin, turn=self.turn, kind=kind, data=data))
