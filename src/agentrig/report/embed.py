"""Which trajectories go into the report file, and in what form.

A small run has every trial's trajectory in the file. A large one (more than
``Limits.embed_all`` trials) would not fit a file a browser opens happily, so it gets a bounded
set per arm, in this order of preference: any trial another section links to (taxonomy examples,
forks), failed trials (round-robin over tasks, so many tasks are represented, up to
``failed_per_arm``), trials with no valid attempt (``invalid_per_arm``), an evenly spread sample
of successes (``passed_per_arm``). Either way embedding stops at ``byte_budget`` bytes of JSON,
each arm getting a fair share of what is left (so long trajectories cost the passed trials
first). Every other trial still has its grid cell (outcome, reward, termination, counts); the
report says what was left out and how to see it (``agentrig export RUN --format jsonl``).

Each embedded trial is one ``<script type="application/json">`` block, parsed by the page only
when the trial is opened. Its invalid attempts (up to ``attempts_per_trial``) come with it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .collect import FAIL, INVALID, PASS, ArmCells, Collected
from .safe import Markup, json_for_script

CLIP_CHARS = 20_000  # a longer text (a huge tool result) is clipped in the file


@dataclass(frozen=True)
class Limits:
    embed_all: int = 3_000
    failed_per_arm: int = 400
    invalid_per_arm: int = 25
    passed_per_arm: int = 40
    attempts_per_trial: int = 4
    byte_budget: int = 30_000_000


@dataclass
class Embedded:
    blocks: list[tuple[int, Markup]] = field(default_factory=list)   # (id, JSON)
    ids: dict[tuple[int, int, int], int] = field(default_factory=dict)  # (arm, task, trial) → id
    bytes: int = 0
    complete: bool = True          # every trial of every arm is in the file
    budget_hit: bool = False
    per_arm: list[dict[str, int]] = field(default_factory=list)


def _round_robin(cells: list, cap: int) -> list:
    by_task: dict[int, list] = {}
    for c in sorted(cells, key=lambda c: (c.task, c.trial)):
        by_task.setdefault(c.task, []).append(c)
    out: list = []
    queues = list(by_task.values())
    depth = 0
    while len(out) < cap and queues:
        queues = [q for q in queues if len(q) > depth]
        for q in queues:
            if len(out) >= cap:
                break
            out.append(q[depth])
        depth += 1
    return out


def _spread(cells: list, cap: int) -> list:
    cells = sorted(cells, key=lambda c: (c.task, c.trial))
    if len(cells) <= cap:
        return cells
    step = len(cells) / cap
    return [cells[int(i * step)] for i in range(cap)]


def select(arm: ArmCells, limits: Limits, wanted: Iterable[tuple[int, int]] = (), *, everything: bool = False) -> list:
    """The cells of one arm whose trajectories go in the file, most wanted first (``everything``:
    every cell, in the same order of preference)."""
    cells = list(arm.cells.values())
    big = len(cells)
    caps = (big, big, big) if everything else (limits.failed_per_arm, limits.invalid_per_arm, limits.passed_per_arm)
    pinned = [arm.cells[k] for k in wanted if k in arm.cells]
    picked = pinned + _round_robin([c for c in cells if c.status == FAIL], caps[0])
    picked += _round_robin([c for c in cells if c.status == INVALID], caps[1])
    picked += _spread([c for c in cells if c.status == PASS], caps[2])
    seen, out = set(), []
    for c in picked:
        if (c.task, c.trial) not in seen:
            seen.add((c.task, c.trial))
            out.append(c)
    return out


# -- shaping one record for the viewer ------------------------------------------------------------

def _clip(text: Any) -> Any:
    if isinstance(text, str) and len(text) > CLIP_CHARS:
        return text[:CLIP_CHARS] + f"\n… [{len(text) - CLIP_CHARS:,} more characters clipped in the report; " \
                                   "the whole text is in `agentrig export`]"
    return text


def _empty(v: Any) -> bool:
    # None, False and empty texts / lists / dicts are the models' defaults; 0 and 0.0 are values
    return v is None or v is False or (isinstance(v, (str, list, dict)) and not v)


def _lean(d: dict) -> dict:
    return {k: v for k, v in d.items() if not _empty(v)}


def _message(m: dict) -> dict:
    out = _lean(m)
    out["role"] = m["role"]
    out["turn"] = m.get("turn", 0)
    if "content" in out:
        out["content"] = _clip(out["content"])
    if "reasoning" in out:
        out["reasoning"] = _clip(out["reasoning"])
    calls = []
    for tc in m.get("tool_calls") or []:
        c = {"id": tc.get("id"), "name": tc.get("name")}
        if tc.get("arguments") is not None:
            c["arguments"] = tc["arguments"]
        else:
            c["arguments_raw"] = _clip(tc.get("arguments_raw", ""))
        if tc.get("arguments_error"):
            c["arguments_error"] = tc["arguments_error"]
        calls.append(c)
    if calls:
        out["tool_calls"] = calls
    if "extra" in out and len(json.dumps(out["extra"])) > 2_000:
        out["extra"] = {"clipped": "provider fields too large for the report; see `agentrig export`"}
    return out


def _call(c: dict) -> dict:
    out = _lean(c)
    out["role"], out["purpose"], out["turn"] = c.get("role"), c.get("purpose"), c.get("turn", 0)
    out["usage"] = _lean(c.get("usage") or {})
    out["attempts"] = [_lean(a) for a in c.get("attempts") or []]
    return out


def shape(record: dict) -> dict:
    """A stored record (as JSON) → what the trajectory viewer shows."""
    traj = record.get("trajectory") or {}
    verdict = record.get("verdict") or {}
    info = verdict.get("reward_info") or {}
    return {
        "attempt": record.get("attempt", 0), "seed": record.get("seed"),
        "started_at": record.get("started_at"), "duration_s": record.get("duration_s"),
        "valid": verdict.get("valid", True), "invalid_cause": verdict.get("invalid_cause"),
        "reward": verdict.get("reward"), "termination": verdict.get("termination"),
        "reward_info": {k: v for k, v in info.items() if v is not None and v != [] and v != {}} if info else None,
        "history_len": traj.get("history_len", 0),
        "messages": [_message(m) for m in traj.get("messages") or []],
        "calls": [_call(c) for c in traj.get("model_calls") or []],
        "events": traj.get("events") or [],
        "counters": traj.get("counters") or {},
    }


def embed(c: Collected, limits: Limits = Limits(), wanted: dict[int, set[tuple[int, int]]] | None = None
          ) -> Embedded:
    """Choose and shape the trajectories to put in the file. ``wanted[arm index]`` = cells that
    other sections link to (embedded first)."""
    total = sum(len(a.cells) for a in c.arms)
    out = Embedded()
    everything = total <= limits.embed_all
    for ai, arm in enumerate(c.arms):
        chosen = select(arm, limits, (wanted or {}).get(ai, ()), everything=everything)
        # each arm gets a fair share of what is left of the budget
        arm_budget = out.bytes + (limits.byte_budget - out.bytes) / (len(c.arms) - ai)
        store = arm.run.store
        done = {"pass": 0, "fail": 0, "invalid": 0}
        for cell in chosen:
            if out.bytes >= arm_budget:
                out.budget_hit = True
                break
            domain, task = c.tasks[cell.task]
            records = store.raw_records(arm.arm, domain, task, cell.trial)
            shown = [r for r in records if (r.get("verdict") or {}).get("valid")]
            others = [r for r in records if not (r.get("verdict") or {}).get("valid")]
            room = max(0, limits.attempts_per_trial - len(shown[:1]))
            attempts = shown[:1] + (others[len(others) - room:] if room else [])
            attempts.sort(key=lambda r: r.get("attempt", 0))
            payload = {"arm": arm.label, "domain": domain, "task": task, "trial": cell.trial,
                       "stored_attempts": len(records), "attempts": [shape(r) for r in attempts]}
            text = json_for_script(payload)
            block = len(out.blocks)
            out.blocks.append((block, text))
            out.ids[(ai, cell.task, cell.trial)] = block
            out.bytes += len(text)
            done[("fail", "pass", "invalid")[cell.status]] += 1
        counts = arm.counts()
        out.per_arm.append({"label": arm.label, **{f"{k}_embedded": v for k, v in done.items()},
                            "pass": counts["pass"], "fail": counts["fail"], "invalid": counts["invalid"]})
        if sum(done.values()) < len(arm.cells):
            out.complete = False
    return out
