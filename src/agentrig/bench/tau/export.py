"""τ²'s export format: tau2-bench's ``results.json`` of a run store (``agentrig export --format tau2``).

The tau2 export has the shape tau2-bench writes (its ``Results`` model: ``timestamp``, ``info``,
``tasks``, ``simulations``, ``simulation_index``) so that tau2-bench's own tools open our runs.
Everything in it comes from the stored records, the tasks and the ``info`` the caller passes:
no configuration or environment data is added here.

Mapping notes (where agentrig and tau2-bench differ):

- one simulation per VALID trial of the arm and domain; invalid attempts are not tau2 runs;
- ``termination_reason``: ``agent_transfer`` becomes ``agent_stop`` (tau2 has no transfer reason;
  both end the conversation on the agent's side and are scored), ``too_many_format_errors``,
  ``context_overflow`` and ``limits_exceeded`` (Codex / Claude Code past a proxy limit) become
  ``agent_error`` (text mode and those limits are ours; tau2 ends a participant whose model call
  fails with that reason);
- costs are 0.0 (agentrig counts tokens, not money); ``raw_data`` is null; reasoning content is
  not part of tau2's message and stays in the JSONL export;
- a tool call whose arguments were not a JSON object gets ``arguments: {}``;
- timestamps are the trial's ``started_at`` plus each message's offset.
"""
from __future__ import annotations

import json
import uuid
from datetime import datetime, timedelta
from enum import Enum
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from agentrig.errors import ConfigError
from agentrig.store.export import _atomic, _parse_time
from agentrig.store.store import Store
from agentrig.types import Message, ModelCall, RewardInfo, TrialRecord

from .judge import tau2_reward_info as _judge_reward_info

_TERMINATION = {"agent_transfer": "agent_stop", "too_many_format_errors": "agent_error",
                "context_overflow": "agent_error", "limits_exceeded": "agent_error"}
# agents that play a script and call no model (their export names no agent model)
SCRIPTED_AGENTS = ("gold", "flaky-gold", "noop")
_SIM_NAMESPACE = uuid.UUID("5f0b8f8e-3d55-4d0e-9a57-0d6c1f0e2a41")

# tau2-bench's defaults for the parts of ``info`` agentrig has no counterpart for
_INFO_DEFAULTS: dict[str, Any] = {
    "git_commit": "unknown",
    "seed": None,
    "text_streaming_config": {"chunk_by": "words", "chunk_size": 1},
    "speech_complexity": None,
    "audio_native_config": None,
    "retrieval_config": None,
    "retrieval_config_kwargs": None,
}
_PARTICIPANT_INFO = {
    "agent_info": {"implementation": "llm_agent", "llm": None, "llm_args": None,
                   "voice_settings": None},
    "user_info": {"implementation": "user_simulator", "llm": None, "llm_args": None,
                  "global_simulation_guidelines": None, "voice_settings": None,
                  "persona_config": None},
    "environment_info": {"domain_name": None, "policy": None, "tool_defs": None},
}


# -- tau2 results.json ---------------------------------------------------------------------------

def tau2_info(*, domain: str, policy: str, max_steps: int, max_errors: int,
              num_trials: int | None = None, seed: int | None = None,
              agent_model: str | None = None, agent_args: dict | None = None,
              agent_implementation: str = "llm_agent",
              user_model: str | None = None, user_args: dict | None = None,
              user_implementation: str = "user_simulator",
              user_guidelines: str | None = None, git_commit: str = "unknown") -> dict[str, Any]:
    """The ``info`` block of a tau2 ``results.json``, from agentrig's terms."""
    return {
        "git_commit": git_commit, "num_trials": num_trials, "max_steps": max_steps,
        "max_errors": max_errors, "seed": seed,
        "user_info": {"implementation": user_implementation, "llm": user_model,
                      "llm_args": user_args, "global_simulation_guidelines": user_guidelines},
        "agent_info": {"implementation": agent_implementation, "llm": agent_model,
                       "llm_args": agent_args},
        "environment_info": {"domain_name": domain, "policy": policy},
    }


def export_tau2(store: Store, out: Path, arm: str, tasks: list, info: dict, *,
                domain: str | None = None) -> int:
    """Write a tau2-bench ``results.json`` of one arm on one domain; returns the number of
    simulations (one per valid trial whose task is in ``tasks``)."""
    full = _complete_info(info, domain)
    domain = full["environment_info"]["domain_name"]
    order = {task.id: i for i, task in enumerate(tasks)}
    by_id = {task.id: task for task in tasks}
    records = [r for r in store.records(arm=arm, valid=True, domain=domain) if r.key.task_id in order]
    records.sort(key=lambda r: (order[r.key.task_id], r.key.trial))
    if full["num_trials"] is None:
        full["num_trials"] = max((r.key.trial for r in records), default=-1) + 1
    policy = full["environment_info"]["policy"]
    doc = {
        "timestamp": datetime.now().isoformat(),
        "info": full,
        "tasks": [tau2_task(task) for task in tasks],
        "simulations": [tau2_simulation(r, policy, by_id[r.key.task_id]) for r in records],
        "simulation_index": None,
    }
    with _atomic(out) as fh:
        json.dump(doc, fh, ensure_ascii=False, indent=2)
    return len(records)


