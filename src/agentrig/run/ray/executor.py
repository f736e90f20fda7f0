"""The Ray executor: ``[run] executor = "ray"`` plays a run's trials on a Ray cluster.

The driver (``agentrig run``) plans as always, then dispatches each trial to one of a few
long-lived ``TrialWorker`` actors (run/ray/worker.py) and stores what comes back: the driver
alone writes the store, one transaction per trial (``Executor._worker``), so resume, the
comparability check, invalid-trial replay, progress and the summary are the local executor's.
Only ``play`` differs: it is a call to a worker.

- Endpoint bounds hold cluster-wide: one ``EndpointSlots`` actor per endpoint (run/ray/slots.py),
  and so does the circuit breaker: one ``EndpointBreaker`` actor per endpoint (run/ray/breaker.py);
  the driver shows its outage while it lasts and records its outages in the store.
- Keys reach the workers through the job's runtime environment (``env_vars``), sealed with a
  one-time pad that goes with the worker's creation (run/ray/secrets.py): never in clear in a task
  argument, the object store or a log (Ray's runtime-env agent logs ``env_vars``).
- Task files (τ² databases and policies, terminal task directories) go through the object store
  once, packed (run/ray/data.py): a worker on another node unpacks them into its node's cache, so
  no node needs the driver's filesystem.
- A worker that dies mid-trial (node lost, OOM, SIGKILL) makes the trial invalid with cause
  ``worker_lost``; the executor replays it as any invalid trial, on the restarted worker.
- Ctrl-C, a fatal error or the end of the run kills the run's actors; a killed driver takes its
  actors with it (Ray ends a job's actors with its driver). Nothing stored is lost either way.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import socket
import time
from datetime import datetime, timezone
from typing import Any

from agentrig.config import ROLES
from agentrig.errors import ConfigError, Diagnosis, FatalChannelError
from agentrig.types import TrialRecord, Trajectory, Verdict

from agentrig.run import outages
from agentrig.run.executor import Executor, Outcome, TrialSpec, _Fatal
from agentrig.run.ray.data import Packed, pack
from agentrig.run.ray.secrets import seal

INSTALL = "pip install 'agentrig[ray]'"
WORKER_LOST = "worker_lost"


def require_ray(source: Any = None) -> Any:
    """The ``ray`` module, or a ConfigError naming the extra to install."""
    try:
        import ray
    except ImportError:
        where = f"{source}: " if source is not None else ""
        raise ConfigError(f"{where}run.executor = \"ray\" needs Ray, which is not installed.\n"
                          f"  fix: {INSTALL} (or set executor = \"local\")") from None
    return ray


def secret_env(r: Any, environ: dict[str, str] | None = None) -> dict[str, str]:
    """The variables the workers' channels read keys and secret headers from (the roles'
    ``api_key_env`` and ``headers_from_env``), with the driver's values: the job's runtime env."""
    environ = os.environ if environ is None else environ
    names: set[str] = set()
    for arm in r.arms:
        for role in ROLES:
            rr = arm.channel.resolve(role)
            names.add(rr.api_key_env)
            names |= set(rr.headers_from_env.values())
    return {n: environ[n] for n in sorted(names) if environ.get(n)}


def _errors_to_stderr(ray: Any) -> None:
    """Ray's driver prints the cluster's error messages ("A worker died …") on stdout, where
    ``--json`` promises one JSON object: send them to stderr (where every message goes)."""
    module = getattr(getattr(ray, "_private", None), "worker", None)
    printer = getattr(module, "print_to_stdstream", None)
    if printer is None or getattr(printer, "_agentrig", False):
        return

    def to_stderr(data: dict, *args: Any, **kwargs: Any) -> Any:
        return printer({**data, "is_err": True}, *args, **kwargs)

    to_stderr._agentrig = True  # type: ignore[attr-defined]
    module.print_to_stdstream = to_stderr


def connect(r: Any) -> tuple[Any, dict[str, str]]:
    """Join the cluster at ``run.ray_address`` with the keys, sealed, in the job's runtime env;
    returns ``ray`` and the pads the workers unseal them with (run/ray/secrets.py)."""
    ray = require_ray(r.source)
    address = r.exp.run.ray_address
    fix = ("  fix: start a cluster (`ray start --head` on this machine, `ray start --address HEAD:6379` on the "
           "workers) or set ray_address to the head's address; docs/scale.md")
    if address != "auto":  # Ray would retry a dead address for minutes
        host, _, port = address.removeprefix("ray://").rpartition(":")
        try:
            socket.create_connection((host.strip("[]"), int(port)), timeout=10).close()
        except OSError as exc:
            raise ConfigError(f"{r.source}: run.ray_address = {address!r}: nothing answers there "
                              f"({exc.strerror or exc}).\n{fix}") from None
    sealed, pads = seal(secret_env(r))
    _errors_to_stderr(ray)
    try:
        local = {} if address.startswith("ray://") else {"log_to_driver": False, "include_dashboard": False}
        ray.init(address=address, runtime_env={"env_vars": sealed} if sealed else None, namespace="agentrig",
                 logging_level=logging.WARNING, **local)  # (Ray Client takes fewer options)
    except (ConnectionError, RuntimeError, ValueError, TimeoutError) as exc:
        detail = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else type(exc).__name__
        raise ConfigError(f"{r.source}: run.ray_address = {address!r}: no Ray cluster could be joined "
                          f"({detail}).\n{fix}") from None
    return ray, pads


def lost_record(spec: TrialSpec, run_id: str, exc: BaseException, started: float) -> TrialRecord:
    """The invalid attempt stored when the worker playing a trial died."""
    what = type(exc).__name__
    message = " ".join(str(exc).split())  # Ray's whole message (it names the actor), on one line
    return TrialRecord(
        key=spec.key, run_id=run_id, seed=spec.seed, attempt=spec.attempt,
        started_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        duration_s=time.perf_counter() - started, trajectory=Trajectory(),
        verdict=Verdict(valid=False, termination=WORKER_LOST,
                        invalid_cause=WORKER_LOST,  # counted by kind: each lost worker is not its own cause
                        invalid_detail=f"the Ray worker playing this trial died ({what}: {message[:500]})"))


def _lost_errors(ray: Any) -> tuple[type[BaseException], ...]:
    ex = ray.exceptions
    names = ("RayActorError", "ActorDiedError", "ActorUnavailableError", "WorkerCrashedError", "NodeDiedError",
             "ObjectLostError", "OwnerDiedError", "LocalRayletDiedError")
    return tuple(getattr(ex, n) for n in names if isinstance(getattr(ex, n, None), type))


class RayExecutor(Executor):
    """The local executor with ``play`` sent to a cluster (see the module docstring)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        self.workers: list[Any] = []
        self.tokens: list[str] = []
        self.load: list[int] = []
        self.slots: dict[str, Any] = {}
        self.breakers: dict[str, Any] = {}  # endpoint id → its EndpointBreaker actor (run/ray/breaker.py)
        self.cluster_outages: Any = None
        self.stats.outage_now = self._outage_now
        self.data: Any = None
        self.packed: Packed | None = None
        self.worker_lost = 0
        self._ray: Any = None
        self._pads: dict[str, str] = {}

    async def run(self, specs: list[TrialSpec]) -> Outcome:
        if not specs:
            return await super().run(specs)
        self.packed = pack(self.r)  # the task files workers on other nodes need (run/ray/data.py)
        self._ray, self._pads = connect(self.r)
        try:
            await self._start(len(specs))
            return await super().run(specs)
        finally:
            try:
                await self._record_outages()
            finally:
                self._teardown()

    def _outage_now(self) -> Any:
        """The cluster's outage going on now (cached from the breaker actors' watch)."""
        return self.cluster_outages.ongoing() if self.cluster_outages is not None else None

    async def _record_outages(self) -> None:
        """The session's outages, from the breaker actors, into the store (as the local executor does)."""
        if self.cluster_outages is None:
            return
        try:
            found = await asyncio.wait_for(self.cluster_outages.collect(), timeout=30)
        except (TimeoutError, *_lost_errors(self._ray)):  # the actors are gone: nothing to record
            return
        self.outages = found
        outages.record(self.store, found)

    def worker_count(self, planned: int) -> int:
        """One worker per CPU of the cluster, at most one per trial in flight."""
        cpus = int(self._ray.cluster_resources().get("CPU", 1))
        return max(1, min(self.r.exp.run.concurrency, planned, cpus))

    async def _start(self, planned: int) -> None:
        from agentrig.run.ray.breaker import ClusterOutages, EndpointBreaker
        from agentrig.run.ray.slots import EndpointSlots, endpoint_limits
        from agentrig.run.ray.worker import RunData, TrialWorker

        ray = self._ray
        slots_cls = ray.remote(EndpointSlots)
        # named actors: a worker looks them up by name when it starts or Ray restarts it (a handle
        # in a restartable actor's arguments would pin it in the object store)
        prefix = f"agentrig-{self.run_id}-{os.getpid()}"
        names: dict[str, str] = {}
        breaker_cls = ray.remote(EndpointBreaker)
        breaker_names: dict[str, str] = {}
        for eid, limit in (await endpoint_limits(self.r)).items():
            names[eid] = f"{prefix}-slots-{eid}"
            self.slots[eid] = slots_cls.options(name=names[eid], num_cpus=0, max_concurrency=100_000).remote(limit)
            breaker_names[eid] = f"{prefix}-breaker-{eid}"
            self.breakers[eid] = breaker_cls.options(name=breaker_names[eid], num_cpus=0,
                                                     max_concurrency=100_000).remote()
        self.cluster_outages = ClusterOutages(self.breakers)
        self.cluster_outages.start()
        # the experiment (parsed tasks, arms; no per-process cache), held by a small actor: each
        # worker fetches it once, through the object store; and the task files, put there once: a
        # worker on another node unpacks them into its node's cache (run/ray/data.py)
        shipped = None if self.packed is None else (self.packed.digest, [ray.put(self.packed.data)])
        self.data = ray.remote(RunData).options(name=f"{prefix}-data", num_cpus=0).remote(
            dataclasses.replace(self.r, cache={}), shipped)
        # workers on the driver's node read the files in place (under Ray Client the driver is no node)
        here = None if self.r.exp.run.ray_address.startswith("ray://") else ray.get_runtime_context().get_node_id()
        worker_cls = ray.remote(TrialWorker)
        for _ in range(self.worker_count(planned)):
            w = worker_cls.options(num_cpus=1, max_restarts=-1, max_task_retries=0, max_concurrency=100_000,
                                   scheduling_strategy="SPREAD")
            w = w.remote(f"{prefix}-data", self.run_id, names, self._pads, here, breaker_names)
            self.workers.append(w)
            self.load.append(0)
        try:
            self.tokens = list(await asyncio.gather(*(w.ready.remote() for w in self.workers)))
        except _lost_errors(ray) as exc:  # a worker could not start (its error is in the message)
            lines = [x.strip() for x in str(exc).splitlines() if x.strip()]
            raise ConfigError(f"{self.r.source}: a Ray worker could not start: {lines[-1][:500] if lines else exc}\n"
                              "  fix: install the same agentrig on every node, with a writable cache directory "
                              "(~/.cache or $XDG_CACHE_HOME) for the task files (docs/scale.md)") from None

    def _teardown(self) -> None:
        ray = self._ray
        if self.cluster_outages is not None:
            self.cluster_outages.stop()
        for actor in [*self.workers, *self.slots.values(), *self.breakers.values(),
                      *([self.data] if self.data is not None else [])]:
            try:
                ray.kill(actor, no_restart=True)
            except Exception:  # noqa: BLE001 - already gone
                pass
        self.workers.clear()
        self.slots.clear()
        self.breakers.clear()
        ray.shutdown()

    async def play(self, spec: TrialSpec) -> TrialRecord:
        i = min(range(len(self.workers)), key=self.load.__getitem__)
        worker, token = self.workers[i], self.tokens[i]
        started = time.perf_counter()
        self.load[i] += 1
        ref = worker.play.remote(spec.key.arm, spec.key.domain, spec.key.task_id, spec.key.trial, spec.seed,
                                 spec.attempt)
        try:
            status, value = await ref
        except asyncio.CancelledError:  # Ctrl-C, a fatal error elsewhere: stop the trial on the cluster
            try:
                self._ray.cancel(ref)
            except Exception:  # noqa: BLE001 - finished or gone already; the teardown kills the workers
                pass
            raise
        except _lost_errors(self._ray) as exc:
            self.worker_lost += 1
            await self._recover(i, token)
            return lost_record(spec, self.run_id, exc, started)
        finally:
            self.load[i] -= 1
        if status == "fatal":
            code, message, fix, http_status, role, trial = value
            raise _Fatal(FatalChannelError(Diagnosis(code, message, fix), status=http_status), role, trial)
        return value

    async def _recover(self, i: int, token: str) -> None:
        """A worker died: give back the slots its lost incarnation held and its turn to probe an
        endpoint that is down, then learn the token of the restarted one (Ray restarts the actor;
        its next calls wait for it)."""
        await asyncio.gather(*(a.release_all.remote(token) for a in [*self.slots.values(), *self.breakers.values()]),
                             return_exceptions=True)
        if self.tokens[i] != token:
            return  # another trial of the same worker already did this
        try:
            self.tokens[i] = await self.workers[i].ready.remote()
        except _lost_errors(self._ray):
            pass  # still restarting: its next trial will tell
