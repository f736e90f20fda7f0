"""The circuit breaker of an endpoint, held across a Ray cluster: one ``EndpointBreaker`` actor per
endpoint (the same endpoints as the slots actors, run/ray/slots.py).

Every worker keeps its own ``Breaker`` (channel/breaker.py) for each endpoint, wired to the
endpoint's actor by a ``BreakerLink``:

- the first worker whose breaker opens tells the actor, and every other worker's breaker of the
  endpoint opens at once (from the cluster's start of the outage: ``outage_wait_s`` and a trial's
  OUTAGE verdict count from there), so their calls wait in ``admit`` instead of failing one by one;
- at most one probe is in flight across the cluster: the call a worker picks as its probe asks
  the actor for its turn (``probe``), which keeps breaker.py's schedule (first after
  ``PROBE_FIRST_S``, then doubling up to ``PROBE_MAX_S``) for the whole cluster;
- the probe's answer closes the actor's breaker, and every worker's held calls resume; an outage
  older than ``outage_wait_s`` is given up everywhere (``ENDPOINT_DOWN``).

Workers learn the cluster's state by a long-poll ``watch(known_epoch)``: the actor answers only
when its state changed, so without an outage nothing is sent. The driver follows the same watch
for the progress display (``ClusterOutages``) and stores the actor's record of every outage in the
run's meta (run/outages.py). A worker that dies while it is the prober is forgotten
(``release_all``, from the driver's worker_lost path); a probe lease that expires does the same
if nobody tells.
"""

from __future__ import annotations

import asyncio
import time
from datetime import datetime, timezone
from typing import Any

from agentrig.channel.breaker import PROBE_FIRST_S, PROBE_MAX_S, Breaker, Outage

LEASE_S = 300.0  # a probe not reported within this is taken as lost (its worker is gone)


def _iso(wall: float) -> str:
    return datetime.fromtimestamp(wall, timezone.utc).isoformat(timespec="seconds")


