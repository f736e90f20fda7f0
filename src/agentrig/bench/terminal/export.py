"""Exports of terminal runs in the shapes other tools read (``agentrig export RUN --format …``).

``terminal-bench``: per arm a Terminal-Bench run directory as its harness writes one —
``results.json`` (``BenchmarkResults``: one entry per valid trial, ``pass_at_k``, ``accuracy`` …),
``run_metadata.json``, ``tb.lock`` and a folder per trial — so that ``tb runs summarize`` and
``tb runs status`` read it (``export_tb``). Written to ``<out>/<arm>/`` (default
``RUN/exports/terminal-bench/``).

``mini-swe-agent``: per valid trial one trajectory file as mini-SWE-agent 2.x saves them
(``trajectory_format: mini-swe-agent-1.1``): ``info`` (``exit_status``, ``submission``,
``model_stats`` with ``instance_cost`` and ``api_calls``, ``mini_version``, ``config``) and
``messages`` in the chat format with an ``extra`` field per message (the assistant's parsed
``actions``, its ``cost`` and the model's ``response`` — usage, model, finish reason — as
mini-SWE-agent's litellm model keeps them; an observation's ``returncode``; timestamps) ending
with the ``exit`` message. Written to ``<out>/<arm>/<task>/<task>.trial-<n>.traj.json`` (default
``RUN/exports/mini-swe-agent/``).

``atif``: per valid trial one trajectory in Harbor's Agent Trajectory Interchange Format
(``export_atif``). Written to ``<out>/<arm>/<task>/<task>.trial-<n>.trajectory.json`` (default
``RUN/exports/atif/``).

Mapping notes (where agentrig and those tools differ; docs/terminal.md has the table):

- only valid trials are exported (an invalid attempt was spoiled by infrastructure, not played);
- Terminal-Bench's ``failure_mode`` has fewer values: ``agent_timeout``, ``test_timeout``,
  ``parse_error`` (also agentrig's ``broke_environment``: the tests produced no readable
  result), ``fatal_llm_parse_error`` (``format_errors``), ``context_length_exceeded``
  (``context_overflow``, or a context limit of older runs), ``unknown_agent_error`` (another limit); a trial whose tests ran keeps
  ``unset``, as Terminal-Bench leaves it. ``is_resolved`` and ``parser_results`` are null when
  the tests' result could not be read. agentrig's own names are kept under ``agentrig``;
- Terminal-Bench's trial names and folders (``TASK.N-of-K.ARM``) count attempts from 1, as its
  lock check requires (N = agentrig's trial index + 1, kept as ``agentrig.trial``); its run id is
  the arm's name, agentrig's run id is kept under ``agentrig``;
- a Harbor task (a reward file, no test names) has ``parser_results`` null;
- the agent and test phase times are derived: the test phase is the verifier's duration at the
  end of the trial, the agent phase everything before it (sandbox start included);
- ``mini_version`` names agentrig (``agentrig-<version>``), not a mini-SWE-agent release;
  ``exit_status`` uses mini-SWE-agent's names (``Submitted``, ``LimitsExceeded``,
  ``TimeExceeded``, ``FormatError``; ``NotSubmitted`` for an agent that stopped without);
- costs come from the run's ``[prices]``; a model without a price counts 0.0.
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from agentrig import __version__
from agentrig.analysis.shell_tools import shell_command
from agentrig.errors import ConfigError
from agentrig.store.export import _atomic, _parse_time

from .export_read import MODEL_LESS, _instructions, failure_mode, submission, verifier_result

FORMATS = ("terminal-bench", "mini-swe-agent", "atif")
MINI_FORMAT = "mini-swe-agent-1.1"
_EXIT_CODE = re.compile(r"\Aexit code: (-?\d+)")
_MINI_EXIT = {"submitted": "Submitted", "limits_exceeded": "LimitsExceeded", "agent_timeout": "TimeExceeded",
              "format_errors": "FormatError", "never_submitted": "NotSubmitted",
              "context_overflow": "LimitsExceeded"}


# -- costs ----------------------------------------------------------------------------------------

def _prices(config: dict) -> dict:
    from agentrig.config import Price

    return {model: Price(**p) for model, p in (config["experiment"].get("prices") or {}).items()}


def _cost(call: Any, prices: dict) -> float:
    from agentrig.channel.usage import cost_of

    if call.error is not None:
        return 0.0
    return cost_of(call, prices) or 0.0  # type: ignore[arg-type]  (a ModelCall has model and usage)


# -- mini-SWE-agent trajectories ----------------------------------------------------------------

def _response(call: Any, message: dict, stamp: float) -> dict[str, Any]:
    """The model's answer as mini-SWE-agent's litellm model saves it under ``extra.response`` (an
    OpenAI chat completion: ``model``, ``choices`` with the message and ``finish_reason``,
    ``usage``); Harbor's converter takes the token counts from it."""
    u = call.usage
    usage: dict[str, Any] = {"prompt_tokens": u.prompt_tokens, "completion_tokens": u.completion_tokens,
                             "total_tokens": u.total_tokens}
    if u.cached_tokens is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": u.cached_tokens}
    if u.reasoning_tokens is not None:
        usage["completion_tokens_details"] = {"reasoning_tokens": u.reasoning_tokens}
    reply = {"role": "assistant", "content": message.get("content"), "tool_calls": message.get("tool_calls")}
    if message.get("reasoning_content"):
        reply["reasoning_content"] = message["reasoning_content"]
    return {"id": call.request_id, "created": int(call.sent_at if call.sent_at is not None else stamp),
            "model": call.model, "object": "chat.completion",
            "choices": [{"index": 0, "finish_reason": call.finish_reason, "message": reply}],
            "usage": usage}