def _complete_info(info: dict, domain: str | None) -> dict[str, Any]:
    full = {**_INFO_DEFAULTS, "num_trials": None, **{k: v for k, v in info.items()
                                                    if k not in _PARTICIPANT_INFO}}
    for part, defaults in _PARTICIPANT_INFO.items():
        given = info.get(part) or {}
        if not isinstance(given, dict):
            raise ConfigError(f"tau2 export: info.{part} must be a table, got {type(given).__name__}")
        full[part] = {**defaults, **given}
    env = full["environment_info"]
    if domain is not None:
        if env["domain_name"] not in (None, domain):
            raise ConfigError(f"tau2 export: info.environment_info.domain_name is "
                              f"{env['domain_name']!r} but domain {domain!r} was asked for")
        env["domain_name"] = domain
    missing = [name for name, value in (("max_steps", full.get("max_steps")),
                                        ("max_errors", full.get("max_errors")),
                                        ("environment_info.domain_name", env["domain_name"]),
                                        ("environment_info.policy", env["policy"]))
               if value is None]
    if missing:
        raise ConfigError(f"tau2 export: info lacks {', '.join(missing)} (tau2-bench's results "
                          "need them); build it with agentrig.bench.tau.export.tau2_info(...)")
    return full


def tau2_task(task: Any) -> dict[str, Any]:
    """A task as tau2-bench dumps it in results.json: every field tau2 defines, defaults
    included, keys tau2 does not know (kept as extras by our model) left out."""
    return _declared(task)


