"""Planning, resume, the comparability check and the asyncio executor of a run.

    r = experiment.load("exp.toml")
    run = open_run(r, force=False)          # the run directory: store, config.json, comparability
    specs = plan(r, run.store)              # arms × tasks × trials, minus what is stored as valid
    outcome = await Executor(r, run, channels, stats).run(specs)

Resume is the same command again: ``plan`` leaves out every trial stored as valid. A trial
spoiled by the channel (an invalid verdict) is stored as an attempt and replayed, at the back of
the queue, up to ``max_invalid_retries`` times per session. A ``FatalChannelError`` stops the
run: in-flight trials are cancelled (not stored), every finished one is kept.
"""

from __future__ import annotations

import asyncio
import gc
import hashlib
import json
import secrets
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from agentrig.analysis.reliability import is_success, mean_at_n, pass_hat_k
from agentrig.bench.tau import data as tau_data
from agentrig.bench.tau.domains import get_domain
from agentrig.channel.client import Channel
from agentrig.errors import ConfigError, FatalChannelError
from agentrig.types import TrialKey, TrialRecord

from . import snapshot
from .context import TrialContext
from .episode import Limits, play_trial
from .experiment import ArmPlan, Resolved
from .store import Store

STORE_FILE = "trials.sqlite"
CONFIG_FILE = "config.json"


def trial_seed(run_seed: int, domain: str, task_id: str, trial: int) -> int:
    """The seed of one trial: a stable hash of the run seed and the trial's key, < 2**31.

    The arm is left out on purpose: trial i of a task gets the same seed in every arm, so that
    an A/B comparison is paired (the same user-simulator seed on both sides)."""
    text = f"{run_seed}\x1f{domain}\x1f{task_id}\x1f{trial}".encode()
    return int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "big") % (2**31)


# ------------------------------------------------------------------------------- run directory


@dataclass
class Run:
    dir: Path
    store: Store
    run_id: str
    created: bool  # a new run (nothing stored before)
    note: str | None = None  # e.g. why --force chose another directory

    def close(self) -> None:
        self.store.close()


def _candidates(base: Path):
    yield base
    n = 2
    while True:
        yield base.with_name(f"{base.name}-{n}")
        n += 1


def _refusal(r: Resolved, directory: Path, diffs: list[str]) -> ConfigError:
    shown = diffs[:20]
    more = f"\n    … and {len(diffs) - 20} more" if len(diffs) > 20 else ""
    return ConfigError(
        f"{r.source}: the configuration changed since the trials in {directory} were played, so new "
        f"trials would not be comparable with them:\n" + "\n".join(f"    {d}" for d in shown) + more +
        "\n  fix: restore those settings to resume the run, or pass --force to start a new run "
        "in a new directory (the old one is kept)")


def open_run(r: Resolved, *, force: bool = False, store_file: str = STORE_FILE) -> Run:
    """Open (or create) the run directory for ``r``; refuses an incomparable configuration.

    With ``force``, the first of ``dir``, ``dir-2``, ``dir-3`` … that is new or holds a
    comparable run is used (so rerunning with --force resumes the forced run)."""
    new_snap = snapshot.comparability(r)
    first_diffs: list[str] | None = None
    for directory in _candidates(r.run_dir):
        path = directory / store_file
        store = Store.open(path)
        try:
            old = store.get_meta("comparability")
            diffs = snapshot.differences(old, new_snap) if old is not None else []
            if diffs:
                if not force:
                    raise _refusal(r, directory, diffs)
                first_diffs = first_diffs if first_diffs is not None else diffs
                store.close()
                continue
            run_meta = store.get_meta("run") or {}
            run_id = run_meta.get("run_id") or _new_run_id(r.name)
            now = datetime.now(timezone.utc).isoformat(timespec="seconds")
            if not run_meta:
                store.set_meta("run", {"run_id": run_id, "name": r.name, "created_at": now})
            store.set_meta("comparability", snapshot.merged(old, new_snap) if old is not None else new_snap)
            config = snapshot.config_snapshot(r, run_id)
            store.set_meta("config", config)
            (directory / CONFIG_FILE).write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n",
                                                 encoding="utf-8")
        except BaseException:
            store.close()
            raise
        note = None
        if directory != r.run_dir:
            what = "a new run" if old is None else "the comparable run there"
            note = (f"the configuration differs from the run in {r.run_dir} ({len(first_diffs or [])} "
                    f"difference(s)); --force: using {what} in {directory}")
        return Run(directory, store, run_id, created=old is None, note=note)
    raise AssertionError("unreachable")  # pragma: no cover


def _new_run_id(name: str) -> str:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return f"{name}-{stamp}-{secrets.token_hex(3)}"


# ------------------------------------------------------------------------------------- planning


@dataclass
class TrialSpec:
    key: TrialKey
    task: Any
    arm: ArmPlan
    seed: int
    attempt: int
    replays: int = 0  # replays of this trial in this session (after invalid verdicts)


