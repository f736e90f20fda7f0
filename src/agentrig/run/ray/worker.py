"""The worker side of the Ray executor: a long-lived actor that plays whole trials.

Each ``TrialWorker`` gets the resolved experiment once (from the object store: the parsed tasks,
the arms and their channel settings — never a key), builds its channels once (warm connection
pools, with the cluster-wide endpoint slots as their bound, and each endpoint's breaker tied to
the cluster's: run/ray/breaker.py) and plays the trials the driver sends
it, many at a time on its own event loop, with the local executor's ``play``: the episode, the
sandbox and the judge all run here. It returns the ``TrialRecord``; the driver stores it.

A trial is sent as its key, seed and attempt (a few bytes): the worker looks the task and the arm
up in its copy of the experiment.
"""

from __future__ import annotations

import os
import uuid
from typing import Any

from agentrig.types import TrialKey

from agentrig.run.executor import Executor, TrialSpec, _Fatal, make_channels
from agentrig.run.ray.breaker import BreakerLink
from agentrig.run.ray.data import materialize
from agentrig.run.ray.secrets import unseal
from agentrig.run.ray.slots import endpoint_id, slots_hook


class RunData:
    """Holds the run's resolved experiment for the workers (a Ray actor, no CPU), and the object
    ref of its packed task files (run/ray/data.py), in a list so that Ray passes the ref itself."""

    def __init__(self, resolved: Any, shipped: tuple[str, list[Any]] | None = None):
        self.resolved = resolved
        self.shipped = shipped

    def get(self) -> Any:
        return self.resolved

    def files(self) -> tuple[str, list[Any]] | None:
        """(the archive's digest, [its object ref]) or None: nothing to ship."""
        return self.shipped


class TrialWorker:
    """Wrapped with ``ray.remote`` by the driver (run/ray/executor.py); plain Python here."""

    def __init__(self, data: str, run_id: str, slot_names: dict[str, str], pads: dict[str, str],
                 driver_node: str | None = None, breaker_names: dict[str, str] | None = None):
        """``data``: the name of the run's ``RunData`` actor; ``slot_names``: endpoint → the name of
        its ``EndpointSlots`` actor (run/ray/slots.py); ``pads``: to unseal the keys the job's
        runtime env holds (run/ray/secrets.py); ``driver_node``: the driver's Ray node, whose
        workers read the task files where they are (None: every worker gets its copy);
        ``breaker_names``: endpoint → the name of its ``EndpointBreaker`` actor (run/ray/breaker.py)."""
        import ray

        holder = ray.get_actor(data)
        self.r = resolved = ray.get(holder.get.remote())  # through the object store
        self.data_dir = None  # where this node's copy of the task files is (run/ray/data.py)
        shipped = ray.get(holder.files.remote())
        if shipped is not None and ray.get_runtime_context().get_node_id() != driver_node:
            digest, (ref,) = shipped
            self.data_dir = materialize(resolved, digest, ray.get(ref))
        root = resolved.data_root
        if root is not None and not root.is_dir():  # the files a trial reads are not on this node
            raise RuntimeError(f"the data directory {root} ([benchmark] data) is not on node "
                               f"{ray.get_runtime_context().get_node_id()[:12]}: every node must see it at "
                               "the same path")
        self.run_id = run_id
        self.handles = {eid: ray.get_actor(name) for eid, name in slot_names.items()}
        self.breakers = {eid: ray.get_actor(name) for eid, name in (breaker_names or {}).items()}
        self.links: list[BreakerLink] = []
        self.token = uuid.uuid4().hex  # this incarnation's name with the slots and breaker actors
        self.tasks = {(domain, task.id): task for domain, task in resolved.tasks}
        self.arms = {arm.name: arm for arm in resolved.arms}
        self.executor: Executor | None = None
        self.env = {**os.environ, **unseal(pads, os.environ)}  # what its channels read keys from

    async def ready(self) -> str:
        """Warm up before the first trial (the driver waits for it while starting the workers):
        the channels and each endpoint's client (the SDK imported), and what every trial reads
        (``Benchmark.warm``: τ²'s parsed databases). Otherwise the first trials of every worker
        pay for it while the others wait for their replies."""
        from agentrig.errors import AgentrigError

        executor = self._executor()
        for arm in self.r.arms:
            channel = executor.channels[arm.name]
            for role in arm.roles_needed:
                try:
                    channel.endpoint(channel.role(role))
                except AgentrigError:  # a missing key: the first call says so, as locally
                    pass
        try:
            self.r.benchmark.warm(self.r)
        except Exception:  # noqa: BLE001 - only a head start: the trial that needs it reports the problem
            pass
        return self.token

    async def where(self) -> dict[str, Any]:
        """Where this worker runs (for tests and diagnostics)."""
        import ray

        return {"pid": os.getpid(), "node_id": ray.get_runtime_context().get_node_id(), "token": self.token,
                "data_dir": str(self.data_dir) if self.data_dir is not None else None}

    def _executor(self) -> Executor:
        if self.executor is None:  # made on the actor's event loop, at the first trial
            slots = slots_hook(self.handles, self.token)

            def hook(ep: Any) -> Any:  # an endpoint's first use (on the event loop): its slots and breaker
                handle = self.breakers.get(endpoint_id(ep.base_url, ep.fingerprint))
                if handle is not None and ep.breaker.wait_s > 0:
                    self.links.append(BreakerLink(ep.breaker, handle, self.token))
                return slots(ep)

            channels = make_channels(self.r, self.run_id, hook, self.env)
            self.executor = Executor(self.r, None, self.run_id, channels)  # type: ignore[arg-type]
        return self.executor

    async def play(self, arm: str, domain: str, task_id: str, trial: int, seed: int,
                   attempt: int) -> tuple[str, Any]:
        """("ok", TrialRecord) or ("fatal", (code, message, fix, status, role, trial label))."""
        spec = TrialSpec(TrialKey(arm=arm, domain=domain, task_id=task_id, trial=trial),
                         self.tasks[(domain, task_id)], self.arms[arm], seed, attempt)
        try:
            return "ok", await self._executor().play(spec)
        except _Fatal as fatal:
            d = fatal.error.diagnosis
            return "fatal", (d.code, d.message, d.fix, fatal.error.status, fatal.role, fatal.trial)

    async def aclose(self) -> None:
        for link in self.links:
            link.close()
        self.links.clear()
        if self.executor is not None:
            from agentrig.run.executor import close_channels

            await close_channels(self.executor.channels)
            self.executor = None
