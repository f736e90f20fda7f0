"""Planning, resume and the comparability check of a run, and its summary.

    r = experiment.load("exp.toml")
    run = open_run(r, force=False)          # the run directory: store, config.json, comparability
    specs = plan(r, run.store)              # arms × tasks × trials, minus what is stored as valid
    outcome = await Executor(r, run.store, run.run_id, channels, stats).run(specs)   # executor.py

Resume is the same command again: ``plan`` leaves out every trial stored as valid.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentrig.analysis.reliability import is_success, mean_at_n, pass_hat_k
from agentrig.errors import ConfigError
from agentrig.types import TrialKey

from . import snapshot
from .experiment import ArmPlan, Resolved
from agentrig.store.rundir import CONFIG_FILE, STORE_FILE
from agentrig.store.store import Store

if TYPE_CHECKING:
    from agentrig.channel.client import Channel


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


def make_channels(r: Resolved, run_id: str, slots: Any = None, env: Any = None) -> dict[str, Channel]:
    """One channel per arm; all share one endpoints dict (connection pools, concurrency bounds).
    ``slots``, ``env``: a Ray worker's (cluster-wide endpoint bounds; the keys it unsealed)."""
    from agentrig.channel.client import Channel  # the OpenAI SDK: loaded only when a trial is to be played

    endpoints: dict = {}
    return {arm.name: Channel(arm.channel, run_id=run_id, endpoints=endpoints, slots=slots, env=env)
            for arm in r.arms}


async def close_channels(channels: dict[str, Channel]) -> None:
    # the endpoints dict is shared: closing the first channel closes every client
    for ch in channels.values():
        await ch.aclose()


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
