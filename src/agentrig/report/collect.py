"""What the report reads from run directories: the arms, the tasks, and one cell per trial.

Everything here comes from the store's light rows (``verdict_rows``): no trajectory is decoded.
A report may cover several runs; an arm is then labelled ``RUN:ARM`` (``RUN`` = the run
directory's name, made unique), otherwise just ``ARM``.

A cell is the trial's valid attempt when there is one, else its last invalid attempt. Its status:
``PASS`` (reward 1, τ²-bench's success), ``FAIL`` (a valid trial with a lower reward) or
``INVALID`` (no valid attempt: infrastructure spoiled every play). A trial with no row at all is
missing (not played yet) and has no cell.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentrig.analysis.reliability import is_success
from agentrig.errors import DataError
from agentrig.store.rundir import open_run_dir
from agentrig.store.store import Store, VerdictRow

FAIL, PASS, INVALID = 0, 1, 2


@dataclass
class RunSource:
    """One open run directory."""

    dir: Path
    label: str
    store: Store
    config: dict

    @property
    def name(self) -> str:
        return str(self.config.get("name") or self.dir.name)

    @property
    def run_id(self) -> str:
        return str(self.config.get("run_id") or "")

    @property
    def trials(self) -> int:
        return int(self.config.get("experiment", {}).get("run", {}).get("trials") or 0)

    def arm_names(self) -> list[str]:
        return [a["name"] for a in self.config.get("experiment", {}).get("arms", [])]

    def task_keys(self) -> list[tuple[str, str]]:
        return [(d, t) for d, ids in (self.config.get("tasks") or {}).items() for t in ids]


@dataclass
class Cell:
    task: int          # index into Collected.tasks
    trial: int
    status: int        # FAIL / PASS / INVALID
    row: VerdictRow    # the attempt shown
    attempts: int      # stored rows for this key (valid or not)


@dataclass
class ArmCells:
    label: str
    run: RunSource
    arm: str
    trials: int                                   # planned trials per task
    tasks: list[int]                              # task indices this arm plays
    cells: dict[tuple[int, int], Cell] = field(default_factory=dict)

    def counts(self) -> dict[str, int]:
        out = {"planned": len(self.tasks) * self.trials, "pass": 0, "fail": 0, "invalid": 0}
        for c in self.cells.values():
            out[("fail", "pass", "invalid")[c.status]] += 1
        out["missing"] = out["planned"] - out["pass"] - out["fail"] - out["invalid"]
        return out


@dataclass
class Collected:
    runs: list[RunSource]
    tasks: list[tuple[str, str]]                  # (domain, task_id), in first-seen order
    arms: list[ArmCells]
    terminations: list[str]                       # names indexed by the grid's codes

    def close(self) -> None:
        for r in self.runs:
            r.store.close()


def _labels(dirs: list[Path]) -> list[str]:
    names = [d.resolve().name or "run" for d in dirs]
    out, seen = [], {}
    for n in names:
        seen[n] = seen.get(n, 0) + 1
        out.append(n if names.count(n) == 1 else f"{n}#{seen[n]}")
    return out


def open_runs(run_dirs: list[Path]) -> list[RunSource]:
    if not run_dirs:
        raise DataError("no run directory given; pass the directory `agentrig run` printed")
    runs: list[RunSource] = []
    try:
        for d, label in zip(run_dirs, _labels([Path(p) for p in run_dirs])):
            store, config = open_run_dir(Path(d))
            runs.append(RunSource(Path(d), label, store, config))
    except BaseException:
        for r in runs:
            r.store.close()
        raise
    return runs


def collect(runs: list[RunSource]) -> Collected:
    tasks: list[tuple[str, str]] = []
    task_index: dict[tuple[str, str], int] = {}
    terms: dict[str, int] = {}
    arms: list[ArmCells] = []

    def tix(key: tuple[str, str]) -> int:
        if key not in task_index:
            task_index[key] = len(tasks)
            tasks.append(key)
        return task_index[key]

    several = len(runs) > 1
    for run in runs:
        planned = [tix(k) for k in run.task_keys()]
        planned_set = set(planned)
        rows = run.store.verdict_rows()
        names = run.arm_names() or sorted({r.arm for r in rows})
        by_arm = {a: ArmCells(f"{run.label}:{a}" if several else a, run, a, run.trials, planned)
                  for a in names}
        n_trials = run.trials
        for r in rows:
            arm = by_arm.get(r.arm)
            if arm is None or (n_trials and r.trial >= n_trials):
                continue
            t = task_index.get((r.domain, r.task_id))
            if t is None or t not in planned_set:
                continue
            terms.setdefault(r.termination, len(terms))
            key = (t, r.trial)
            old = arm.cells.get(key)
            status = (PASS if is_success(r.reward) else FAIL) if r.valid else INVALID
            if old is None:
                arm.cells[key] = Cell(t, r.trial, status, r, 1)
            else:
                old.attempts += 1
                if r.valid or old.status == INVALID:  # the valid attempt wins; else the latest
                    old.status, old.row = status, r
        arms.extend(by_arm.values())
    return Collected(runs, tasks, arms, list(terms))


def grid_payload(c: Collected, embedded: dict[tuple[int, int, int], int]) -> dict[str, Any]:
    """The outcome grid for the page's script, compact: one array per cell.

    ``cells[arm]`` = ``[task, trial, status, reward, termination, messages, model calls, tokens,
    retries, seconds, attempts, embedded]`` where ``embedded`` is the id of the trial's
    ``<script type="application/json">`` block, or -1 when its trajectory is not in the file."""
    term = {name: i for i, name in enumerate(c.terminations)}
    arms = []
    for ai, arm in enumerate(c.arms):
        cells = []
        for (t, trial), cell in sorted(arm.cells.items()):
            r = cell.row
            cells.append([t, trial, cell.status, round(r.reward, 4), term[r.termination],
                          r.n_messages, r.n_calls, r.prompt_tokens + r.completion_tokens, r.retries,
                          round(r.duration_s, 3), cell.attempts, embedded.get((ai, t, trial), -1)])
        arms.append({"label": arm.label, "run": arm.run.label, "arm": arm.arm, "trials": arm.trials,
                     "tasks": arm.tasks, "cells": cells, "run_dir": str(arm.run.dir)})
    return {"tasks": [list(t) for t in c.tasks], "terminations": c.terminations, "arms": arms}
