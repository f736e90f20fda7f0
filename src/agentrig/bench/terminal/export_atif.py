"""``agentrig export RUN --format atif``: per valid trial one trajectory in Harbor's Agent Trajectory
Interchange Format (ATIF v1.6, the pydantic ``harbor.models.trajectories.Trajectory`` of Harbor 0.26).

Written to ``<out>/<arm>/<task>/<task>.trial-<n>.trajectory.json`` (default ``RUN/exports/atif/``).
One document per trial:

- ``agent``: ``name`` (``agentrig-bash`` for the built-in agent, else the agent's kind:
  ``mini-swe-agent``, ``codex``, ``claude-code``, ``command``, ``oracle``…), ``version`` (the arm's
  ``agent.version``, else agentrig's), ``model_name`` (the agent role's model), the tools offered to
  the agent (its first recorded request's), ``extra`` (the arm's agent settings);
- ``steps``: the trial's messages in order — a system prompt a ``system`` step, the instruction a
  ``user`` step, each assistant message an ``agent`` step (``message``, ``reasoning_content``,
  ``tool_calls`` with the agent's own tool names and arguments, ``model_name``, ``timestamp``) whose
  ``observation`` holds the results of its calls (``source_call_id`` = the call's id; a
  ``sandbox``/``command`` event's exit code, timeout and duration in the result's ``extra``); a
  user message that is not an observation (a format-error note) is a ``user`` step. An agent step
  made by a model call has ``llm_call_count`` 1 and ``metrics`` from its ``ModelCall``
  (prompt, completion and cached tokens, cost from the run's ``[prices]``, null without a price; reasoning tokens,
  latency and retries in ``extra``); one made without a model (the reference agents) has 0;
- ``final_metrics``: the sums over the trial's answered model calls, ``total_steps``;
- ``extra``: agentrig's run id, arm, task, trial, attempt, reward, termination, failure mode and
  the submission.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agentrig import __version__
from agentrig.analysis.shell_tools import shell_command
from agentrig.store.export import _atomic, _parse_time
from agentrig.types import retries_of

from .export_read import MODEL_LESS, _iso, failure_mode, submission, verifier_result

SCHEMA = "ATIF-v1.6"


def _agent_name(kind: str) -> str:
    return "agentrig-bash" if kind == "bash" else kind


def _tools(record: Any) -> list[dict] | None:
    for request in record.trajectory.agent_requests:
        if request.tools:
            return [t if "function" in t else {"type": "function", "function": t} for t in request.tools]
    return None


def _command_events(record: Any) -> tuple[dict[str, dict], list[dict]]:
    """The ``sandbox``/``command`` events: by tool-call id when they name one, else in order."""
    by_id, ordered = {}, []
    for e in record.trajectory.events:
        if (e.plugin, e.kind) == ("sandbox", "command"):
            if e.data.get("tool_call_id"):
                by_id[str(e.data["tool_call_id"])] = e.data
            else:
                ordered.append(e.data)
    return by_id, ordered


def _cost(call: Any, prices: dict) -> float | None:
    """The call's cost from the run's [prices]; None for a model without a price."""
    from agentrig.channel.usage import cost_of

    return cost_of(call, prices) if call.error is None else 0.0


def _metrics(call: Any, prices: dict) -> dict[str, Any]:
    u = call.usage
    extra: dict[str, Any] = {"latency_s": call.latency_s, "retries": retries_of(call.attempts)}
    if u.reasoning_tokens is not None:
        extra["reasoning_tokens"] = u.reasoning_tokens
    if call.finish_reason:
        extra["finish_reason"] = call.finish_reason
    out: dict[str, Any] = {"prompt_tokens": u.prompt_tokens, "completion_tokens": u.completion_tokens,
                           "cost_usd": _cost(call, prices), "extra": extra}
    if u.cached_tokens is not None:
        out["cached_tokens"] = u.cached_tokens
    return out


def atif_trajectory(record: Any, config: dict, prices: dict) -> dict[str, Any]:
    """One stored trial as an ATIF trajectory document (see the module docstring)."""
    v, key, traj = record.verdict, record.key, record.trajectory
    arm_cfg = next(a for a in config["experiment"]["arms"] if a["name"] == key.arm)
    agent_cfg = dict(arm_cfg["agent"])
    roles = (config.get("resolved") or {}).get(key.arm, {}).get("roles", {})
    start = _parse_time(record.started_at)
    calls = traj.model_calls
    by_id, ordered = _command_events(record)
    steps: list[dict[str, Any]] = []
    open_calls: dict[str, Any] = {}  # tool-call id → its call, for the results that follow
    last_agent: dict[str, Any] | None = None
    for m in traj.messages:
        stamp = _iso(start, m.t)
        if m.role == "assistant":
            step: dict[str, Any] = {"step_id": len(steps) + 1, "timestamp": stamp, "source": "agent",
                                    "message": m.content or ""}
            if m.tool_calls:
                step["tool_calls"] = [{"tool_call_id": c.id, "function_name": c.name,
                                       "arguments": c.arguments if isinstance(c.arguments, dict) else {},
                                       **({} if isinstance(c.arguments, dict) else
                                          {"extra": {"arguments_raw": c.arguments_raw,
                                                     "arguments_error": c.arguments_error}})}
                                      for c in m.tool_calls]
            if m.call is not None and 0 <= m.call < len(calls):
                call = calls[m.call]
                step.update(llm_call_count=1, model_name=call.model or None, metrics=_metrics(call, prices))
                if m.reasoning:
                    step["reasoning_content"] = m.reasoning
            else:
                step["llm_call_count"] = 0
            steps.append(step)
            last_agent = step
            open_calls = {c.id: c for c in m.tool_calls}
            continue
        answered = m.tool_call_id if m.role == "tool" else None
        if m.role == "user" and last_agent is not None and open_calls:  # text mode: the observation of its action
            answered = next((i for i in open_calls if i.startswith("text-")), None)
        if answered is not None and last_agent is not None and answered in open_calls:
            call = open_calls.pop(answered)
            result: dict[str, Any] = {"source_call_id": answered, "content": m.content or ""}
            if shell_command(call.name, call.arguments) is not None:
                event = by_id.get(answered) or (ordered.pop(0) if ordered else None)
                if event is not None:
                    result["extra"] = {k: event.get(k) for k in ("exit_code", "timed_out", "duration_s")}
            last_agent.setdefault("observation", {"results": []})["results"].append(result)
            continue
        steps.append({"step_id": len(steps) + 1, "timestamp": stamp,
                      "source": "system" if m.role == "system" else "user", "message": m.content or ""})
        if m.role != "system":
            last_agent, open_calls = None, {}
    if not steps:
        steps.append({"step_id": 1, "source": "system", "message": "(the trial holds no messages)"})
    answered = [c for c in calls if c.error is None]
    costs = [_cost(c, prices) for c in answered]
    final = {"total_prompt_tokens": sum(c.usage.prompt_tokens for c in answered),
             "total_completion_tokens": sum(c.usage.completion_tokens for c in answered),
             "total_cached_tokens": sum(c.usage.cached_tokens or 0 for c in answered),
             "total_cost_usd": None if None in costs else sum(c for c in costs if c is not None),
             "total_steps": len(steps),
             "extra": {"model_calls": len(calls), "failed_model_calls": len(calls) - len(answered),
                       "retries": sum(retries_of(c.attempts) for c in calls),
                       "commands": traj.counters.get("commands", 0)}}
    agent: dict[str, Any] = {"name": _agent_name(str(agent_cfg.get("kind"))),
                             "version": str(agent_cfg.get("version") or __version__),
                             "extra": {"agentrig_version": __version__, "settings": agent_cfg}}
    model = None if agent_cfg.get("kind") in MODEL_LESS else \
        roles.get("agent", {}).get("model") or next((c.model for c in answered if c.model), None)
    if model:
        agent["model_name"] = model
    tools = _tools(record)
    if tools:
        agent["tool_definitions"] = tools
    return {
        "schema_version": SCHEMA,
        "session_id": f"{record.run_id}/{key.arm}/{key.task_id}/{key.trial}",
        "agent": agent,
        "steps": steps,
        "final_metrics": final,
        "notes": "exported by agentrig: one trial; tool results carry the sandbox's exit code in extra",
        "extra": {"agentrig": {"run_id": record.run_id, "arm": key.arm, "task_id": key.task_id, "trial": key.trial,
                               "attempt": record.attempt, "seed": record.seed, "reward": v.reward,
                               "resolved": bool(verifier_result(record).get("resolved", v.reward >= 1.0)),
                               "termination": v.termination, "failure_mode": failure_mode(record),
                               "submission": submission(record)}},
    }


def write_atif(records: list[Any], config: dict, prices: dict, base: Path, arm: str) -> int:
    """One ATIF file per record under ``base/arm``; returns how many."""
    n = 0
    for record in records:
        k = record.key
        with _atomic(base / arm / k.task_id / f"{k.task_id}.trial-{k.trial}.trajectory.json") as fh:
            json.dump(atif_trajectory(record, config, prices), fh, indent=2, ensure_ascii=False, default=str)
            fh.write("\n")
        n += 1
    return n
