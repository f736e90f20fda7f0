"""``agentrig export RUN --format terminal-bench``: per arm a Terminal-Bench run directory, in the
layout its harness writes and its tools (``tb runs summarize``, ``tb runs status``) read::

    OUT/<arm>/                                the run (Terminal-Bench's run id is the arm's name)
      results.json                            BenchmarkResults: every valid trial, accuracy, pass@k
      run_metadata.json                       RunMetadata
      tb.lock                                 RunLock: harness, agent, run config, dataset, output
      <task>/<task>.<N>-of-<K>.<arm>/         one folder per trial, N = agentrig's trial index + 1
        results.json                          TrialResults of that trial
        commands.txt                          the commands the agent ran, one per line
        panes/post-test.txt                   the tests' output (what Terminal-Bench's parser reads)

Terminal-Bench requires version-4 UUIDs for ``id``; they are derived from the run, arm and trial
(the same export writes the same ids). A task's folders are numbered from 1 without gaps, as
Terminal-Bench's lock check demands: a trial with no valid attempt stored leaves its folder without
``results.json`` — what Terminal-Bench leaves for a trial that did not finish (``tb runs status``
counts the task incomplete). Mapping notes: docs/terminal.md ("Exports").
"""

from __future__ import annotations

import hashlib
import json
import math
import shutil
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from agentrig import __version__
from agentrig.errors import ConfigError
from agentrig.store.export import _atomic, _parse_time

from .export_read import _UNREADABLE, MODEL_LESS, _events, _iso, _tokens, failure_mode, verifier_result
from .tasks.parsers import PASSING

# The class behind each agent kind (Terminal-Bench's lock names an agent as ``module:class``).
AGENT_CLASSES = {"bash": "agentrig.agents.bash:BashAgent",
                 "oracle": "agentrig.bench.terminal.reference:OracleAgent",
                 "flaky-oracle": "agentrig.bench.terminal.reference:OracleAgent",
                 "noop": "agentrig.bench.terminal.reference:NoopTerminalAgent"}


def uuid4_of(name: str) -> str:
    """A version-4 UUID derived from ``name``: 16 bytes of its SHA-256 with the version and variant
    bits of version 4 set (what Terminal-Bench's ``UUID4`` fields accept; the same name gives the
    same id)."""
    return str(uuid.UUID(bytes=hashlib.sha256(f"agentrig/{name}".encode()).digest()[:16], version=4))


def trial_folder(task_id: str, trial: int, n_attempts: int, tb_run_id: str) -> str:
    """Terminal-Bench's trial name (and folder): ``TASK.N-of-K.RUN_ID``, N counted from 1."""
    return f"{task_id}.{trial + 1}-of-{n_attempts}.{tb_run_id}"


# -- one trial ----------------------------------------------------------------------------------

def tb_failure_mode(record: Any) -> str:
    """Terminal-Bench's ``FailureMode`` value for a stored trial (docs/terminal.md has the table)."""
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


def tb_trial(record: Any, run_id: str, tb_run_id: str, n_attempts: int, instruction: str) -> dict[str, Any]:
    """One entry of ``results`` (Terminal-Bench's ``TrialResults``) for a valid stored trial;
    ``run_id`` is agentrig's (kept under ``agentrig``), ``tb_run_id`` Terminal-Bench's (the arm)."""
    v, key = record.verdict, record.key
    result = verifier_result(record)
    readable = failure_mode(record) not in _UNREADABLE and bool(result)
    tests = result.get("tests") or []
    # TB's parser results are a TB1 task's verdict; a Harbor task's reward file decides, the tests
    # its pytest summary listed are for the record (trials stored before the format was: TB1's)
    parser_results = ({t["name"]: "passed" if t.get("outcome") in PASSING else "failed" for t in tests}
                      if readable and tests and result.get("format", "tb1") == "tb1" else None)
    prompt, completion = _tokens(record)
    start = _parse_time(record.started_at)
    test_s = float(result.get("duration_s") or 0.0)
    agent_end = record.duration_s - test_s
    return {
        "id": uuid4_of(f"{run_id}/{key.label()}"),
        "trial_name": trial_folder(key.task_id, key.trial, n_attempts, tb_run_id),
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
        "agentrig": {"run_id": run_id, "arm": key.arm, "trial": key.trial, "attempt": record.attempt,
                     "seed": record.seed, "reward": v.reward, "termination": v.termination,
                     "failure_mode": failure_mode(record),
                     "components": dict(v.reward_info.components) if v.reward_info else {}},
    }


