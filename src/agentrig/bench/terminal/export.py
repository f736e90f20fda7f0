"""Exports of terminal runs in the shapes other tools read (``agentrig export RUN --format …``).

``terminal-bench``: Terminal-Bench's ``results.json`` (its harness's ``BenchmarkResults``) per arm —
``results`` (one entry per valid trial: ``trial_name``, ``task_id``, ``instruction``,
``is_resolved``, ``failure_mode``, ``parser_results``, ``total_input_tokens``,
``total_output_tokens``, ``n_commands``, the trial's times), then ``pass_at_k``, ``n_resolved``,
``n_unresolved``, ``resolved_ids``, ``unresolved_ids``, ``accuracy`` — and a ``run_metadata.json``
beside it. Written to ``<out>/<arm>/`` (default ``RUN/exports/terminal-bench/``).

``mini-swe-agent``: per valid trial one trajectory file as mini-SWE-agent 2.x saves them
(``trajectory_format: mini-swe-agent-1.1``): ``info`` (``exit_status``, ``submission``,
``model_stats`` with ``instance_cost`` and ``api_calls``, ``mini_version``, ``config``) and
``messages`` in the chat format with an ``extra`` field per message (the assistant's parsed
``actions``, its ``cost``, an observation's ``returncode``, timestamps) ending with the ``exit``
message. Written to ``<out>/<arm>/<task>/<task>.trial-<n>.traj.json`` (default
``RUN/exports/mini-swe-agent/``).

Mapping notes (where agentrig and those tools differ; docs/terminal.md has the table):

- only valid trials are exported (an invalid attempt was spoiled by infrastructure, not played);
- Terminal-Bench's ``failure_mode`` has fewer values: ``agent_timeout``, ``test_timeout``,
  ``parse_error`` (also agentrig's ``broke_environment``: the tests produced no readable
  result), ``fatal_llm_parse_error`` (``format_errors``), ``context_length_exceeded``
  (``context_overflow``, or a context limit of older runs), ``unknown_agent_error`` (another limit); a trial whose tests ran keeps
  ``unset``, as Terminal-Bench leaves it. ``is_resolved`` and ``parser_results`` are null when
  the tests' result could not be read. agentrig's own names are kept under ``agentrig``;
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
import math
import re
import uuid
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from agentrig import __version__
from agentrig.agents.bash_prompts import SUBMIT_SENTINEL
from agentrig.errors import ConfigError
from agentrig.store.export import _atomic, _parse_time

from .parsers import PASSING

FORMATS = ("terminal-bench", "mini-swe-agent")
MINI_FORMAT = "mini-swe-agent-1.1"
_NS = uuid.UUID("0c9a3f4e-7b1d-4a52-9e0f-5d2c8b6a1e37")
_EXIT_CODE = re.compile(r"\Aexit code: (-?\d+)")
_MINI_EXIT = {"submitted": "Submitted", "limits_exceeded": "LimitsExceeded", "agent_timeout": "TimeExceeded",
              "format_errors": "FormatError", "never_submitted": "NotSubmitted",
              "context_overflow": "LimitsExceeded"}
_UNREADABLE = ("test_timeout", "parse_error", "broke_environment")


# -- reading a stored trial ---------------------------------------------------------------------

def _events(record: Any, plugin: str, kind: str) -> list[dict]:
    return [e.data for e in record.trajectory.events if (e.plugin, e.kind) == (plugin, kind)]


def verifier_result(record: Any) -> dict:
    found = _events(record, "verifier", "result")
    return found[-1] if found else {}


def failure_mode(record: Any) -> str:
    info = record.verdict.reward_info
    return (info.notes.get("failure_mode") if info is not None else None) or record.verdict.termination


def submission(record: Any) -> str:
    """The submitted text: the ``agent``/``submit`` event; for trials stored before that event
    existed, the output after the sentinel line of the last observation that holds it."""
    found = _events(record, "agent", "submit")
    if found:
        return str(found[-1].get("submission", ""))
    if record.verdict.termination != "submitted":
        return ""
    mark = f"output:\n{SUBMIT_SENTINEL}\n"
    for m in reversed(record.trajectory.messages):
        if m.role in ("tool", "user") and mark in (m.content or ""):
            return (m.content or "").split(mark, 1)[1]
    return ""


def _tokens(record: Any) -> tuple[int, int]:
    calls = record.trajectory.model_calls
    return sum(c.usage.prompt_tokens for c in calls), sum(c.usage.completion_tokens for c in calls)


def _prices(config: dict) -> dict:
    from agentrig.config import Price

    return {model: Price(**p) for model, p in (config["experiment"].get("prices") or {}).items()}


def _cost(call: Any, prices: dict) -> float:
    from agentrig.channel.usage import cost_of

    if call.error is not None:
        return 0.0
    return cost_of(call, prices) or 0.0  # type: ignore[arg-type]  (a ModelCall has model and usage)


def _iso(start: datetime, seconds: float) -> str:
    return (start + timedelta(seconds=max(seconds, 0.0))).isoformat()


def _instructions(config: dict, ids: set[str]) -> dict[str, str]:
    from .taskfile import load_tasks

    root = config.get("data_root")
    if not root or not Path(root).is_dir():
        return {}
    try:
        tasks, _ = load_tasks(Path(root), skip_invalid=True)
    except Exception:  # noqa: BLE001 - the tasks moved or changed: the export goes on without them
        return {}
    return {t.id: t.instruction for t in tasks if t.id in ids}


# -- Terminal-Bench results.json ----------------------------------------------------------------

def tb_failure_mode(record: Any) -> str:
    """Terminal-Bench's ``FailureMode`` value for a stored trial (see the module docstring)."""
    mode, term = failure_mode(record), record.verdict.termination
    if mode == "test_timeout":
        return "test_timeout"
    if mode in ("parse_error", "broke_environment"):
        return "parse_error"
    if term == "agent_timeout":
        return "agent_timeout"
    if term == "format_errors":
        return "fatal_llm_parse_error"
    if term == "context_overflow":
        return "context_length_exceeded"
    if term == "limits_exceeded":
        stops = _events(record, "agent", "stop")
        detail = str(stops[-1].get("detail", "")) if stops else ""
        return "context_length_exceeded" if detail.startswith("context") else "unknown_agent_error"
    return "unset"


