"""The resampled decision steps in the run's store (tables of their own, beside ``trials``).

    resample_steps    one row per decision step that was resampled: its key (arm, domain,
                      task_id, trial, step), ``turn`` (index of the taken message in the trial),
                      ``call`` (its index in the trial's model calls), ``taken`` (the action, JSON)
                      and ``context`` (the text before the step, bounded)
    resample_samples  one row per VALID sample: the step's key, ``temperature``, ``idx`` (0-based
                      sample number), ``action`` (JSON), the model, tokens, latency, attempts

A sample is stored only once its call has succeeded and its reply holds an action; a failed call
(retries exhausted) or an empty reply leaves no row, so the next ``agentrig instability`` asks for
it again (resume: samples already stored are never asked again). Both tables are created with
``CREATE TABLE IF NOT EXISTS`` by the command that writes them; readers of a run that was never
resampled get no rows.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

from agentrig.store.store import Store

__all__ = ["DDL", "ensure", "stored_indexes", "write_step", "read_rows"]

DDL = """
CREATE TABLE IF NOT EXISTS resample_steps (
    arm      TEXT NOT NULL,
    domain   TEXT NOT NULL,
    task_id  TEXT NOT NULL,
    trial    INTEGER NOT NULL,
    step     INTEGER NOT NULL,
    turn     INTEGER NOT NULL,
    call     INTEGER NOT NULL,
    taken    TEXT NOT NULL,
    context  TEXT NOT NULL,
    PRIMARY KEY (arm, domain, task_id, trial, step)
);
CREATE TABLE IF NOT EXISTS resample_samples (
    arm               TEXT NOT NULL,
    domain            TEXT NOT NULL,
    task_id           TEXT NOT NULL,
    trial             INTEGER NOT NULL,
    step              INTEGER NOT NULL,
    temperature       REAL NOT NULL,
    idx               INTEGER NOT NULL,
    action            TEXT NOT NULL,
    model             TEXT NOT NULL,
    prompt_tokens     INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    latency_s         REAL NOT NULL,
    attempts          INTEGER NOT NULL,
    created_at        TEXT NOT NULL,
    PRIMARY KEY (arm, domain, task_id, trial, step, temperature, idx)
)
"""


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def ensure(store: Store) -> None:
    store.ensure_tables(DDL)


def stored_indexes(store: Store, arm: str, temperature: float) -> dict[tuple, set[int]]:
    """(domain, task_id, trial, step) → the sample numbers already stored at ``temperature``."""
    out: dict[tuple, set[int]] = {}
    for domain, task_id, trial, step, idx in store.query(
            "SELECT domain, task_id, trial, step, idx FROM resample_samples WHERE arm = ? AND temperature = ?",
            (arm, float(temperature))):
        out.setdefault((domain, task_id, trial, step), set()).add(idx)
    return out


def write_step(store: Store, key: tuple, *, turn: int, call: int, taken: dict, context: str,
               temperature: float, samples: list[tuple[int, dict, Any]]) -> None:
    """One step's row (kept when already there) and its new samples, in one transaction.
    ``samples``: (idx, action, completion) triples."""
    arm, domain, task_id, trial, step = key
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    statements: list[tuple[str, tuple]] = [(
        "INSERT OR IGNORE INTO resample_steps VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (arm, domain, task_id, trial, step, turn, call, _json(taken), context))]
    for idx, action, done in samples:
        statements.append((
            "INSERT OR IGNORE INTO resample_samples VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (arm, domain, task_id, trial, step, float(temperature), idx, _json(action), done.model,
             done.usage.prompt_tokens, done.usage.completion_tokens, round(done.latency_s, 6),
             len(done.attempts), now)))
    store.write_many(statements)


def read_rows(store: Store, arm: str | None = None) -> list[dict[str, Any]]:
    """Every resampled step with its samples, per temperature: dicts with the step's columns,
    ``temperature``, ``samples`` (actions in sample order) and the samples' token totals."""
    sql = ("SELECT s.arm, s.domain, s.task_id, s.trial, s.step, s.turn, s.call, s.taken, s.context, "
           "x.temperature, x.idx, x.action, x.prompt_tokens, x.completion_tokens "
           "FROM resample_steps s JOIN resample_samples x ON x.arm = s.arm AND x.domain = s.domain "
           "AND x.task_id = s.task_id AND x.trial = s.trial AND x.step = s.step")
    args: tuple = ()
    if arm is not None:
        sql += " WHERE s.arm = ?"
        args = (arm,)
    sql += " ORDER BY s.arm, s.domain, s.task_id, s.trial, s.step, x.temperature, x.idx"
    out: dict[tuple, dict[str, Any]] = {}
    for (a, d, t, tr, st, turn, call, taken, context, temp, _idx, action, pt, ct) in store.query(sql, args):
        row = out.get((a, d, t, tr, st, temp))
        if row is None:
            row = out[(a, d, t, tr, st, temp)] = {
                "arm": a, "domain": d, "task_id": t, "trial": tr, "step": st, "turn": turn, "call": call,
                "taken": json.loads(taken), "context": context, "temperature": temp, "samples": [],
                "prompt_tokens": 0, "completion_tokens": 0}
        row["samples"].append(json.loads(action))
        row["prompt_tokens"] += pt
        row["completion_tokens"] += ct
    return list(out.values())
