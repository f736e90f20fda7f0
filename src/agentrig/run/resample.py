"""Resampling a run's decisions (``agentrig instability RUN``, commands/instability.py parses and
prints): re-ask the agent model at the decision steps of stored trials.

For every valid trial of the arm (``--arm``; default every arm whose agent calls a model), at each
of its first ``--max-steps`` decision steps (``analysis.instability``), the agent's request is
rebuilt EXACTLY from the trial's ``Trajectory.agent_requests`` (messages, tools, call parameters
as recorded when the trial was played — plug-in context included) and sent ``--samples`` times
through the channel as the ``agent`` role (the run's channel settings, headers with the trial's
key, retries, usage accounting) with two changes: ``temperature`` = ``--temperature``, and a seed
per sample (``blake2b(trial seed | step | sample)``) instead of the trial's (a fixed seed would
make every sample the same on a seeded server). Nothing is executed: the replies are parsed into
actions the way the arm's agent parses them (native tool calls; text mode: one JSON action; bash
text mode: one action block; an unusable reply is scored as its text) and stored
(``analysis.instability_store``).

Resume: samples already stored (same arm, step, temperature) are not asked again. A call that
fails after the channel's retries, or a reply with neither text nor tool calls (asked again up to
``EMPTY_RETRIES`` times), stores nothing and is never scored; the next run asks again. Trials
stored before agentrig recorded agent requests cannot be resampled: they are counted and named.

Before starting, an estimate: calls, tokens (each step's original prompt and completion tokens
per sample) and money (the run's price table); ``--estimate`` stops there. After, the totals the
channel counted, and the instability report (``analysis.instability_report``).
"""

from __future__ import annotations

import asyncio
import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from pydantic import ValidationError

from agentrig.store import instability as instability_store
from agentrig.analysis.instability import action_of, context_before, steps_of
from agentrig.analysis.instability_report import instability_report, threshold_of
from agentrig.config import ChannelConfig, ChannelSettings, Price, RoleConfig
from agentrig.errors import ConfigError, DataError, FatalChannelError, RetriesExhausted
from agentrig.types import CallContext

from agentrig.run.experiment import arm_channel
from agentrig.run.experiment_settings import ArmSettings
from agentrig.store.owner import claim
from agentrig.store.rundir import open_run_dir

# the agents whose decisions come from a model: ours, and the agents we did not write (their calls
# recorded by the measuring proxy, resampled the same way)
MODEL_AGENTS = ("llm", "bash", "mini-swe-agent", "codex", "claude-code", "command", "python")
EMPTY_RETRIES = 2


@dataclass
class Job:
    key: tuple  # (arm, domain, task_id, trial, step)
    turn: int
    call: int
    taken: dict
    context: str
    seed: int
    messages: list[dict]
    tools: list[dict] | None
    params: dict
    missing: list[int]
    prompt_tokens: int
    completion_tokens: int
    done: list[tuple[int, dict, Any]] = field(default_factory=list)


@dataclass
class Plan:
    arm: str
    settings: ArmSettings
    channel: ChannelConfig
    jobs: list[Job]
    trials: int = 0
    unrecorded: list[str] = field(default_factory=list)  # trials stored before requests were recorded
    stored: int = 0  # samples already stored


def _arms(config: dict) -> dict[str, ArmSettings]:
    exp = config.get("experiment") or {}
    try:
        return {a["name"]: ArmSettings.model_validate(a) for a in exp.get("arms") or []}
    except (ValidationError, KeyError, TypeError) as exc:
        raise DataError(f"the run's config snapshot has arms this agentrig cannot read ({exc}); "
                        "resample with the agentrig that wrote the run") from None


