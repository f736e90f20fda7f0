"""The circuit breaker of one endpoint: an outage costs time, never a trial.

The breaker is *armed* once the endpoint has answered a call in this process (an endpoint that
never answered is a wrong base URL or a server not started: its calls fail as before, and the
doctor's diagnosis says why). Once armed:

- **closed** (normal): attempts go out. Outage faults — a failed connection, a timeout, 502/503/504
  — are counted in a row across every call of the endpoint; any answer resets the count.
- **open**: ``THRESHOLD`` outage faults in a row (or a call that used up its attempts on failed
  connections) open it. No new attempt is dispatched; calls wait in ``admit``. One waiting call
  at a time is let through as the *probe*, first after ``PROBE_FIRST_S``, then with doubling
  pauses up to ``PROBE_MAX_S``. The probe's answer (any HTTP answer that is not an outage fault)
  closes the breaker and every waiting call resumes at once.
- an outage longer than ``outage_wait_s`` gives up: every waiting call (and any later one) raises
  ``EndpointDown`` (``ENDPOINT_DOWN``), a fatal error that stops a run as any fatal error does,
  with every finished trial kept.

An attempt that failed while the breaker was open (or that opened it) does not count against the
call's ``max_attempts``, and the time a call waits does not count against its ``deadline_s``: it
is recorded as that attempt's ``wait_s``. Each outage is kept as an ``Outage`` (start, end,
calls held, probes, the last fault) in ``Breaker.history`` and ``current()`` while it lasts.

Cluster hooks (the Ray executor's breaker actor, run/ray/breaker.py; unused, they cost one test of
``None``): ``listener`` hears this breaker's own transitions ("open", "close", "down") and its
probe's fate ("probe_failed", "release") and each new held call ("held"); ``probe_gate`` is asked,
by the call chosen locally as the probe, whether it may probe now (it waits for the cluster's turn,
False: the cluster's outage is over); ``apply_open`` / ``apply_close`` / ``apply_down`` take the
cluster's transitions without telling the listener again.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from datetime import datetime, timezone

from pydantic import BaseModel

from ..errors import Diagnosis, FatalChannelError
from ..redact import redact, redact_url
from .faults import Fault

THRESHOLD = 5  # outage faults in a row that open the breaker
PROBE_FIRST_S = 0.5
PROBE_MAX_S = 8.0
OUTAGE_STATUSES = frozenset({502, 503, 504})


def is_outage_fault(fault: Fault) -> bool:
    """A fault that says the endpoint is not answering at all (not a fault of this request)."""
    return fault.fatal is None and (fault.cause in ("connection", "timeout")
                                    or (fault.cause == "server_error" and fault.status in OUTAGE_STATUSES))


class Outage(BaseModel):
    """One outage of an endpoint, as the run records it."""

    endpoint: str  # the base URL (no key)
    started_at: str  # ISO 8601 UTC: the first failed attempt of the streak that opened the breaker
    ended_at: str | None = None  # when the endpoint answered again, or when the wait gave up
    duration_s: float = 0.0
    calls_held: int = 0  # distinct calls that waited for the endpoint
    probes: int = 0
    resumed: bool | None = None  # True: the endpoint answered; False: outage_wait_s passed; None: ongoing
    last_fault: str = ""


class EndpointDown(FatalChannelError):
    """The endpoint stayed down longer than ``outage_wait_s``."""


def _said(fault: Fault) -> str:
    return redact(f"{fault.cause}{f' {fault.status}' if fault.status else ''}: {fault.detail}")[:300]


def _iso(wall: float) -> str:
    return datetime.fromtimestamp(wall, timezone.utc).isoformat(timespec="seconds")


class Breaker:
    def __init__(self, endpoint: str, wait_s: float):
        self.endpoint = redact_url(endpoint)  # kept in the run's record: no user:password, no query
        self.wait_s = wait_s
        self.armed = False
        self.state = "closed"  # closed | open | down
        self.streak = 0
        self._streak_start: tuple[float, float] | None = None  # (monotonic, wall) of the streak's first fault
        self._outage: Outage | None = None
        self._t_open = 0.0  # monotonic start of the current outage
        self._held: set[int] = set()
        self._prober: int | None = None
        self._next_probe = 0.0
        self._pause = PROBE_FIRST_S
        self._closed: asyncio.Event | None = None
        self.history: list[Outage] = []
        self._down: EndpointDown | None = None
        self._spans: list[tuple[float, float | None]] = []  # (monotonic start, end or None): every outage
        self.listener: Callable[[str, Breaker, int], None] | None = None  # cluster hooks (module docstring)
        self.probe_gate: Callable[[int], Awaitable[bool]] | None = None

    # ----------------------------------------------------------------------------- reports

    def answered(self, token: int) -> None:
        """The endpoint answered (a completion, or a fault that is not an outage fault)."""
        self.armed = True
        self.streak = 0
        self._streak_start = None
        if self._prober == token:
            self._prober = None
        if self.state != "closed":
            self._close(resumed=True)
            if self.listener is not None:
                self.listener("close", self, token)

    def failed(self, token: int, fault: Fault, *, last_try: bool) -> bool:
        """An outage fault. True: the breaker is open, and the call is to wait (``admit``) and
        try again without counting this attempt; False: the call goes on as usual."""
        if self._prober == token:
            self._prober = None
            self._pause = min(PROBE_MAX_S, self._pause * 2)
            self._next_probe = time.monotonic() + self._pause
            if self.listener is not None:
                self.listener("probe_failed", self, token)
        if not self.armed or self.wait_s <= 0:
            return False
        if self._outage is not None:
            self._outage.last_fault = _said(fault)
        if self.state == "down":
            return False
        self.streak += 1
        if self._streak_start is None:
            self._streak_start = (time.monotonic(), time.time())
        if self.state == "closed" and (self.streak >= THRESHOLD or (last_try and fault.cause == "connection")):
            self._open(fault)
            if self.listener is not None:
                self.listener("open", self, token)
        return self.state == "open"

    # ---------------------------------------------------------------------------- waiting

    async def admit(self, token: int) -> float:
        """Wait while the breaker is open (unless this call is chosen as the probe); the seconds
        waited. Raises ``EndpointDown`` once the outage is older than ``outage_wait_s``."""
        if self.state == "closed":
            return 0.0
        if self.state == "down":
            assert self._down is not None
            raise self._down
        t0 = time.monotonic()
        if token not in self._held:
            self._held.add(token)
            if self._outage is not None:
                self._outage.calls_held = len(self._held)
            if self.listener is not None:
                self.listener("held", self, token)
        while self.state == "open":
            now = time.monotonic()
            give_up = self._t_open + self.wait_s
            if now >= give_up:
                self._give_up()
                if self.listener is not None:
                    self.listener("down", self, token)
                break
            if self._prober is None and now >= self._next_probe:
                self._prober = token
                if self.probe_gate is not None and not await self._gated(token):
                    continue
                if self._outage is not None:
                    self._outage.probes += 1
                return time.monotonic() - t0
            wake = give_up if self._prober is not None else min(give_up, self._next_probe)
            assert self._closed is not None
            try:
                await asyncio.wait_for(self._closed.wait(), timeout=max(0.01, wake - now))
            except TimeoutError:
                pass
        if self.state == "down":
            assert self._down is not None
            raise self._down
        return time.monotonic() - t0

    def release(self, token: int) -> None:
        """The call ``token`` is over (answered, failed or cancelled): it probes no more."""
        if self._prober == token:
            self._prober = None
            if self.listener is not None:
                self.listener("release", self, token)

    async def _gated(self, token: int) -> bool:
        """The call chosen here as the probe asks the cluster for its turn (``probe_gate``). False:
        it does not probe (the cluster's outage ended, or another process probes)."""
        assert self.probe_gate is not None
        try:
            ok = await self.probe_gate(token)
        except BaseException:  # cancelled while waiting for its turn: the cluster forgets it
            if self._prober == token:
                self._prober = None
                if self.listener is not None:
                    self.listener("release", self, token)
            raise
        if ok and self.state == "open":
            return True
        if self._prober == token:
            self._prober = None
            if ok and self.listener is not None:  # granted, but the outage ended here meanwhile
                self.listener("release", self, token)
        self._next_probe = time.monotonic() + PROBE_FIRST_S  # ask again later (a close or give-up wakes it)
        return False

    # ------------------------------------------------------------------- cluster transitions

    def apply_open(self, started_wall: float, age_s: float, last_fault: str) -> None:
        """The cluster's breaker of this endpoint opened ``age_s`` ago (another process saw the
        outage): hold calls here too, from the cluster's start of the outage. Already open here:
        the outage is counted from the earlier start."""
        if self.wait_s <= 0 or self.state == "down":
            return
        mono = time.monotonic() - max(0.0, age_s)
        if self.state == "open":
            if mono < self._t_open:
                self._t_open = mono
                self._spans[-1] = (mono, None)
                if self._outage is not None:
                    self._outage.started_at = _iso(started_wall)
            return
        self.armed = True  # the endpoint answered in the cluster
        self._set_open(mono, started_wall, last_fault)
        self._next_probe = time.monotonic()  # the probe gate decides when

    def apply_close(self) -> None:
        """The cluster's probe was answered: every held call here resumes."""
        if self.state == "open":
            self._close(resumed=True)

    def apply_down(self, calls_held: int | None = None) -> None:
        """The cluster gave the outage up (``outage_wait_s``): every held call here fails."""
        if self.state == "open":
            self._give_up(calls_held)

    def down_seconds_since(self, t0: float) -> float:
        """Seconds the endpoint was out (breaker open or given up) since monotonic time ``t0``."""
        now = time.monotonic()
        return sum(max(0.0, min(end if end is not None else now, now) - max(start, t0)) for start, end in self._spans)

    def current(self) -> Outage | None:
        """The outage going on now, if any (read by the progress display)."""
        if self._outage is None:
            return None
        return self._outage.model_copy(update={"duration_s": round(time.monotonic() - self._t_open, 1)})

    # ---------------------------------------------------------------------------- states

    def _open(self, fault: Fault) -> None:
        mono, wall = self._streak_start or (time.monotonic(), time.time())
        self._set_open(mono, wall, _said(fault))

    def _set_open(self, mono: float, wall: float, last_fault: str) -> None:
        self.state = "open"
        self._t_open = mono
        self._spans.append((mono, None))
        self._held = set()
        self._prober = None
        self._pause = PROBE_FIRST_S
        self._next_probe = time.monotonic() + self._pause
        self._closed = asyncio.Event()
        self._outage = Outage(endpoint=self.endpoint, started_at=_iso(wall), last_fault=last_fault)

    def _finish(self, resumed: bool) -> None:
        if self._spans and self._spans[-1][1] is None:
            self._spans[-1] = (self._spans[-1][0], time.monotonic())
        out = self._outage
        if out is not None:
            out.ended_at = _iso(time.time())
            out.duration_s = round(time.monotonic() - self._t_open, 1)
            out.resumed = resumed
            out.calls_held = len(self._held)
            self.history.append(out)
        self._outage = None
        if self._closed is not None:
            self._closed.set()

    def _close(self, resumed: bool) -> None:
        self.state = "closed"
        self.streak = 0
        self._streak_start = None
        self._prober = None
        self._finish(resumed)

    def _give_up(self, calls_held: int | None = None) -> None:
        out = self._outage
        since = out.started_at if out is not None else "?"
        held = len(self._held) if calls_held is None else calls_held
        last = f" Last: {out.last_fault}" if out is not None and out.last_fault else ""
        self._down = EndpointDown(Diagnosis(
            "ENDPOINT_DOWN",
            f"the endpoint {self.endpoint} stopped answering at {since} and was still down after "
            f"outage_wait_s={self.wait_s:g}s; {held} call(s) were waiting for it.{last}",
            "bring the server back (check it with `agentrig doctor`), then rerun the same command to resume: "
            "every finished trial is kept; raise [channel] outage_wait_s to wait longer next time",
        ))
        self.state = "down"
        self._finish(resumed=False)
