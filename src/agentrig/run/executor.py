"""The asyncio executor of a run: at most ``concurrency`` trials in flight, one store transaction
per finished trial; and what it plays: a ``TrialSpec`` (its key, task, arm, seed, attempt) through
one channel per arm (``make_channels``).

A trial spoiled by the channel (an invalid verdict) is stored as an attempt and replayed, at the
back of the queue, up to ``max_invalid_retries`` times per session; a long row of spoiled
attempts stops the run (``stalled``). A ``FatalChannelError`` stops the run: in-flight trials are
cancelled (not stored), every finished one is kept. ``request_stop`` (Ctrl-C) does the same:
from the moment a stop is asked nothing more is stored — a trial that comes back after it (one
whose sandbox died of the same Ctrl-C, or whose cancellation something inside swallowed, as
Python 3.11's ``asyncio.wait_for`` does when what it waits for ends in the same instant) is
dropped, not stored as an attempt, and its worker ends; a worker still running is cancelled
again until it ends, so a swallowed cancellation never keeps the run going.
So does a server that silently cuts prompts: when most of the session's first trial attempts
(``TRUNCATION_SAMPLE``) come back invalid with ``PROMPT_TRUNCATED``, the run stops as for a fatal
error (code ``PROMPT_TRUNCATED``, with the fix: the server's window), since every further trial
would be cut the same way; the ceiling such trials show is held against every other trial, and
the sample's valid trials are stored once it is complete (run/truncation.py) — or when the run
stops: they finished before the stop, so they are kept like every finished trial. An endpoint that
goes down mid-run holds its calls in the channel (channel/breaker.py): its trials wait rather than
come back invalid; the session's outages are recorded in the store at the end (run/outages.py).
"""

from __future__ import annotations

import asyncio
import gc
import hashlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from agentrig import in_command, loading
from agentrig.analysis.reliability import is_success
from agentrig.benchmark import SETTLES, Limits
from agentrig.procs import finish_despite_cancel
from agentrig.trial.truncation import TRUNCATION_FIX
from agentrig.errors import Diagnosis, FatalChannelError, Signal
from agentrig.types import TrialKey, TrialRecord

from . import outages
from .truncation import CutCeilings
from agentrig.trial.context import TrialContext
from .experiment import ArmPlan, Resolved
from agentrig.store.store import Store

if TYPE_CHECKING:
    from agentrig.channel.client import Channel


def trial_seed(run_seed: int, domain: str, task_id: str, trial: int) -> int:
    """The seed of one trial: a stable hash of the run seed and the trial's key, < 2**31.

    The arm is left out on purpose: trial i of a task gets the same seed in every arm, so that
    an A/B comparison is paired (the same user-simulator seed on both sides)."""
    text = f"{run_seed}\x1f{domain}\x1f{task_id}\x1f{trial}".encode()
    return int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "big") % (2**31)


@dataclass
class TrialSpec:
    key: TrialKey
    task: Any
    arm: ArmPlan
    seed: int
    attempt: int
    replays: int = 0  # replays of this trial in this session (after invalid verdicts)


def make_channels(r: Resolved, run_id: str, slots: Any = None, env: Any = None) -> dict[str, Channel]:
    """One channel per arm; all share one endpoints dict (connection pools, concurrency bounds).
    ``slots``, ``env``: a Ray worker's (cluster-wide endpoint bounds; the keys it unsealed)."""
    with loading():
        from agentrig.channel.client import Channel  # the OpenAI SDK: loaded only when a trial is to be played

    endpoints: dict = {}
    return {arm.name: Channel(arm.channel, run_id=run_id, endpoints=endpoints, slots=slots, env=env)
            for arm in r.arms}


async def close_channels(channels: dict[str, Channel]) -> None:
    # the endpoints dict is shared: closing the first channel closes every client
    for ch in channels.values():
        await ch.aclose()


