"""The leniency audit: what the gold agent and a do-nothing agent earn on each task.

A do-nothing agent never calls a tool and says nothing useful. Its DB and ENV_ASSERTION
components are computed exactly (state judged after an empty trajectory); ACTION passes only
when the task has no gold actions; COMMUNICATE only when there is nothing to communicate;
NL_ASSERTION needs the judge model, so a task whose basis includes it is *decided by the judge*.
A task the do-nothing agent passes on every component of its reward basis is flagged lenient.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel

from .domain import DomainSpec
from .replay import gold_calls, judge_state


class TaskAudit(BaseModel):
    domain: str
    task_id: str
    reward_basis: list[str]
    gold: dict[str, float | None]  # component -> reward (None = needs the judge)
    noop: dict[str, float | None]
    lenient: bool
    undecided: bool  # lenient unless the NL assertions (judge) catch it
    reason: str


def _components(task, judged, *, noop: bool) -> dict[str, float | None]:
    crit = task.evaluation_criteria
    actions = (crit.actions if crit else None) or []
    info = (crit.communicate_info if crit else None) or []
    nl = (crit.nl_assertions if crit else None) or []
    return {
        "DB": judged.db_reward,
        "ENV_ASSERTION": judged.env_reward,
        "ACTION": (0.0 if actions else 1.0) if noop else 1.0,
        "COMMUNICATE": (0.0 if info else 1.0) if noop else 1.0,
        "NL_ASSERTION": None if nl else 1.0,
    }


def audit_task(spec: DomainSpec, domain_dir: Path | None, task) -> TaskAudit:
    basis = [str(b) for b in task.reward_basis]
    gold = _components(task, judge_state(spec, domain_dir, task, gold_calls(task)), noop=False)
    noop = _components(task, judge_state(spec, domain_dir, task, []), noop=True)
    in_basis = {c: noop[c] for c in basis if c in noop}
    failing = [c for c, v in in_basis.items() if v is not None and v < 1.0]
    undecided = [c for c, v in in_basis.items() if v is None]
    lenient = not failing
    if failing:
        reason = "a do-nothing agent fails " + ", ".join(failing)
    elif undecided:
        reason = "a do-nothing agent passes every state and action check; only the judge (NL_ASSERTION) can fail it"
    else:
        reason = "a do-nothing agent passes on " + ", ".join(in_basis) + " (e.g. a refusal task whose gold changes nothing)"
    return TaskAudit(domain=spec.name, task_id=str(task.id), reward_basis=basis, gold=gold, noop=noop,
                     lenient=lenient, undecided=lenient and bool(undecided), reason=reason)