def tb_trial(record: Any, run_id: str, instruction: str) -> dict[str, Any]:
    """One entry of ``results`` (Terminal-Bench's ``TrialResults``) for a valid stored trial. Its
    ``trial_name`` carries agentrig's trial index, 0-based as in every export and label
    (``TASK.trial-0.RUN_ID``; Terminal-Bench's own harness writes ``TASK.1-of-K.RUN_ID``)."""
    v, key = record.verdict, record.key
    result = verifier_result(record)
    readable = failure_mode(record) not in _UNREADABLE and bool(result)
    tests = result.get("tests") or []
    parser_results = ({t["name"]: "passed" if t.get("outcome") in PASSING else "failed" for t in tests}
                      if readable and tests else None)
    prompt, completion = _tokens(record)
    start = _parse_time(record.started_at)
    test_s = float(result.get("duration_s") or 0.0)
    agent_end = record.duration_s - test_s
    return {
        "id": str(uuid.uuid5(_NS, f"{run_id}/{key.label()}")),
        "trial_name": f"{key.task_id}.trial-{key.trial}.{run_id}",
        "task_id": key.task_id,
        "instruction": instruction,
        "is_resolved": bool(result.get("resolved")) if readable else None,
        "failure_mode": tb_failure_mode(record),
        "parser_results": parser_results,
        "recording_path": None,
        "total_input_tokens": prompt,
        "total_output_tokens": completion,
        "n_commands": len(_events(record, "sandbox", "command")),
        "trial_started_at": _iso(start, 0),
        "trial_ended_at": _iso(start, record.duration_s),
        "agent_started_at": _iso(start, 0),
        "agent_ended_at": _iso(start, agent_end),
        "test_started_at": _iso(start, agent_end),
        "test_ended_at": _iso(start, record.duration_s),
        "agentrig": {"arm": key.arm, "trial": key.trial, "attempt": record.attempt, "seed": record.seed,
                     "reward": v.reward, "termination": v.termination, "failure_mode": failure_mode(record),
                     "components": dict(v.reward_info.components) if v.reward_info else {}},
    }


def pass_at_k(results: list[dict]) -> dict[str, float | None]:
    """Terminal-Bench's pass@k: k = 2, 4, 8 … up to the fewest trials of a task (and 5, 10 when
    every task has that many); per task the unbiased estimate 1 - C(n-c, k)/C(n, k), averaged
    over the tasks with at least k trials."""
    per_task: dict[str, list[bool]] = {}
    for r in results:
        per_task.setdefault(r["task_id"], []).append(bool(r["is_resolved"]))
    if not per_task:
        return {}
    fewest = min(len(v) for v in per_task.values())
    ks = sorted({2 ** i for i in range(1, int(math.log2(fewest)) + 1)} | {k for k in (5, 10) if fewest >= k})
    out: dict[str, float | None] = {}
    for k in ks:
        values = []
        for outcomes in per_task.values():
            n, c = len(outcomes), sum(outcomes)
            if n < k:
                continue
            values.append(1.0 if n - c < k else 1.0 - math.comb(n - c, k) / math.comb(n, k))
        out[str(k)] = sum(values) / len(values) if values else None
    return out


def tb_results(results: list[dict], run_id: str, arm: str) -> dict[str, Any]:
    resolved = [r["task_id"] for r in results if r["is_resolved"]]
    unresolved = [r["task_id"] for r in results if not r["is_resolved"]]
    return {
        "id": str(uuid.uuid5(_NS, f"{run_id}/{arm}")),
        "results": results,
        "pass_at_k": pass_at_k(results),
        "n_resolved": len(resolved),
        "n_unresolved": len(unresolved),
        "resolved_ids": resolved,
        "unresolved_ids": unresolved,
        "accuracy": len(resolved) / len(results) if results else 0.0,
    }