def arm_config(config: dict, arm: ArmSettings, temperature: float) -> ChannelConfig:
    """The arm's channel as the run used it, with the agent role at ``temperature`` and no fixed seed."""
    exp = config.get("experiment") or {}
    ns = SimpleNamespace(channel=ChannelSettings.model_validate(exp.get("channel") or {}),
                         roles={k: RoleConfig.model_validate(v) for k, v in (exp.get("roles") or {}).items()},
                         prices={k: Price.model_validate(v) for k, v in (exp.get("prices") or {}).items()})
    cfg = arm_channel(ns, arm)  # type: ignore[arg-type]
    agent = cfg.roles.get("agent") or RoleConfig()
    roles = {**cfg.roles, "agent": agent.model_copy(update={"temperature": temperature, "seed": None})}
    return cfg.model_copy(update={"channel": cfg.channel.model_copy(update={"seed": None}), "roles": roles})


def _requests(traj: Any, calls: set[int]) -> dict[int, tuple[list[dict], Any, dict]]:
    """The rebuilt request (messages, tools, params) of each agent call in ``calls``."""
    out: dict[int, tuple[list[dict], Any, dict]] = {}
    messages: list[dict] = []
    tools: Any = None
    for r in traj.agent_requests:
        messages = messages[: r.keep] + r.tail
        tools = tools if r.same_tools else r.tools
        if r.call in calls:
            out[r.call] = (messages, tools, dict(r.params))
        if len(out) == len(calls):
            break
    return out


def sample_seed(trial_seed: int, step: int, idx: int) -> int:
    digest = hashlib.blake2b(f"{trial_seed}|{step}|{idx}".encode(), digest_size=4).digest()
    return int.from_bytes(digest, "big") & 0x7FFFFFFF


def plan(store: Any, config: dict, arm_name: str, settings: ArmSettings, *, tasks: set[str] | None,
         samples: int, temperature: float, max_steps: int) -> Plan:
    p = Plan(arm_name, settings, arm_config(config, settings, temperature), [])
    have = instability_store.stored_indexes(store, arm_name, temperature)
    for record in store.records(arm_name, valid=True):
        k = record.key
        if tasks and k.task_id not in tasks and f"{k.domain}/{k.task_id}" not in tasks:
            continue
        steps = steps_of(record)[:max_steps]
        if not steps:
            continue
        p.trials += 1
        rebuilt = _requests(record.trajectory, {m.call for _s, _t, m in steps})
        if not rebuilt:
            p.unrecorded.append(k.label())
            continue
        calls = record.trajectory.model_calls
        for step, turn, m in steps:
            if m.call not in rebuilt:
                continue
            done = have.get((k.domain, k.task_id, k.trial, step), set())
            p.stored += len(done & set(range(samples)))
            missing = [i for i in range(samples) if i not in done]
            messages, tools, params = rebuilt[m.call]
            usage = calls[m.call].usage if m.call < len(calls) else None
            p.jobs.append(Job((arm_name, k.domain, k.task_id, k.trial, step), turn, m.call,
                              action_of(m.tool_calls, m.content), context_before(record, turn),
                              record.seed, messages, tools, params, missing,
                              usage.prompt_tokens if usage else 0, usage.completion_tokens if usage else 0))
    return p


def estimate(p: Plan) -> dict[str, Any]:
    calls = sum(len(j.missing) for j in p.jobs)
    prompt = sum(len(j.missing) * j.prompt_tokens for j in p.jobs)
    completion = sum(len(j.missing) * j.completion_tokens for j in p.jobs)
    model = p.channel.resolve("agent").model or ""
    price = p.channel.prices.get(model)
    cost = None if price is None else (prompt * price.input + completion * price.output) / 1e6
    return {"arm": p.arm, "model": model, "trials": p.trials, "steps": len(p.jobs), "calls": calls,
            "stored_samples": p.stored, "prompt_tokens": prompt, "completion_tokens": completion,
            "cost_usd": cost, "unrecorded_trials": len(p.unrecorded)}


# ------------------------------------------------------------------------------ parsing replies