# -- the run ------------------------------------------------------------------------------------

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
        "id": uuid4_of(f"{run_id}/{arm}"),
        "results": results,
        "pass_at_k": pass_at_k(results),
        "n_resolved": len(resolved),
        "n_unresolved": len(unresolved),
        "resolved_ids": resolved,
        "unresolved_ids": unresolved,
        "accuracy": len(resolved) / len(results) if results else 0.0,
    }


def _agent(config: dict, arm: str) -> tuple[dict, str, str | None]:
    """(the arm's agent table, its kind, the agent role's model for an agent that calls one)."""
    arm_cfg = next(a for a in config["experiment"]["arms"] if a["name"] == arm)
    kind = arm_cfg["agent"]["kind"]
    model = (config.get("resolved") or {}).get(arm, {}).get("roles", {}).get("agent", {}).get("model")
    return dict(arm_cfg["agent"]), kind, None if kind in MODEL_LESS else model


def _task_ids(config: dict) -> list[str]:
    return sorted({t for group in (config.get("tasks") or {}).values() for t in group})


def tb_metadata(config: dict, arm: str, doc: dict, out_base: Path, records: list, n_attempts: int) -> dict[str, Any]:
    """Terminal-Bench's ``run_metadata.json`` for the arm, as far as agentrig has its parts."""
    exp = config["experiment"]
    agent, kind, model = _agent(config, arm)
    starts = sorted(r.started_at for r in records)
    ends = sorted(_iso(_parse_time(r.started_at), r.duration_s) for r in records)
    ids = _task_ids(config)
    run_id = config.get("run_id") or ""
    return {
        "run_id": arm, "uuid": uuid4_of(f"{run_id}/{arm}/meta"),
        "dataset_path": config.get("data_root"), "dataset_name": None, "dataset_version": None,
        "output_path": str(out_base), "agent_name": f"agentrig-{kind}", "no_rebuild": False, "cleanup": True,
        "log_level": 20, "task_ids": ids,
        "exclude_task_ids": sorted(k.split("/", 1)[-1] for k in config.get("excluded") or {}),
        "n_tasks": len(ids), "n_concurrent_trials": exp["run"]["concurrency"], "n_attempts": n_attempts,
        "dataset_size": len(ids), "accuracy": doc["accuracy"], "model_name": model,
        "start_time": starts[0] if starts else None, "end_time": ends[-1] if ends else None, "commit_hash": "unknown",
        "username": "unknown", "s3_bucket": None, "agent_kwargs": agent,
        "pass_at_k": doc["pass_at_k"], "resumed_at": None,
        "agentrig": {"run_id": run_id, "arm": arm, "version": __version__},
    }


