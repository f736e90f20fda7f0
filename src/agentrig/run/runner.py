"""Planning, resume and the comparability check of a run, and its summary.

    r = experiment.load("exp.toml")
    run = open_run(r, force=False)          # the run directory: store, config.json, comparability
    specs = plan(r, run.store)              # arms × tasks × trials, minus what is stored as valid
    outcome = await Executor(r, run.store, run.run_id, channels, stats).run(specs)   # executor.py

Resume is the same command again: ``plan`` leaves out every trial stored as valid.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentrig.analysis.reliability import is_success, mean_at_n, pass_hat_k
from agentrig.errors import ConfigError
from agentrig.types import TrialKey

from . import snapshot
from .experiment import ArmPlan, Resolved
from agentrig.store import rundir
from agentrig.store.rundir import STORE_FILE, Run
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


def _refusal(r: Resolved, directory: Path, diffs: list[str]) -> ConfigError:
    shown = diffs[:20]
    more = f"\n    … and {len(diffs) - 20} more" if len(diffs) > 20 else ""
    return ConfigError(
        f"{r.source}: the configuration changed since the trials in {directory} were played, so new "
        f"trials would not be comparable with them:\n" + "\n".join(f"    {d}" for d in shown) + more +
        "\n  fix: restore those settings to resume the run, or pass --force to start a new run "
        "in a new directory (the old one is kept)")


def open_run(r: Resolved, *, force: bool = False, store_file: str = STORE_FILE) -> Run:
    """Open (or create) the run directory for ``r``: store/rundir.py ``open_run`` with this
    experiment's snapshots (run/snapshot.py); refuses an incomparable configuration."""
    return rundir.open_run(r.run_dir, name=r.name, comparability=snapshot.comparability(r),
                           config_for=lambda run_id: snapshot.config_snapshot(r, run_id),
                           refusal=lambda directory, diffs: _refusal(r, directory, diffs),
                           force=force, store_file=store_file)


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