def _declared(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return {name: _declared(getattr(value, name)) for name in type(value).model_fields}
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, dict):
        return {k: _declared(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_declared(v) for v in value]
    return value


def tau2_simulation(record: TrialRecord, policy: str | None = None, task: Any = None) -> dict[str, Any]:
    """One valid trial as a tau2-bench ``SimulationRun`` dict (``task`` lends the gold actions'
    ``info`` texts to the action checks)."""
    key, verdict = record.key, record.verdict
    start = _parse_time(record.started_at)
    end = start + timedelta(seconds=record.duration_s)
    calls = record.trajectory.model_calls
    label = f"{record.run_id}/{key.label()}/{record.attempt}"
    reward_info = tau2_reward_info(verdict.reward_info, verdict.reward, task)
    return {
        "id": str(uuid.uuid5(_SIM_NAMESPACE, label)),
        "task_id": key.task_id,
        "timestamp": end.isoformat(),
        "start_time": start.isoformat(),
        "end_time": end.isoformat(),
        "duration": float(record.duration_s),
        "termination_reason": _TERMINATION.get(verdict.termination, verdict.termination),
        "agent_cost": 0.0,
        "user_cost": 0.0,
        "agent_usage": None,
        "reward_info": reward_info,
        "messages": [tau2_message(m, calls, start) for m in record.trajectory.messages],
        "ticks": None,
        "trial": key.trial,
        "seed": record.seed,
        "mode": "half_duplex",
        "speech_environment": None,
        "review": None,
        "user_only_review": None,
        "info": None,
        "auth_classification": None,
        "hallucination_retries_used": 0,
        "hallucination_check": None,
        "provider_session_id": None,
        "policy": policy,
        "effect_timeline": None,
    }


def tau2_message(msg: Message, calls: list[ModelCall], start: datetime) -> dict[str, Any]:
    """One message in tau2-bench's shape (SystemMessage, AssistantMessage/UserMessage, or
    ToolMessage — one per tool result, as tau2 lists the results of a batch)."""
    stamp = (start + timedelta(seconds=msg.t)).isoformat()
    if msg.role == "tool":
        return {"id": msg.tool_call_id or "", "role": "tool", "content": msg.content,
                "requestor": msg.requestor or "assistant", "error": bool(msg.error),
                "turn_idx": msg.turn, "timestamp": stamp}
    if msg.role == "system":
        return {"role": "system", "content": msg.content, "turn_idx": msg.turn, "timestamp": stamp}
    call = calls[msg.call] if msg.call is not None and 0 <= msg.call < len(calls) else None
    usage = None
    if call is not None and call.usage.reported:
        usage = {"completion_tokens": call.usage.completion_tokens,
                 "prompt_tokens": call.usage.prompt_tokens}
    tool_calls = [{"id": tc.id, "name": tc.name, "arguments": tc.arguments or {},
                   "requestor": msg.role} for tc in msg.tool_calls] or None
    return {
        "role": msg.role, "content": msg.content, "tool_calls": tool_calls, "is_audio": False,
        "turn_idx": msg.turn, "timestamp": stamp, "cost": 0.0, "usage": usage, "raw_data": None,
        # tau2's user simulator leaves the generation time unset; its agent records it
        "generation_time_seconds": (call.latency_s if call is not None and msg.role == "assistant"
                                    else None),
        "audio_format": None, "audio_path": None, "audio_script_gold": None,
        "speech_effects": None, "source_effects": None, "channel_effects": None,
        "turn_taking_action": None, "utterance_ids": None, "chunk_id": None,
        "is_final_chunk": True, "source": None, "contains_speech": True,
    }


def tau2_reward_info(info: RewardInfo | None, reward: float = 0.0, task: Any = None) -> dict[str, Any]:
    """A verdict's ``RewardInfo`` as tau2-bench's ``reward_info`` (the judge's conversion)."""
    if info is None:  # a valid trial always has one; keep the export going if it does not
        return {"reward": float(reward), "db_check": None, "env_assertions": None,
                "action_checks": None, "nl_assertions": None, "communicate_checks": None,
                "reward_basis": None, "reward_breakdown": None,
                "info": {"note": "no reward information was stored for this trial"}}
    return _judge_reward_info(info, task)


# -- `agentrig export RUN_DIR --format tau2` ---------------------------------------------------

def _pick(what: str, given: str | None, options: list[str], flag: str) -> str:
    if given is not None:
        if given not in options:
            raise ConfigError(f"no {what} {given!r} in this run; {what}s: {', '.join(options)}")
        return given
    if len(options) == 1:
        return options[0]
    raise ConfigError(f"the run has {len(options)} {what}s ({', '.join(options)}); the tau2 format holds one: "
                      f"choose it with {flag} NAME")


def run_info(config: dict, arm: str, domain: str, policy: str) -> dict:
    """The ``info`` block of a run's arm on one domain, from its config snapshot."""
    from .user_prompts import resolve_guidelines

    exp = config["experiment"]
    arm_cfg = next(a for a in exp["arms"] if a["name"] == arm)
    roles = config["resolved"][arm]["roles"]
    agent_kind = arm_cfg["agent"]["kind"]
    # every agent but the scripted ones calls the agent role's model (a Python agent through its
    # trial's proxy, which sends the role's model and settings whatever the agent asked for)
    calls_model = agent_kind not in SCRIPTED_AGENTS
    user_kind = exp["user"]["kind"]

    def args(role: str) -> dict:
        rr = roles[role]
        return {k: rr[k] for k in ("temperature", "max_tokens", "seed") if rr.get(k) is not None}

    guidelines = None
    if user_kind == "llm":
        root = config.get("data_root")
        guidelines, _ = resolve_guidelines(exp["user"]["guidelines"], root, False)
    return tau2_info(
        domain=domain, policy=policy, max_steps=exp["run"]["max_steps"], max_errors=exp["run"]["max_errors"],
        num_trials=exp["run"]["trials"], seed=exp["run"]["seed"],
        agent_model=roles["agent"]["model"] if calls_model else None,
        agent_args=args("agent") if calls_model else None,
        agent_implementation="llm_agent" if agent_kind == "llm" else f"agentrig_{agent_kind}_agent",
        user_model=roles["user"]["model"] if user_kind == "llm" else None,
        user_args=args("user") if user_kind == "llm" else None,
        user_implementation="user_simulator" if user_kind == "llm" else "agentrig_scripted_user",
        user_guidelines=guidelines,
    )


def export_run(store: Store, config: dict, run_dir: Path, *, arm: str | None = None, domain: str | None = None,
               out_path: Path | None = None) -> tuple[int, Path]:
    """A run's arm on one domain as ``results.json``; returns (simulations, the file written)."""
    from . import data as tau_data

    arms = [a["name"] for a in config["experiment"]["arms"]]
    arm = _pick("arm", arm, arms, "--arm")
    domain = _pick("domain", domain, list(config["tasks"]), "--domain")
    root = config.get("data_root")
    wanted = set(config["tasks"][domain])
    tasks = [t for t in tau_data.load_tasks(root, domain) if t.id in wanted]
    arm_cfg = next(a for a in config["experiment"]["arms"] if a["name"] == arm)
    policy = tau_data.load_policy(root, domain, arm_cfg["agent"]["policy"])
    info = run_info(config, arm, domain, policy)
    target = out_path or Path(run_dir) / "exports" / f"{arm}.{domain}.results.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    return export_tau2(store, target, arm, tasks, info, domain=domain), target