def parse_reply(settings: ArmSettings, message: Any, finish_reason: str | None) -> dict | None:
    """The action of a sampled reply as the arm's agent reads it; None for an empty reply."""
    text = message.content or ""
    if not message.tool_calls and not text.strip():
        return None
    agent = settings.agent
    if agent.kind == "mini-swe-agent" and not message.tool_calls:  # its text mode: one mswea_bash_command block
        from agentrig.agents.installed.records import mini_text_action

        command = mini_text_action(text)
        return ({"kind": "tool", "name": "bash", "arguments": {"command": command}} if command is not None
                else {"kind": "text", "text": text})
    if agent.kind in ("codex", "claude-code"):  # its tools are an MCP server's: mcp__<server>__<tool>
        from agentrig.agents.installed.conversation import MCP_SERVER

        prefix = f"mcp__{MCP_SERVER}__"

        def unprefixed(c: dict) -> dict:  # the name the trial recorded
            name = c.get("name") or ""
            return {**c, "name": name[len(prefix):]} if name.startswith(prefix) else c

        action = action_of(message.tool_calls, message.content)
        if action["kind"] == "tool":
            action = unprefixed(action)
            if "calls" in action:
                action["calls"] = [unprefixed(c) for c in action["calls"]]
        return action
    if agent.tool_mode == "native":
        return action_of(message.tool_calls, message.content)
    if agent.kind == "bash":
        from agentrig.agents.bash import parse_action as bash_action
        from agentrig.agents.bash_prompts import TOOL_NAME

        command, _problem = bash_action(text, finish_reason)
        return ({"kind": "tool", "name": TOOL_NAME, "arguments": {"command": command}} if command is not None
                else {"kind": "text", "text": text})
    from agentrig.agents.text import parse_action as text_action

    action, _problem = text_action(text)
    if action is None:
        return {"kind": "text", "text": text}
    if action["action"] == "respond":
        return {"kind": "text", "text": action["content"]}
    return {"kind": "tool", "name": action["action"], "arguments": action["arguments"]}


# ------------------------------------------------------------------------------------ sampling


async def _sample(channel: Any, p: Plan, job: Job, idx: int, run_id: str | None, gate: asyncio.Semaphore,
                  counts: dict[str, int]) -> None:
    arm, domain, task_id, trial, step = job.key
    context = CallContext(run=run_id, arm=arm, domain=domain, task=task_id, trial=trial)
    kwargs = {k: v for k, v in job.params.items() if k in ("parallel_tool_calls", "tool_choice")}
    for _ in range(1 + EMPTY_RETRIES):
        async with gate:
            try:
                done = await channel.complete("agent", job.messages, job.tools, context,
                                              seed=sample_seed(job.seed, step, idx), **kwargs)
            except RetriesExhausted:
                counts["failed"] += 1
                return
        action = parse_reply(p.settings, done.message, done.finish_reason)
        if action is not None:
            job.done.append((idx, action, done))
            return
        counts["empty"] += 1
    counts["failed"] += 1


async def _run_job(channel: Any, p: Plan, job: Job, store: Any, run_id: str | None, gate: asyncio.Semaphore,
                   counts: dict[str, int], temperature: float) -> None:
    await asyncio.gather(*(_sample(channel, p, job, i, run_id, gate, counts) for i in job.missing))
    if job.done:
        instability_store.write_step(store, job.key, turn=job.turn, call=job.call, taken=job.taken,
                                     context=job.context, temperature=temperature, samples=sorted(job.done, key=lambda d: d[0]))
        counts["stored"] += len(job.done)


async def resample(store: Any, p: Plan, *, run_id: str | None, temperature: float, concurrency: int | None) -> dict:
    """Ask every missing sample of the plan; returns the channel's totals and the counts."""
    from agentrig.channel.client import Channel

    counts = {"stored": 0, "failed": 0, "empty": 0}
    async with Channel(p.channel, run_id=run_id) as channel:
        limit = concurrency or channel.endpoint_limit("agent")
        gate = asyncio.Semaphore(limit)
        tasks = [asyncio.ensure_future(_run_job(channel, p, j, store, run_id, gate, counts, temperature))
                 for j in p.jobs if j.missing]
        try:
            await asyncio.gather(*tasks)
        except BaseException:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise
        usage = channel.usage.summary().get("agent")
    return {"concurrency": limit, **counts, "usage": usage.model_dump(mode="json") if usage else None}