def tb_metadata(config: dict, arm: str, doc: dict, out_dir: Path, records: list) -> dict[str, Any]:
    """Terminal-Bench's ``run_metadata.json`` for the arm, as far as agentrig has its parts."""
    exp = config["experiment"]
    arm_cfg = next(a for a in exp["arms"] if a["name"] == arm)
    kind = arm_cfg["agent"]["kind"]
    model = (config.get("resolved") or {}).get(arm, {}).get("roles", {}).get("agent", {}).get("model")
    starts = sorted(r.started_at for r in records)
    ends = sorted(_iso(_parse_time(r.started_at), r.duration_s) for r in records)
    tasks = config.get("tasks") or {}
    ids = sorted({t for group in tasks.values() for t in group})
    return {
        "run_id": config.get("run_id") or "", "uuid": str(uuid.uuid5(_NS, f"{config.get('run_id')}/{arm}/meta")),
        "dataset_path": config.get("data_root"), "dataset_name": None, "dataset_version": None,
        "output_path": str(out_dir), "agent_name": f"agentrig-{kind}", "no_rebuild": False, "cleanup": True,
        "log_level": 20, "task_ids": ids, "exclude_task_ids": sorted(k.split("/", 1)[-1] for k in config.get("excluded") or {}),
        "n_tasks": len(ids), "n_concurrent_trials": exp["run"]["concurrency"], "n_attempts": exp["run"]["trials"],
        "dataset_size": len(ids), "accuracy": doc["accuracy"], "model_name": model if kind == "bash" else None,
        "start_time": starts[0] if starts else None, "end_time": ends[-1] if ends else None, "commit_hash": "unknown",
        "username": "unknown", "s3_bucket": None, "agent_kwargs": dict(arm_cfg["agent"]),
        "pass_at_k": doc["pass_at_k"], "resumed_at": None,
    }


# -- mini-SWE-agent trajectories ----------------------------------------------------------------

def _mini_message(m: Any, record: Any, start: datetime, prices: dict) -> dict[str, Any]:
    stamp = (start + timedelta(seconds=m.t)).timestamp()
    out: dict[str, Any] = {"role": m.role, "content": m.content or ""}
    extra: dict[str, Any] = {"timestamp": stamp}
    if m.role == "assistant":
        actions = [{"command": (c.arguments or {}).get("command", ""), "tool_call_id": c.id} for c in m.tool_calls]
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
            extra.update(cost=_cost(call, prices), model=call.model, finish_reason=call.finish_reason,
                         usage={"prompt_tokens": call.usage.prompt_tokens,
                                "completion_tokens": call.usage.completion_tokens})
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
    agent = roles.get("agent", {}) if arm_cfg["agent"]["kind"] == "bash" else {}
    start = _parse_time(record.started_at)
    calls = [c for c in record.trajectory.model_calls if c.error is None]
    exit_status = _MINI_EXIT.get(v.termination, "".join(p.capitalize() for p in v.termination.split("_")))
    text = submission(record)
    messages = [_mini_message(m, record, start, prices) for m in record.trajectory.messages]
    messages.append({"role": "exit", "content": text,
                     "extra": {"exit_status": exit_status, "submission": text,
                               "timestamp": (start + timedelta(seconds=record.duration_s)).timestamp()}})
    agent_type = "agentrig.agents.bash.BashAgent" if arm_cfg["agent"]["kind"] == "bash" else \
        f"agentrig.bench.terminal.reference.{arm_cfg['agent']['kind']}"
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


# -- `agentrig export RUN --format terminal-bench | mini-swe-agent` -----------------------------

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
    base = Path(out_path) if out_path is not None else Path(run_dir) / "exports" / fmt
    run_id = config.get("run_id") or ""
    prices = _prices(config) if fmt == "mini-swe-agent" else {}
    n, written = 0, []
    for name in arms:
        records = sorted(store.records(arm=name, valid=True), key=lambda r: (r.key.task_id, r.key.trial))
        if fmt == "mini-swe-agent":
            for record in records:
                k = record.key
                path = base / name / k.task_id / f"{k.task_id}.trial-{k.trial}.traj.json"
                _write_json(path, mini_trajectory(record, config, prices))
                n += 1
            written.append(base / name)
            continue
        instructions = _instructions(config, {r.key.task_id for r in records})
        results = [tb_trial(r, run_id, instructions.get(r.key.task_id, "")) for r in records]
        doc = tb_results(results, run_id, name)
        target = base / name / "results.json"
        _write_json(target, doc)
        _write_json(base / name / "run_metadata.json", tb_metadata(config, name, doc, base / name, records))
        n += len(results)
        written.append(target)
    shown = written[0] if len(written) == 1 else base
    return n, shown, "trajectory file(s)" if fmt == "mini-swe-agent" else "trial result(s)"