@dataclass
class Stats:
    """Counts of this session, read by the progress display (from its own thread)."""

    planned: int = 0
    finished: int = 0  # trials done for this session: valid, or invalid after the last replay
    valid: int = 0
    successes: int = 0
    failed: int = 0  # valid trials that did not succeed (agent failures)
    invalid: int = 0  # trials still invalid after their replays
    invalid_attempts: int = 0
    replays: int = 0
    reward_sum: float = 0.0
    tokens: int = 0
    call_retries: int = 0
    in_flight: int = 0
    # the endpoint outage going on now, if any (run/outages.py; set by the executor)
    outage_now: Callable[[], Any] | None = None

    @property
    def mean_reward(self) -> float | None:
        return self.reward_sum / self.valid if self.valid else None

    def add(self, record: TrialRecord, final: bool) -> None:
        for call in record.trajectory.model_calls:
            self.tokens += call.usage.prompt_tokens + call.usage.completion_tokens
            self.call_retries += call.retries
        v = record.verdict
        if v.valid:
            self.valid += 1
            self.finished += 1
            self.reward_sum += v.reward
            if is_success(v.reward):
                self.successes += 1
            else:
                self.failed += 1
        else:
            self.invalid_attempts += 1
            if final:
                self.invalid += 1
                self.finished += 1


@dataclass
class Outcome:
    status: str  # "done", "fatal", "stalled", "interrupted"
    stored: int = 0
    fatal: FatalChannelError | None = None
    fatal_role: str | None = None
    fatal_trial: str | None = None
    stalled_cause: str | None = None  # "stalled": the cause of the last invalid attempts
    outages: list = field(default_factory=list)  # this session's endpoint outages (run/outages.py)


TRUNCATION_SAMPLE = 5  # the first trial attempts of a session looked at for silent truncation


def truncation_stop(truncated: int, seen: int, planned: int) -> bool:
    """Most of the first ``min(planned, TRUNCATION_SAMPLE)`` attempts were cut (``seen`` of them
    finished so far, ``truncated`` of those invalid with PROMPT_TRUNCATED)."""
    sample = min(planned, TRUNCATION_SAMPLE)
    return seen <= sample and truncated >= sample // 2 + 1


def stall_limit(concurrency: int) -> int:
    """Consecutive invalid attempts (no valid trial among them) after which the run stops: the
    endpoint is down or overloaded, and replaying more trials would only pile up invalid ones."""
    return max(12, 3 * concurrency)


def last_failed_role(ctx: TrialContext) -> str | None:
    for call in reversed(ctx.trajectory.model_calls):
        if call.error:
            return call.role
    return None


class _Fatal(Signal):
    def __init__(self, error: FatalChannelError, role: str | None, trial: str):
        super().__init__(str(error))
        self.error, self.role, self.trial = error, role, trial




SETTLE_BOUND_S = 60.0  # the trials' leftover teardowns get this long at the run's end
RECANCEL_S = 0.5  # a worker still running this long after its cancellation is cancelled again


async def _cancel_until_done(tasks: list[asyncio.Task]) -> None:
    """Cancel ``tasks`` and wait for them, cancelling again the ones that swallowed it (a trial
    awaiting ``asyncio.wait_for`` on a process that ended in the same instant goes on in 3.11)."""
    pending = {t for t in tasks if not t.done()}
    while pending:
        for t in pending:
            t.cancel()
        _, pending = await asyncio.wait(pending, timeout=RECANCEL_S)


def _result(task: asyncio.Task) -> BaseException | None:
    if task.cancelled():
        return asyncio.CancelledError()
    return task.exception()


class _CollectorTuning:
    """The cyclic collector, tuned for a run: a trial allocates ~10^5 containers (its copy of the
    state) that reference counting frees, while the long-lived data (parsed tasks, pristine dbs,
    cached gold states) would be rescanned by every full collection. So: freeze what is alive
    once the first trials have warmed the caches, and collect young objects less often."""

    def __init__(self, freeze_after: int):
        self.freeze_after = freeze_after
        self.done = 0
        self.threshold = gc.get_threshold()
        gc.collect(1)  # the young generations only: a full pass over the imported modules (~60 ms) finds nothing
        gc.freeze()
        gc.set_threshold(max(self.threshold[0], 50_000), max(self.threshold[1], 20), max(self.threshold[2], 50))

    def trial_done(self) -> None:
        self.done += 1
        if self.done == self.freeze_after:
            gc.freeze()

    def restore(self) -> None:
        gc.set_threshold(*self.threshold)
        if not in_command():  # a library user gets its heap back; the command keeps it frozen to its exit
            gc.unfreeze()