def plan(r: Resolved, store: Store) -> list[TrialSpec]:
    """Every (arm, task, trial) of the experiment not yet stored as valid, interleaved: trial 0
    of every task and arm first, then trial 1 …, so a partial run is balanced across arms."""
    done = store.valid_keys()
    counts = Counter(row.key for row in store.verdict_rows())
    out: list[TrialSpec] = []
    for trial in range(r.exp.run.trials):
        for domain, task in r.tasks:
            seed = trial_seed(r.exp.run.seed, domain, task.id, trial)
            for arm in r.arms:
                k = (arm.name, domain, task.id, trial)
                if k in done:
                    continue
                out.append(TrialSpec(TrialKey(arm=arm.name, domain=domain, task_id=task.id, trial=trial),
                                     task, arm, seed, attempt=counts.get(k, 0)))
    return out


def make_channels(r: Resolved, run_id: str) -> dict[str, Channel]:
    """One channel per arm; all share one endpoints dict (connection pools, concurrency bounds)."""
    endpoints: dict = {}
    return {arm.name: Channel(arm.channel, run_id=run_id, endpoints=endpoints) for arm in r.arms}


async def close_channels(channels: dict[str, Channel]) -> None:
    # the endpoints dict is shared: closing the first channel closes every client
    for ch in channels.values():
        await ch.aclose()


# ------------------------------------------------------------------------------------- executor


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


def stall_limit(concurrency: int) -> int:
    """Consecutive invalid attempts (no valid trial among them) after which the run stops: the
    endpoint is down or overloaded, and replaying more trials would only pile up invalid ones."""
    return max(12, 3 * concurrency)


def last_failed_role(ctx: TrialContext) -> str | None:
    for call in reversed(ctx.trajectory.model_calls):
        if call.error:
            return call.role
    return None


class _Fatal(Exception):
    def __init__(self, error: FatalChannelError, role: str | None, trial: str):
        super().__init__(str(error))
        self.error, self.role, self.trial = error, role, trial




class _CollectorTuning:
    """The cyclic collector, tuned for a run: a trial allocates ~10^5 containers (its copy of the
    state) that reference counting frees, while the long-lived data (parsed tasks, pristine dbs,
    cached gold states) would be rescanned by every full collection. So: freeze what is alive
    once the first trials have warmed the caches, and collect young objects less often."""

    def __init__(self, freeze_after: int):
        self.freeze_after = freeze_after
        self.done = 0
        self.threshold = gc.get_threshold()
        gc.collect()
        gc.freeze()
        gc.set_threshold(max(self.threshold[0], 50_000), max(self.threshold[1], 20), max(self.threshold[2], 50))

    def trial_done(self) -> None:
        self.done += 1
        if self.done == self.freeze_after:
            gc.freeze()

    def restore(self) -> None:
        gc.set_threshold(*self.threshold)
        gc.unfreeze()


