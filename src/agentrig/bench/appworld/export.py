"""``agentrig export RUN --format appworld``: per arm, AppWorld's own evaluation document.

AppWorld's ``evaluate_dataset`` writes, for one experiment, ``{"aggregate": {"task_goal_completion",
"scenario_goal_completion"}, "individual": {task_id: {"success", "difficulty", "num_tests",
"passes", "failures"}}}`` (percentages rounded to one decimal). A run holds k reruns, so the export
holds one such document per trial index, ``reruns[i]``, plus the mean of the two aggregates over
the reruns at the top. Tests are named by their requirement's first line (what the trial stored),
failures keep their trace. Only valid trials are exported.

    RUN/exports/appworld/<arm>/evaluation.json
"""

from __future__ import annotations

import json
import os
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

from agentrig.errors import ConfigError

from .data import scenario_of


def _arms(config: dict, arm: str | None) -> list[str]:
    names = [a["name"] for a in config["experiment"]["arms"]]
    if arm is not None and arm not in names:
        raise ConfigError(f"no arm {arm!r} in this run; arms: {', '.join(names)}")
    return [arm] if arm is not None else names


def _individual(record: Any) -> dict:
    ev = next((e.data for e in record.trajectory.events if (e.plugin, e.kind) == ("world", "evaluate")), {})
    tests = ev.get("tests") or []
    notes = record.verdict.reward_info.notes if record.verdict.reward_info else {}
    difficulty = notes.get("difficulty")
    return {"success": bool(ev.get("success")),
            "difficulty": int(difficulty) if difficulty and difficulty.isdigit() else difficulty,
            "num_tests": ev.get("num_tests", len(tests)),
            "passes": [{"requirement": t["test"], "label": t.get("label")} for t in tests if t.get("passed")],
            "failures": [{"requirement": t["test"], "trace": t.get("trace", ""), "label": t.get("label")}
                         for t in tests if not t.get("passed")]}


def _aggregate(individual: dict[str, dict]) -> dict[str, float | None]:
    if not individual:
        return {"task_goal_completion": None, "scenario_goal_completion": None}
    scenarios: dict[str, list[bool]] = defaultdict(list)
    for task_id, doc in individual.items():
        scenarios[scenario_of(task_id)].append(doc["success"])
    tgc = 100 * sum(d["success"] for d in individual.values()) / len(individual)
    sgc = 100 * sum(all(v) for v in scenarios.values()) / len(scenarios)
    return {"task_goal_completion": round(tgc, 1), "scenario_goal_completion": round(sgc, 1)}


def evaluation(records: list[Any], trials: int, dataset: str | None) -> dict:
    by_trial: dict[int, dict[str, dict]] = defaultdict(dict)
    for r in sorted(records, key=lambda r: (r.key.trial, r.key.task_id)):
        by_trial[r.key.trial][r.key.task_id] = _individual(r)
    reruns = [{"trial": i, "aggregate": _aggregate(by_trial.get(i, {})), "individual": by_trial.get(i, {})}
              for i in range(trials)]
    done = [x["aggregate"] for x in reruns if x["individual"]]
    mean = {k: (round(sum(a[k] for a in done) / len(done), 1) if done else None)
            for k in ("task_goal_completion", "scenario_goal_completion")}
    return {"dataset": dataset, "trials": trials, "aggregate": mean, "reruns": reruns}


def export_run(store: Any, config: dict, run_dir: Path, *, arm: str | None = None,
               out_path: Path | None = None) -> tuple[int, Path, str]:
    base = Path(out_path) if out_path is not None else Path(run_dir) / "exports" / "appworld"
    trials = int(config["experiment"]["run"].get("trials", 1))
    dataset = (config["experiment"].get("benchmark") or {}).get("dataset")
    n, written = 0, []
    for name in _arms(config, arm):
        records = list(store.records(arm=name, valid=True))
        target = base / name / "evaluation.json"
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, suffix=".part")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(evaluation(records, trials, dataset), fh, indent=2, ensure_ascii=False)
            fh.write("\n")
        os.replace(tmp, target)
        n += len(records)
        written.append(target)
    return n, written[0] if len(written) == 1 else base, "trial evaluation(s)"