def _mini_message(m: Any, record: Any, start: datetime, prices: dict) -> dict[str, Any]:
    stamp = (start + timedelta(seconds=m.t)).timestamp()
    out: dict[str, Any] = {"role": m.role, "content": m.content or ""}
    extra: dict[str, Any] = {"timestamp": stamp}
    if m.role == "assistant":
        actions = [{"command": shell_command(c.name, c.arguments) or "", "tool_call_id": c.id} for c in m.tool_calls]
        extra["actions"] = actions
        native = [c for c in m.tool_calls if not c.id.startswith("text-")]
        if native:
            out["tool_calls"] = [{"id": c.id, "type": "function",
                                  "function": {"name": c.name, "arguments": c.arguments_raw or json.dumps(c.arguments)}}
                                 for c in native]
        if m.reasoning:
            out["reasoning_content"] = m.reasoning
        calls = record.trajectory.model_calls
        if m.call is not None and 0 <= m.call < len(calls):
            call = calls[m.call]
            extra.update(response=_response(call, out, stamp), cost=_cost(call, prices))
        else:
            extra["cost"] = 0.0
    elif m.role == "tool" or m.role == "user":
        if m.tool_call_id:
            out["tool_call_id"] = m.tool_call_id
        found = _EXIT_CODE.match(m.content or "")
        if found:
            extra["returncode"] = int(found.group(1))
        elif (m.content or "").startswith("exit code: none"):
            extra["returncode"] = None
            extra["timed_out"] = True
    out["extra"] = extra
    return out