class EndpointBreaker:
    """The cluster's view of one endpoint (a Ray async actor: every method runs on its loop).
    ``holder``: a worker incarnation's token; ``call``: the call's token in that worker;
    ``known``: the epoch the worker had seen when it spoke (a stale word is ignored)."""

    def __init__(self, lease_s: float = LEASE_S):
        self.lease_s = lease_s
        self.state = "closed"  # closed | open | down
        self.epoch = 0  # +1 at every open, close and give-up
        self.open_epoch = 0  # the epoch the current (or last) outage opened at
        self.outage: Outage | None = None
        self.history: list[Outage] = []
        self.t_open = 0.0  # monotonic, here
        self.started_wall = 0.0
        self.wait_s = 600.0
        self.prober: tuple[str, int] | None = None
        self.lease_until = 0.0
        self.pause = PROBE_FIRST_S
        self.next_probe = 0.0
        self.held_by: dict[str, int] = {}
        self.withdrawn: set[tuple[str, int]] = set()
        self.dead: set[str] = set()
        self._changed = asyncio.Event()

    # ----------------------------------------------------------------------------- helpers

    def _poke(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    async def _wait(self, timeout: float | None) -> None:
        changed = self._changed
        try:
            await asyncio.wait_for(changed.wait(), timeout=None if timeout is None else max(0.01, timeout))
        except TimeoutError:
            pass

    def _current(self, known: int) -> bool:
        """The worker's word is about this outage: it had seen the state this outage opened from."""
        return self.state == "open" and known >= self.open_epoch - 1

    def _finish(self, state: str, resumed: bool) -> None:
        self.state = state
        self.epoch += 1
        self.prober = None
        self.withdrawn.clear()
        out = self.outage
        if out is not None:
            out.ended_at = _iso(time.time())
            out.duration_s = round(time.monotonic() - self.t_open, 1)
            out.resumed = resumed
            self.history.append(out)
        self.outage = None
        self._poke()

    def _check_give_up(self) -> None:
        if self.state == "open" and time.monotonic() >= self.t_open + self.wait_s:
            self._finish("down", resumed=False)

    # ------------------------------------------------------------------------ workers' words

    async def opened(self, holder: str, known: int, endpoint: str, age_s: float, last_fault: str,
                     wait_s: float) -> None:
        """A worker's breaker opened (``age_s`` ago, by its first failed attempt)."""
        now = time.monotonic()
        if self.state == "open":  # two workers saw it at once: the earlier start counts
            if self._current(known) and now - age_s < self.t_open:
                self.t_open, self.started_wall = now - age_s, time.time() - age_s
                assert self.outage is not None
                self.outage.started_at = _iso(self.started_wall)
            return
        if self.state != "closed" or known not in (self.epoch, -1):
            return  # stale (the worker had not seen the last close yet) or given up already
        self.state, self.wait_s = "open", wait_s
        self.epoch += 1
        self.open_epoch = self.epoch
        self.t_open, self.started_wall = now - age_s, time.time() - age_s
        self.outage = Outage(endpoint=endpoint, started_at=_iso(self.started_wall), last_fault=last_fault)
        self.prober, self.pause, self.held_by = None, PROBE_FIRST_S, {}
        self.next_probe = self.t_open + PROBE_FIRST_S
        self._poke()

    async def answered(self, holder: str, known: int) -> None:
        """A worker's breaker closed: the endpoint answered one of its calls (the probe's, mostly)."""
        if self._current(known):
            self._finish("closed", resumed=True)

    async def gave_up(self, holder: str, known: int) -> None:
        if self._current(known):
            self._finish("down", resumed=False)

    async def held(self, holder: str, known: int, calls: int) -> None:
        """How many distinct calls of this worker wait for the endpoint in this outage."""
        if self._current(known) and self.outage is not None:
            self.held_by[holder] = max(calls, self.held_by.get(holder, 0))
            self.outage.calls_held = sum(self.held_by.values())

    async def probe(self, holder: str, call: int) -> bool:
        """Wait for this call's turn to probe: True, it probes now (the only probe in flight);
        False, the outage is over (answered or given up) or the call was withdrawn."""
        me = (holder, call)
        while self.state == "open":
            if me in self.withdrawn or holder in self.dead:
                self.withdrawn.discard(me)
                return False
            now = time.monotonic()
            self._check_give_up()
            if self.state != "open":
                break
            if self.prober is not None and now >= self.lease_until:
                self.prober = None  # its worker never told: taken as lost
            if self.prober is None and now >= self.next_probe:
                self.prober, self.lease_until = me, now + self.lease_s
                if self.outage is not None:
                    self.outage.probes += 1
                return True
            wake = self.lease_until if self.prober is not None else self.next_probe
            await self._wait(min(wake, self.t_open + self.wait_s) - now)
        self.withdrawn.discard(me)
        return False

    async def probe_failed(self, holder: str, call: int, last_fault: str) -> None:
        if self.prober != (holder, call):
            return
        self.prober = None
        self.pause = min(PROBE_MAX_S, self.pause * 2)
        self.next_probe = time.monotonic() + self.pause
        if self.outage is not None and last_fault:
            self.outage.last_fault = last_fault
        self._poke()

    async def released(self, holder: str, call: int) -> None:
        """The call is over (cancelled) without a probe's answer: it probes no more."""
        if self.prober == (holder, call):
            self.prober = None
            self._poke()
        elif self.state == "open":
            self.withdrawn.add((holder, call))  # still waiting in ``probe`` (or about to)
            self._poke()

    async def release_all(self, holder: str) -> bool:
        """A worker incarnation died: it probes no more, and its waits are dropped."""
        self.dead.add(holder)
        lost = self.prober is not None and self.prober[0] == holder
        if lost:
            self.prober = None
        self._poke()
        return lost

    # ------------------------------------------------------------------------------- reading

    async def snapshot(self) -> dict[str, Any]:
        out = self.outage
        age = time.monotonic() - self.t_open if self.state != "closed" else 0.0
        return {"epoch": self.epoch, "state": self.state, "age_s": age, "started_wall": self.started_wall,
                "last_fault": out.last_fault if out is not None else "",
                "calls_held": out.calls_held if out is not None else sum(self.held_by.values()),
                "outage": None if out is None else out.model_copy(update={"duration_s": round(age, 1)}).model_dump()}

    async def watch(self, known: int) -> dict[str, Any]:
        """The state, once it differs from epoch ``known`` (at once for a newcomer: ``known=-1``)."""
        while self.epoch == known:
            await self._wait(None)
        return await self.snapshot()

    async def outages(self) -> list[dict[str, Any]]:
        """Every outage of this session, finished or not, oldest first."""
        found = [o.model_dump() for o in self.history]
        current = (await self.snapshot())["outage"]
        return [*found, current] if current is not None else found

    async def stats(self) -> dict[str, Any]:
        return {"state": self.state, "epoch": self.epoch, "prober": self.prober,
                "probes": self.outage.probes if self.outage is not None else None}


# ------------------------------------------------------------------------------- worker side


class BreakerLink:
    """Ties a worker's ``Breaker`` of one endpoint to the endpoint's actor (made on the worker's
    event loop, when its channel first uses the endpoint)."""

    def __init__(self, breaker: Breaker, handle: Any, holder: str):
        self.b, self.h, self.holder = breaker, handle, holder
        self.known = -1
        breaker.listener = self._heard
        breaker.probe_gate = self._gate
        self.task = asyncio.get_running_loop().create_task(self._watch(), name="agentrig-breaker-watch")

    def _heard(self, event: str, b: Breaker, call: int) -> None:
        h, holder, known = self.h, self.holder, self.known
        out = b.current()
        if event == "open" and out is not None:
            h.opened.remote(holder, known, b.endpoint, out.duration_s, out.last_fault, b.wait_s)
        elif event == "close":
            h.answered.remote(holder, known)
        elif event == "down":
            h.gave_up.remote(holder, known)
        elif event == "held" and out is not None:
            h.held.remote(holder, known, out.calls_held)
        elif event == "probe_failed":
            h.probe_failed.remote(holder, call, out.last_fault if out is not None else "")
        elif event == "release":
            h.released.remote(holder, call)

    async def _gate(self, call: int) -> bool:
        try:
            return bool(await self.h.probe.remote(self.holder, call))
        except asyncio.CancelledError:
            raise
        except Exception:  # noqa: BLE001 - the actor is gone (the run is ending): probe as alone
            return True

    def apply(self, snap: dict[str, Any]) -> None:
        self.known = snap["epoch"]
        state = snap["state"]
        if state == "closed":
            self.b.apply_close()
            return
        self.b.apply_open(snap["started_wall"], snap["age_s"], snap["last_fault"])
        if state == "down":
            self.b.apply_down(snap["calls_held"])

    async def _watch(self) -> None:
        while True:
            try:
                snap = await self.h.watch.remote(self.known)
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - the actor is gone: the run is over
                return
            self.apply(snap)

    def close(self) -> None:
        self.task.cancel()


# ------------------------------------------------------------------------------- driver side


class ClusterOutages:
    """The driver's view: the outage going on now (cached for the progress display, which reads
    it from its own thread) and, at the end, every outage of the session."""

    REFRESH_S = 1.0  # while an outage lasts: its calls held and probes

    def __init__(self, handles: dict[str, Any]):
        self.handles = handles
        self.now: dict[str, tuple[Outage, float]] = {}  # endpoint id → (outage, monotonic when read)
        self.tasks: list[asyncio.Task] = []

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        self.tasks = [loop.create_task(self._follow(eid, h)) for eid, h in self.handles.items()]

    async def _follow(self, eid: str, h: Any) -> None:
        known = -1
        try:
            while True:
                snap = await h.watch.remote(known)
                while snap["state"] == "open" and snap["outage"] is not None:
                    self.now[eid] = (Outage.model_validate(snap["outage"]), time.monotonic())
                    await asyncio.sleep(self.REFRESH_S)
                    snap = await h.snapshot.remote()
                self.now.pop(eid, None)
                known = snap["epoch"]
        except asyncio.CancelledError:
            raise
        except Exception:  # noqa: BLE001 - the actor is gone: the run is over
            self.now.pop(eid, None)

    def ongoing(self) -> Outage | None:
        """The outage going on now (the longest, if several endpoints are down)."""
        found = []
        for out, read in list(self.now.values()):
            found.append(out.model_copy(update={"duration_s": round(out.duration_s + time.monotonic() - read, 1)}))
        return max(found, key=lambda o: o.duration_s) if found else None

    async def collect(self) -> list[Outage]:
        """Every outage of this session on every endpoint, oldest first."""
        found: list[Outage] = []
        for listed in await asyncio.gather(*(h.outages.remote() for h in self.handles.values())):
            found.extend(Outage.model_validate(o) for o in listed)
        return sorted(found, key=lambda o: o.started_at)

    def stop(self) -> None:
        for t in self.tasks:
            t.cancel()
        self.tasks = []
        self.now.clear()