# ------------------------------------------------------------------------------------ session


class Resampling:
    """One resampling of a run: its store (and, unless only estimating, its owner lock: one writer
    at a time, store/owner.py), a plan and an estimate per arm; ``resample`` asks the models,
    ``reports`` reads the instability back; ``close`` releases the store and the lock."""

    def __init__(self, run_dir: Path, store: Any, config: dict, owner: Any):
        self.run_dir, self.store, self.config, self.owner = run_dir, store, config, owner
        self.arm: str | None = None
        self.tasks: str | None = None
        self.temperature = 0.0
        self.plans: list[Plan] = []
        self.estimates: list[dict[str, Any]] = []

    @classmethod
    def open(cls, run_dir: Path, *, arm: str | None, tasks: str | None, samples: int, temperature: float,
             max_steps: int, only_estimate: bool) -> Resampling:
        """Plan ``samples`` samples at ``temperature`` of the first ``max_steps`` decision steps of
        every valid trial of ``arm`` (default: every arm whose agent calls a model), ``tasks`` a
        comma-separated list of task ids (``domain/id`` or ``id``) or None for all."""
        store, config = open_run_dir(run_dir)
        self = cls(run_dir, store, config, None)
        try:
            if not only_estimate:  # it spends model calls and writes the store: one writer at a time (store/owner.py)
                self.owner = claim(Path(run_dir), "agentrig instability")
            arms = _arms(config)
            if arm is not None and arm not in arms:
                raise ConfigError(f"--arm {arm!r}: the run has no such arm (arms: {', '.join(arms)})")
            chosen = [arm] if arm else [a for a, s in arms.items() if s.agent.kind in MODEL_AGENTS]
            if not chosen:
                raise ConfigError(f"{run_dir}: no arm of this run has a model agent to resample (agent kinds: "
                                  f"{', '.join(sorted({s.agent.kind for s in arms.values()}))})")
            wanted = {t.strip() for t in tasks.split(",") if t.strip()} if tasks else None
            self.arm, self.tasks, self.temperature = arm, tasks, temperature
            self.plans = [plan(store, config, a, arms[a], tasks=wanted, samples=samples, temperature=temperature,
                               max_steps=max_steps) for a in chosen]
            self.estimates = [estimate(p) for p in self.plans]
        except BaseException:
            self.close()
            raise
        return self

    def require_work(self) -> None:
        """A ``DataError`` when no plan has a step to resample (saying why)."""
        if not any(p.jobs for p in self.plans):
            why = "no trial of the run records its agent requests" if any(p.unrecorded for p in self.plans) \
                else "no valid trial with an agent decision step matched" + (f" --tasks {self.tasks}" if self.tasks else "")
            raise DataError(f"{self.run_dir}: nothing to resample ({why})")

    def resample(self, concurrency: int | None) -> list[dict[str, Any]]:
        """Ask every missing sample, arm after arm; the channel's totals per arm. A fatal channel
        error stops it (``DataError``: the samples stored so far are kept)."""
        instability_store.ensure(self.store)
        run_id = (self.config or {}).get("run_id")
        totals = []
        for p in self.plans:
            try:
                totals.append({"arm": p.arm, **asyncio.run(resample(self.store, p, run_id=run_id,
                                                                     temperature=self.temperature,
                                                                     concurrency=concurrency))})
            except FatalChannelError as exc:
                raise DataError(f"arm {p.arm!r}: the channel refused a resampling call ({exc}); the samples stored "
                                "so far are kept — fix the cause and run the command again") from None
        return totals

    def reports(self, threshold: float | None = None) -> list[Any]:
        """The instability report per arm (``threshold``: default the experiment's
        ``[analysis] instability_threshold``, else ``DEFAULT_THRESHOLD``)."""
        return instability_report(self.store, self.arm,
                                  threshold=threshold_of(self.config) if threshold is None else threshold)

    def close(self) -> None:
        try:
            self.store.close()
        finally:
            if self.owner is not None:
                self.owner.release()
                self.owner = None
