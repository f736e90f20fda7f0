"""``agentrig run exp.toml --smoke``: one task once per arm, every role the arm calls exercised.

The smoke trials go to their own store (``<run dir>/smoke/trials.sqlite``, replaced each time),
never to the run's. That directory is a run directory of its own — its configuration snapshot
(``config.json`` and the store's ``config`` meta, ``"smoke": true``) names the one task played
once — so ``agentrig export``, ``analyze`` and ``report`` read it like any run. A role the arm
calls that the trial did not (a memory plug-in that did not trigger on this task) — or whose call
failed — gets one small direct call, sent as the trial's own calls are (its arm, domain, task and
trial headers), so that every role ends with "ok" or the doctor's diagnosis (code, message, fix).
A role configured with a model that the arm never calls (``[roles.memory]`` for an arm without the
memory plug-in) is not checked: ``roles_to_check``, which the doctor's ``--config`` follows too.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from agentrig.config import ROLES
from agentrig.errors import ChannelError, ConfigError, FatalChannelError
from agentrig.types import CallContext, TrialKey

from .experiment import ArmPlan, Resolved
from . import snapshot
from .executor import Executor, TrialSpec, close_channels, last_failed_role, make_channels, trial_seed
from agentrig.store.owner import claim, make_dir
from agentrig.store.rundir import CONFIG_FILE, write_config
from agentrig.store.store import Store

PROBE = [{"role": "user", "content": "Reply with the single word OK."}]


@dataclass
class RoleCheck:
    role: str
    status: str  # ok | fail
    detail: str = ""
    code: str | None = None
    fix: str | None = None


@dataclass
class ArmSmoke:
    arm: str
    task: str
    valid: bool | None = None
    reward: float | None = None
    termination: str | None = None
    problem: str | None = None  # the trial's invalid cause or fatal error
    roles: list[RoleCheck] = field(default_factory=list)
    # what the benchmark shows of the trial (Benchmark.smoke_transcript): (label, text) in order
    transcript: list[tuple[str, str]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.problem is None and all(c.status == "ok" for c in self.roles)


@dataclass
class SmokeReport:
    store: Path
    arms: list[ArmSmoke]

    @property
    def ok(self) -> bool:
        return all(a.ok for a in self.arms)

    def as_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "store": str(self.store),
                "arms": [{"arm": a.arm, "task": a.task, "ok": a.ok, "valid": a.valid, "reward": a.reward,
                          "termination": a.termination, "problem": a.problem,
                          "roles": [vars(c) for c in a.roles],
                          "transcript": [{"label": k, "text": t} for k, t in a.transcript]} for a in self.arms]}


def smoke_task(r: Resolved) -> tuple[str, Any]:
    """The task to play, as the benchmark chooses it (τ²: one that needs the judge when some arm
    would call it, else the first)."""
    return r.benchmark.smoke_task(r)


def roles_to_check(r: Resolved, arm: ArmPlan) -> list[str]:
    """The roles the arm's trials call (``ArmPlan.roles_needed``): a role configured with a model
    that the arm never calls (``[roles.memory]`` for an arm without the memory plug-in) is not checked."""
    return [role for role in ROLES if role in arm.roles_needed]


async def _probe(channel: Any, role: str, key: TrialKey) -> RoleCheck:
    """One small direct call of ``role``, sent as the smoke trial's own calls are (its task's headers)."""
    try:
        context = CallContext(arm=key.arm, domain=key.domain, task=key.task_id, trial=key.trial)
        done = await channel.complete(role, PROBE, context=context)
    except ChannelError as exc:
        d = exc.diagnosis
        return RoleCheck(role, "fail", d.message, d.code, d.fix)
    except ConfigError as exc:
        return RoleCheck(role, "fail", str(exc), "CONFIG", None)
    u = done.usage
    return RoleCheck(role, "ok", f"direct call to {done.model or '?'} answered ({u.prompt_tokens}+{u.completion_tokens} tokens)")


async def _smoke_arm(ex: Executor, r: Resolved, arm: ArmPlan, domain: str, task: Any, store: Store) -> ArmSmoke:
    key = TrialKey(arm=arm.name, domain=domain, task_id=task.id, trial=0)
    spec = TrialSpec(key, task, arm, trial_seed(r.exp.run.seed, domain, task.id, 0), attempt=0)
    out = ArmSmoke(arm.name, f"{domain}/{task.id}")
    ctx = ex.context(spec)
    fatal: FatalChannelError | None = None
    fatal_role = None
    try:
        record = await ex.bench.play(r, ctx, arm, ex.limits)
    except FatalChannelError as exc:
        fatal, fatal_role = exc, last_failed_role(ctx)
        out.problem = f"{exc.code}: {exc.diagnosis.message}"
    else:
        store.append(record)
        v = record.verdict
        out.valid, out.reward, out.termination = v.valid, v.reward, v.termination
        out.transcript = list(ex.bench.smoke_transcript(record))
        if not v.valid:
            out.problem = v.invalid_cause or "invalid trial"
        else:
            out.problem = ex.bench.smoke_problem(record)
    calls = ctx.trajectory.model_calls
    channel = ex.channels[arm.name]
    for role in roles_to_check(r, arm):
        mine = [c for c in calls if c.role == role]
        if fatal is not None and role == fatal_role:
            d = fatal.diagnosis
            out.roles.append(RoleCheck(role, "fail", d.message, d.code, d.fix))
            continue
        failed = [c for c in mine if c.error]
        if mine and not failed:
            tokens = sum(c.usage.prompt_tokens + c.usage.completion_tokens for c in mine)
            out.roles.append(RoleCheck(role, "ok", f"{len(mine)} call(s) in the trial, {tokens} tokens"))
            continue
        check = await _probe(channel, role, key)
        if failed and check.status == "ok":  # the trial's call failed; the endpoint answers now
            check = RoleCheck(role, "fail", f"a call in the trial failed ({failed[0].error}); a direct call "
                              "succeeded afterwards — the endpoint is flaky", failed[0].error,
                              "run the smoke check again; look at the endpoint's status")
        out.roles.append(check)
    return out


async def run_smoke(r: Resolved, run_dir: Path, task: tuple[str, Any] | None = None) -> SmokeReport:
    """``task``: the (domain, task) to play instead of the benchmark's smoke task (``--estimate``
    plays a typical one). RUN/smoke is a run directory of its own: made, checked and held as one
    (store/owner.py)."""
    with claim(make_dir(run_dir) / "smoke", "agentrig run --smoke") as owner:
        return await _smoke_into(r, owner.directory, task)


async def _smoke_into(r: Resolved, smoke_dir: Path, task: tuple[str, Any] | None) -> SmokeReport:
    path = smoke_dir / "trials.sqlite"
    for suffix in ("", "-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    (smoke_dir / CONFIG_FILE).unlink(missing_ok=True)
    store = Store.open(path)
    run_id = "smoke-" + datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    store.set_meta("run", {"run_id": run_id, "name": r.name, "smoke": True})
    channels = make_channels(r, run_id)
    try:
        ex = Executor(r, store, run_id, channels)
        domain, played = task or smoke_task(r)
        config = snapshot.config_snapshot(r, run_id)  # what was played: one task, once per arm
        config.update(smoke=True, tasks={domain: [played.id]})
        config["experiment"]["run"]["trials"] = 1
        config.pop("excluded", None)
        write_config(smoke_dir, store, config)
        arms = await asyncio.gather(*(_smoke_arm(ex, r, arm, domain, played, store) for arm in r.arms))
    finally:
        await close_channels(channels)
        store.close()
    return SmokeReport(path, list(arms))