def tb_lock(config: dict, arm: str, out_base: Path, records: list, n_attempts: int,
            args: list[str]) -> dict[str, Any]:
    """Terminal-Bench's ``tb.lock`` (``RunLock``) for the arm: agentrig as the harness that played
    it, the arm's agent by its class, the run's settings, the tasks' directory as a local dataset."""
    exp = config["experiment"]
    agent, kind, model = _agent(config, arm)
    starts = sorted(r.started_at for r in records)
    return {
        "lockfile_version": "1.0",
        "created_at": starts[0] if starts else datetime.now(timezone.utc).isoformat(),
        "invocation": {"command": "agentrig", "args": args},
        "harness": {"package": "agentrig", "version": __version__, "is_editable_installation": False},
        "agent": {"name": f"agentrig-{kind}", "import_path": AGENT_CLASSES.get(kind, f"agentrig.agents:{kind}"),
                  "model_name": model, "extra_kwargs": agent},
        "run_config": {"log_level": "info", "livestream": False, "n_concurrent_trials": exp["run"]["concurrency"],
                       "n_attempts": n_attempts, "no_rebuild": False, "cleanup": True,
                       "global_timeout_multiplier": 1.0, "global_agent_timeout_sec": None,
                       "global_test_timeout_sec": None},
        "dataset": {"name": None, "version": None, "local_path": config.get("data_root") or ".",
                    "task_ids": _task_ids(config), "registry_url": None, "local_registry_path": None},
        "local_config": {"output_path": str(out_base), "run_id": arm, "upload_results": False},
    }


# -- writing the directory ----------------------------------------------------------------------

def _write_json(path: Path, doc: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with _atomic(path) as fh:
        json.dump(doc, fh, indent=2, ensure_ascii=False)
        fh.write("\n")


def _trial_files(folder: Path, record: Any, entry: dict) -> None:
    _write_json(folder / "results.json", entry)
    commands = [str(e.get("command", "")) for e in _events(record, "sandbox", "command")]
    (folder / "commands.txt").write_text("".join(c if c.endswith("\n") else c + "\n" for c in commands),
                                         encoding="utf-8")
    output = verifier_result(record).get("output")
    if output:
        (folder / "panes").mkdir(exist_ok=True)
        (folder / "panes" / "post-test.txt").write_text(output, encoding="utf-8")


def write_arm(config: dict, arm: str, records: list, instructions: dict[str, str], out_base: Path,
              args: list[str]) -> int:
    """Write one arm's Terminal-Bench run directory ``out_base/arm`` (see the module docstring):
    built beside it and swapped in whole, replacing an earlier export of it; a directory there that
    is not one (no ``results.json``) is refused. Returns the number of trials written."""
    run_id = config.get("run_id") or ""
    k = int(config["experiment"]["run"]["trials"])
    if records:  # K of N-of-K: the planned trials (more if more were stored, as after a change of trials)
        k = max(k, 1 + max(r.key.trial for r in records))
    target = out_base / arm
    if target.exists() and (not target.is_dir() or (any(target.iterdir()) and not (target / "results.json").is_file())):
        raise ConfigError(f"{target} exists and is not a Terminal-Bench export (no results.json in it); "
                          "move it away or choose another --out")
    results = [tb_trial(r, run_id, arm, k, instructions.get(r.key.task_id, "")) for r in records]
    doc = tb_results(results, run_id, arm)
    staging = out_base / f".{arm}.partial"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    by_task: dict[str, dict[int, tuple[Any, dict]]] = {}
    for record, entry in zip(records, results):
        by_task.setdefault(record.key.task_id, {})[record.key.trial] = (record, entry)
    for task, trials in by_task.items():
        for trial in range(max(trials) + 1):  # numbered without gaps; a missing trial: an empty folder
            folder = staging / task / trial_folder(task, trial, k, arm)
            folder.mkdir(parents=True)
            if trial in trials:
                _trial_files(folder, *trials[trial])
    _write_json(staging / "results.json", doc)
    _write_json(staging / "run_metadata.json", tb_metadata(config, arm, doc, out_base, records, k))
    _write_json(staging / "tb.lock", tb_lock(config, arm, out_base, records, k, args))
    if target.exists():
        old = out_base / f".{arm}.old"
        shutil.rmtree(old, ignore_errors=True)
        target.rename(old)
        staging.rename(target)
        shutil.rmtree(old, ignore_errors=True)
    else:
        staging.rename(target)
    return len(results)