def mini_trajectory(record: Any, config: dict, prices: dict) -> dict[str, Any]:
    """One trial as mini-SWE-agent's saved trajectory (see the module docstring)."""
    v, key = record.verdict, record.key
    exp = config["experiment"]
    arm_cfg = next(a for a in exp["arms"] if a["name"] == key.arm)
    roles = (config.get("resolved") or {}).get(key.arm, {}).get("roles", {})
    kind = arm_cfg["agent"]["kind"]
    agent = {} if kind in MODEL_LESS else roles.get("agent", {})
    start = _parse_time(record.started_at)
    calls = [c for c in record.trajectory.model_calls if c.error is None]
    exit_status = _MINI_EXIT.get(v.termination, "".join(p.capitalize() for p in v.termination.split("_")))
    text = submission(record)
    messages = [_mini_message(m, record, start, prices) for m in record.trajectory.messages]
    messages.append({"role": "exit", "content": text,
                     "extra": {"exit_status": exit_status, "submission": text,
                               "timestamp": (start + timedelta(seconds=record.duration_s)).timestamp()}})
    agent_type = ("agentrig.agents.bash.BashAgent" if kind == "bash" else
                  f"agentrig.bench.terminal.reference.{kind}" if kind in MODEL_LESS else f"agentrig.agents.installed.{kind}")
    return {
        "info": {
            "exit_status": exit_status,
            "submission": text,
            "model_stats": {"instance_cost": sum(_cost(c, prices) for c in calls), "api_calls": len(calls)},
            "mini_version": f"agentrig-{__version__}",
            "config": {
                "agent": dict(arm_cfg["agent"]), "agent_type": agent_type,
                "model": {"model_name": agent.get("model"),
                          "model_kwargs": {k: agent[k] for k in ("temperature", "max_tokens", "seed")
                                           if agent.get(k) is not None}},
                "model_type": "agentrig.channel.Channel",
                "environment": dict(exp.get("sandbox") or {}),
                "environment_type": f"agentrig.bench.terminal.sandbox.{(exp.get('sandbox') or {}).get('kind', 'bwrap')}",
            },
            "agentrig": {"run_id": record.run_id, "arm": key.arm, "task_id": key.task_id, "trial": key.trial,
                         "attempt": record.attempt, "seed": record.seed, "reward": v.reward,
                         "resolved": bool(verifier_result(record).get("resolved", v.reward >= 1.0)),
                         "termination": v.termination, "failure_mode": failure_mode(record),
                         "components": dict(v.reward_info.components) if v.reward_info else {}},
        },
        "messages": messages,
        "trajectory_format": MINI_FORMAT,
    }


# -- `agentrig export RUN --format terminal-bench | mini-swe-agent | atif` ----------------------

def _arms(config: dict, arm: str | None) -> list[str]:
    names = [a["name"] for a in config["experiment"]["arms"]]
    if arm is None:
        return names
    if arm not in names:
        raise ConfigError(f"no arm {arm!r} in this run; arms: {', '.join(names)}")
    return [arm]


def _write_json(path: Path, doc: Any) -> None:
    with _atomic(path) as fh:
        json.dump(doc, fh, indent=2, ensure_ascii=False)
        fh.write("\n")


def export_run(fmt: str, store: Any, config: dict, run_dir: Path, *, arm: str | None = None,
               out_path: Path | None = None) -> tuple[int, Path, str]:
    """Write the export of every arm (or ``arm``); returns (how many, what was written, the noun).
    ``out_path`` is a directory (one subdirectory per arm)."""
    if fmt not in FORMATS:
        raise ConfigError(f"unknown terminal export format {fmt!r}; use one of: {', '.join(FORMATS)}")
    arms = _arms(config, arm)
    base = (Path(out_path) if out_path is not None else Path(run_dir) / "exports" / fmt).absolute()
    prices = _prices(config) if fmt in ("mini-swe-agent", "atif") else {}
    n, written = 0, []
    for name in arms:
        records = sorted(store.records(arm=name, valid=True), key=lambda r: (r.key.task_id, r.key.trial))
        if fmt == "atif":
            from .export_atif import write_atif

            n += write_atif(records, config, prices, base, name)
            written.append(base / name)
            continue
        if fmt == "mini-swe-agent":
            for record in records:
                k = record.key
                path = base / name / k.task_id / f"{k.task_id}.trial-{k.trial}.traj.json"
                _write_json(path, mini_trajectory(record, config, prices))
                n += 1
            written.append(base / name)
            continue
        from .export_tb import write_arm

        args = ["export", str(run_dir), "--format", fmt, *(["--arm", arm] if arm else []), "--out", str(base)]
        instructions = _instructions(config, {r.key.task_id for r in records})
        n += write_arm(config, name, records, instructions, base, args)
        written.append(base / name / "results.json")
    shown = written[0] if len(written) == 1 else base
    return n, shown, "trajectory file(s)" if fmt in ("mini-swe-agent", "atif") else "trial result(s)"