@dataclass
class Executor:
    """``channels``: one per arm; None: the executor makes them (``make_channels``; with ``cache``,
    a replay cache attached, store/replay_cache.py) and closes them when ``run`` ends."""

    r: Resolved
    store: Store
    run_id: str
    channels: dict[str, Channel] | None = None
    stats: Stats = field(default_factory=Stats)
    on_record: Callable[[TrialRecord], None] | None = None
    cache: Any = None

    def __post_init__(self) -> None:
        self._own_channels = self.channels is None
        if self.channels is None:
            self.channels = make_channels(self.r, self.run_id)
            if self.cache is not None:  # [channel] cache = "replay" (store/replay_cache.py)
                self.cache.attach(self.channels)
        run = self.r.exp.run
        self.limits = Limits(max_steps=run.max_steps, max_errors=run.max_errors, trial_timeout_s=run.trial_timeout_s)
        self.bench = self.r.benchmark  # plays the trials (benchmark.py)
        self._stop = asyncio.Event()
        self.stopping = False  # a stop was asked (request_stop): nothing more is stored
        self._loop: asyncio.AbstractEventLoop | None = None  # the loop of ``run`` (request_stop from a signal handler)
        self.stored = 0
        self._streak = 0  # invalid attempts since the last valid trial
        self._stall_limit = stall_limit(run.concurrency)
        self.stalled_cause: str | None = None
        self._seen = self._truncated = 0  # attempts finished / cut by the server, this session
        self.truncation: _Fatal | None = None
        self.cuts = CutCeilings(self._endpoint_of)  # the server's ceiling across trials (run/truncation.py)
        self.outages: list = []  # this session's endpoint outages (channel/breaker.py), recorded in the store
        self.stats.outage_now = lambda: outages.ongoing(self.channels)

    def _endpoint_of(self, arm: str, role: str) -> tuple[str, ...]:
        try:
            rr = self.channels[arm].role(role)
            return (rr.base_url.strip().rstrip("/"), rr.model or "")
        except Exception:  # noqa: BLE001 - a role the channel cannot resolve has a ceiling of its own
            return (arm, role)

    def request_stop(self) -> None:
        """Stop soon (Ctrl-C): in-flight trials are cancelled, finished ones are kept; nothing is
        stored from now on. Safe to call from a signal handler (``stopping`` is set at once; the
        event is set by the loop)."""
        self.stopping = True
        loop = self._loop
        if loop is not None and loop.is_running():
            loop.call_soon_threadsafe(self._stop.set)
        else:
            self._stop.set()

    def accepting(self) -> bool:
        """No stop asked yet: a finished trial may be stored. (A call, so that a signal that came
        just before runs its Python handler first: the check sees it.)"""
        return not self.stopping and not self._stop.is_set()

    def context(self, spec: TrialSpec) -> TrialContext:
        ctx = TrialContext(key=spec.key, task=spec.task, seed=spec.seed, channel=self.channels[spec.arm.name],
                           run_id=self.run_id, data_root=self.r.data_root, send_seed=self.r.exp.run.send_seed)
        return self.bench.trial_context(self.r, spec, ctx)

    async def play(self, spec: TrialSpec) -> TrialRecord:
        ctx = self.context(spec)
        try:
            return await self.bench.play(self.r, ctx, spec.arm, self.limits, spec.attempt)
        except FatalChannelError as exc:
            raise _Fatal(exc, last_failed_role(ctx), spec.key.label()) from None

    async def _worker(self, queue: asyncio.Queue[TrialSpec]) -> None:
        while self.accepting():
            spec = await queue.get()
            try:
                self.stats.in_flight += 1
                try:
                    record = await self.play(spec)
                finally:
                    self.stats.in_flight -= 1
                if not self.accepting():  # it came back after the stop (Ctrl-C): dropped, like a cancelled one
                    return
                self._gc.trial_done()
                if self.on_record is not None:  # its spend counts now (run/budget.py), even if it is held
                    self.on_record(record)
                # judged against what other trials showed of the server's ceiling (run/truncation.py)
                for done, judged in self.cuts.admit(spec, record):
                    self._finish(done, judged, queue)
            finally:
                queue.task_done()

    def _finish(self, spec: TrialSpec, record: TrialRecord, queue: asyncio.Queue[TrialSpec] | None) -> None:
        """Store a finished attempt, count it, and queue its replay (not once the run stops: no ``queue``)."""
        max_replays = self.r.exp.run.max_invalid_retries
        if self.store.append(record):
            self.stored += 1
        # a trial whose clock ran out while an outage held its calls (trial/context.py) is
        # replayed without using up a replay or feeding the stall count: the breaker alone
        # decides when an outage is too long (outage_wait_s)
        outage = (record.verdict.invalid_cause or "").startswith("OUTAGE:")
        again = not record.verdict.valid and (outage or spec.replays < max_replays)
        self.stats.add(record, final=not again)
        self._watch_truncation(record)
        if record.verdict.valid:
            self._streak = 0
        elif outage:
            pass
        else:
            self._streak += 1
            if self._streak >= self._stall_limit and self.stalled_cause is None:
                self.stalled_cause = record.verdict.invalid_cause or "invalid trials"
                self._stop.set()
        if again and queue is not None:
            self.stats.replays += 1
            queue.put_nowait(TrialSpec(spec.key, spec.task, spec.arm, spec.seed,
                                       attempt=spec.attempt + 1, replays=spec.replays + (not outage)))

    def _watch_truncation(self, record: TrialRecord) -> None:
        self._seen += 1
        cause = record.verdict.invalid_cause or ""
        if record.verdict.valid or not cause.startswith("PROMPT_TRUNCATED"):
            return
        self._truncated += 1
        if self.truncation is None and truncation_stop(self._truncated, self._seen, self.stats.planned):
            cut = next((e.data for e in reversed(record.trajectory.events) if e.kind == "prompt_truncated"), {})
            role = cut.get("role")
            sample = min(self.stats.planned, TRUNCATION_SAMPLE)
            error = FatalChannelError(Diagnosis(
                "PROMPT_TRUNCATED",
                f"the server silently cut the prompt in {self._truncated} of the first {sample} trial attempts, so "
                f"the run stopped early (every trial would be cut the same way). Last: {cause.split(': ', 1)[-1]}",
                cut.get("fix") or TRUNCATION_FIX), status=200)
            self.truncation = _Fatal(error, role, record.key.label())
            self._stop.set()

    async def run(self, specs: list[TrialSpec]) -> Outcome:
        self.stats.planned = len(specs)
        self.cuts.sample = min(len(specs), TRUNCATION_SAMPLE)
        self._loop = asyncio.get_running_loop()
        try:
            return await self._run(specs)
        finally:
            if self._own_channels:
                await close_channels(self.channels)

    async def _run(self, specs: list[TrialSpec]) -> Outcome:
        if not specs:
            return Outcome("done")
        queue: asyncio.Queue[TrialSpec] = asyncio.Queue()
        for s in specs:
            queue.put_nowait(s)
        n = min(self.r.exp.run.concurrency, len(specs))
        self._gc = _CollectorTuning(freeze_after=2 * n)
        settles = SETTLES.set(True)  # the workers' trials may leave their teardown to ``bench.settle``
        workers = [asyncio.create_task(self._worker(queue), name=f"trial-worker-{i}") for i in range(n)]
        SETTLES.reset(settles)
        joined = asyncio.create_task(queue.join())
        stopped = asyncio.create_task(self._stop.wait())
        complete = False
        try:
            await asyncio.wait([joined, stopped, *workers], return_when=asyncio.FIRST_COMPLETED)
            complete = joined.done() and not joined.cancelled()
        finally:
            self.stopping = True  # from here on nothing is stored (a trial that still comes back is dropped)
            joined.cancel()
            stopped.cancel()
            await _cancel_until_done(workers)
            # what the trials left running (a sandbox's removal) ends before the run does, Ctrl-C or not
            await finish_despite_cancel(self.bench.settle(), SETTLE_BOUND_S)
            results = [_result(t) for t in workers]
            await asyncio.gather(joined, stopped, return_exceptions=True)
            for spec, record in self.cuts.flush():  # the sample's trials still held: finished, so kept
                self._finish(spec, record, None)
            self._gc.restore()
            self.outages = outages.record_session(self.store, self.channels)
        errors = [e for e in results if isinstance(e, BaseException) and not isinstance(e, asyncio.CancelledError)]
        fatal = next((e for e in errors if isinstance(e, _Fatal)), None)
        if fatal is not None:
            return Outcome("fatal", self.stored, fatal.error, fatal.role, fatal.trial)
        if errors:
            raise errors[0]
        if self.truncation is not None:
            t = self.truncation
            return Outcome("fatal", self.stored, t.error, t.role, t.trial)
        if not complete and self.stalled_cause is not None:
            return Outcome("stalled", self.stored, stalled_cause=self.stalled_cause)
        if not complete:
            return Outcome("interrupted", self.stored)
        return Outcome("done", self.stored)