@dataclass
class Executor:
    r: Resolved
    store: Store
    run_id: str
    channels: dict[str, Channel]
    stats: Stats = field(default_factory=Stats)
    on_record: Callable[[TrialRecord], None] | None = None

    def __post_init__(self) -> None:
        run = self.r.exp.run
        self.limits = Limits(max_steps=run.max_steps, max_errors=run.max_errors, trial_timeout_s=run.trial_timeout_s)
        self._stop = asyncio.Event()
        self._specs: dict[str, Any] = {}
        self._ddirs: dict[str, Path] = {}
        self._policies: dict[tuple[str, str], str] = {}
        self.stored = 0
        self._streak = 0  # invalid attempts since the last valid trial
        self._stall_limit = stall_limit(run.concurrency)
        self.stalled_cause: str | None = None

    def request_stop(self) -> None:
        """Stop soon (Ctrl-C): in-flight trials are cancelled, finished ones are kept."""
        self._stop.set()

    def context(self, spec: TrialSpec) -> TrialContext:
        domain = spec.key.domain
        if domain not in self._specs:
            self._specs[domain] = get_domain(domain)
            self._ddirs[domain] = tau_data.domain_dir(self.r.data_root, domain)
        pkey = (domain, spec.arm.agent.policy)
        if pkey not in self._policies:
            self._policies[pkey] = tau_data.load_policy(self.r.data_root, domain, spec.arm.agent.policy)
        return TrialContext(key=spec.key, task=spec.task, spec=self._specs[domain], domain_dir=self._ddirs[domain],
                            policy=self._policies[pkey], seed=spec.seed, channel=self.channels[spec.arm.name],
                            run_id=self.run_id, data_root=self.r.data_root, send_seed=self.r.exp.run.send_seed)

    async def play(self, spec: TrialSpec) -> TrialRecord:
        ctx = self.context(spec)
        try:
            return await play_trial(ctx, agent=spec.arm.agent, user=self.r.exp.user, plugins=spec.arm.plugins,
                                    limits=self.limits, nl_judge=self.r.exp.judge.nl_assertions,
                                    attempt=spec.attempt)
        except FatalChannelError as exc:
            raise _Fatal(exc, last_failed_role(ctx), spec.key.label()) from None

    async def _worker(self, queue: asyncio.Queue[TrialSpec]) -> None:
        max_replays = self.r.exp.run.max_invalid_retries
        while True:
            spec = await queue.get()
            try:
                self.stats.in_flight += 1
                try:
                    record = await self.play(spec)
                finally:
                    self.stats.in_flight -= 1
                if self.store.append(record):
                    self.stored += 1
                self._gc.trial_done()
                again = not record.verdict.valid and spec.replays < max_replays
                self.stats.add(record, final=not again)
                if record.verdict.valid:
                    self._streak = 0
                else:
                    self._streak += 1
                    if self._streak >= self._stall_limit and self.stalled_cause is None:
                        self.stalled_cause = record.verdict.invalid_cause or "invalid trials"
                        self._stop.set()
                if self.on_record is not None:
                    self.on_record(record)
                if again:
                    self.stats.replays += 1
                    queue.put_nowait(TrialSpec(spec.key, spec.task, spec.arm, spec.seed,
                                               attempt=spec.attempt + 1, replays=spec.replays + 1))
            finally:
                queue.task_done()

    async def run(self, specs: list[TrialSpec]) -> Outcome:
        self.stats.planned = len(specs)
        if not specs:
            return Outcome("done")
        queue: asyncio.Queue[TrialSpec] = asyncio.Queue()
        for s in specs:
            queue.put_nowait(s)
        n = min(self.r.exp.run.concurrency, len(specs))
        self._gc = _CollectorTuning(freeze_after=2 * n)
        workers = [asyncio.create_task(self._worker(queue), name=f"trial-worker-{i}") for i in range(n)]
        joined = asyncio.create_task(queue.join())
        stopped = asyncio.create_task(self._stop.wait())
        complete = False
        try:
            await asyncio.wait([joined, stopped, *workers], return_when=asyncio.FIRST_COMPLETED)
            complete = joined.done() and not joined.cancelled()
        finally:
            for t in (joined, stopped, *workers):
                t.cancel()
            results = await asyncio.gather(*workers, return_exceptions=True)
            await asyncio.gather(joined, stopped, return_exceptions=True)
            self._gc.restore()
        errors = [e for e in results if isinstance(e, BaseException) and not isinstance(e, asyncio.CancelledError)]
        fatal = next((e for e in errors if isinstance(e, _Fatal)), None)
        if fatal is not None:
            return Outcome("fatal", self.stored, fatal.error, fatal.role, fatal.trial)
        if errors:
            raise errors[0]
        if not complete and self.stalled_cause is not None:
            return Outcome("stalled", self.stored, stalled_cause=self.stalled_cause)
        if not complete:
            return Outcome("interrupted", self.stored)
        return Outcome("done", self.stored)


# ------------------------------------------------------------------------------------- summary


def _reliability(per_task: dict, trials: int) -> dict[str, Any]:
    counts = {key: (len(v), sum(v)) for key, v in per_task.items()}
    full = {key: nc for key, nc in counts.items() if nc[0] >= trials}
    pass_k, used = pass_hat_k(full, trials) if full else (None, 0)
    mean = mean_at_n(full)
    return {"k": trials, "pass_k": pass_k, "pass_k_tasks": used,
            "gap": (mean - pass_k) if pass_k is not None and mean is not None else None}


def summarize(r: Resolved, store: Store) -> dict[str, Any]:
    """Per arm, over this experiment's trial keys: counts, mean reward, pass^1, tokens, retries."""
    tasks = {(d, t.id) for d, t in r.tasks}
    trials = r.exp.run.trials
    by_arm: dict[str, dict[str, Any]] = {}
    rows = store.verdict_rows()
    for arm in r.arms:
        mine = [x for x in rows if x.arm == arm.name and (x.domain, x.task_id) in tasks and x.trial < trials]
        valid = [x for x in mine if x.valid]
        valid_keys = {x.key for x in valid}
        invalid_keys = {x.key for x in mine if not x.valid} - valid_keys
        per_task: dict[tuple[str, str], list[bool]] = {}
        for x in valid:
            per_task.setdefault((x.domain, x.task_id), []).append(is_success(x.reward))
        causes = Counter(x.invalid_cause or "unknown" for x in mine if not x.valid)
        by_arm[arm.name] = {
            "planned": len(tasks) * trials,
            "valid": len(valid_keys),
            "invalid": len(invalid_keys),
            "missing": len(tasks) * trials - len(valid_keys) - len(invalid_keys),
            "invalid_attempts": sum(1 for x in mine if not x.valid),
            "mean_reward": (sum(x.reward for x in valid) / len(valid)) if valid else None,
            "pass_1": (sum(sum(v) / len(v) for v in per_task.values()) / len(per_task)) if per_task else None,
            # pass^k at k = trials over the tasks with every trial valid; gap = Mean@n - pass^n
            **_reliability(per_task, trials),
            "prompt_tokens": sum(x.prompt_tokens for x in mine),
            "completion_tokens": sum(x.completion_tokens for x in mine),
            "retries": sum(x.retries for x in mine),
            "invalid_causes": dict(causes.most_common()),
        }
    return by_arm
