"""Decision instability of stored trials: actions, their similarity, and the step scores.

``agentrig instability RUN`` (``run/resample.py``) re-asks an arm's agent model, with the
exact request it had, at the first decision steps of stored trials and stores the samples
(``instability_store``). This module scores them; it never calls a model.

**Decision steps.** The i-th decision step of a trial (``step`` = i, 0-based) is its i-th
assistant message produced by a model call (``Message.call`` set), after the task's own message
history; ``turn`` is that message's index in the trial's messages. Assistant messages of the same
model call are one step, their tool calls in order (a Python agent that runs its own tool loop
records each call of a reply apart, as it runs it: ``call_tool``); ``turn`` is the first one's.

**Actions** (JSON-able dicts)::

    {"kind": "tool", "name": str, "arguments": dict | str}    # str: "!" + raw text that was
                                                               # not a JSON object
    {"kind": "tool", ..., "calls": [{"name", "arguments"}, …]} # several calls in one reply
    {"kind": "text", "text": str}

**Similarity** of two actions, in [0, 1]:

- tool vs tool: ``0.5 · [same name] + 0.5 · [same name] · argument agreement``, where argument
  agreement is the share of the union of argument keys whose values are equal as canonical JSON
  (two raw non-object arguments: 1 when equal, else 0; no arguments on both sides: 1). A wrong
  tool scores 0; the right tool with half its arguments right 0.75. Replies with several calls
  are compared call by call in order (a missing call scores 0) and averaged. A shell tool's
  arguments are those of its decision (``shell_tools.decision_arguments``: the command, without
  a free-text description).
- text vs text: ``rapidfuzz.fuzz.token_set_ratio / 100`` on lower-cased words without
  punctuation (``rapidfuzz.utils.default_process``; word order and repetition ignored; two empty
  texts: 1).
- tool vs text: 0.

**Step instability** (the figure) is decided at the level of decisions (``decisions``): the share
of {the taken action} ∪ {the samples} that do not take the majority decision, where two tool calls
are the same decision only when the tool and every argument that matters agree (values
normalised) — one wrong argument of eleven counts as much as a wrong tool. **Step consistency**
(a secondary, graded figure) = the mean similarity above over all unordered pairs of those
actions. A trajectory's instability is the mean over its resampled steps, with its most unstable
step named. Stability is not correctness: an agent that always takes the same wrong action is
perfectly stable.

Shapes (pydantic)::

    UnstableStep:  arm, domain, task_id, trial, step, turn, temperature, instability (decision
                   level), consistency (graded similarity, secondary),
                   taken (action), samples (list of actions), context (the text of the messages
                   between the previous decision and this one, bounded)
"""

from __future__ import annotations

import json
from itertools import combinations
from pathlib import Path
from typing import Any

from rapidfuzz import fuzz, utils

from agentrig.types import Strict

from .decisions import decision_instability, decision_key, tool_schemas
from .shell_tools import decision_arguments

__all__ = ["UnstableStep", "action_of", "decisions_of", "similarity", "consistency", "load_unstable_steps", "steps_of",
           "CONTEXT_CHARS"]

NAME_WEIGHT = 0.5
CONTEXT_CHARS = 1000


class UnstableStep(Strict):
    arm: str
    domain: str
    task_id: str
    trial: int
    step: int
    turn: int
    temperature: float
    instability: float
    consistency: float
    taken: dict[str, Any]
    samples: list[dict[str, Any]]
    context: str = ""


# ------------------------------------------------------------------------------------ actions


def _call_dict(name: str, arguments: Any, raw: str = "") -> dict[str, Any]:
    return {"name": name, "arguments": arguments if isinstance(arguments, dict) else "!" + (raw or "")}


def action_of(tool_calls: list[Any], text: str | None) -> dict[str, Any]:
    """The action of a reply: its tool calls (``ToolCall`` objects), else its text."""
    if tool_calls:
        calls = [_call_dict(c.name, c.arguments, getattr(c, "arguments_raw", "")) for c in tool_calls]
        action: dict[str, Any] = {"kind": "tool", **calls[0]}
        if len(calls) > 1:
            action["calls"] = calls
        return action
    return {"kind": "text", "text": text or ""}


def steps_of(record: Any) -> list[tuple[int, int, Any]]:
    """(step, turn, message) of a trial's decision steps (see the module docstring)."""
    traj = record.trajectory
    out: list[tuple[int, int, Any]] = []
    for turn in range(traj.history_len, len(traj.messages)):
        m = traj.messages[turn]
        if m.role != "assistant" or m.call is None:
            continue
        if out and out[-1][2].call == m.call:  # one reply recorded as several messages: one decision
            step, first, prev = out[-1]
            merged = prev.model_copy(update={"tool_calls": [*prev.tool_calls, *m.tool_calls],
                                             "content": prev.content or m.content})
            out[-1] = (step, first, merged)
            continue
        out.append((len(out), turn, m))
    return out


def context_before(record: Any, turn: int) -> str:
    """The text of the messages after the previous assistant message, up to ``turn``."""
    parts: list[str] = []
    for m in reversed(record.trajectory.messages[:turn]):
        if m.role == "assistant":
            break
        if m.content:
            parts.append(f"{m.role}: {m.content}")
    text = "\n".join(reversed(parts))
    return text[-CONTEXT_CHARS:]


def decisions_of(record: Any, schemas: dict[str, dict] | None = None) -> tuple[tuple, ...]:
    """The decision keys (``decisions.decision_key``) of a trial's decision steps, in order."""
    if schemas is None:
        schemas = tool_schemas(record)
    return tuple(decision_key(action_of(m.tool_calls, m.content), schemas) for _s, _t, m in steps_of(record))


# --------------------------------------------------------------------------------- similarity


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def _arguments_agreement(a: Any, b: Any) -> float:
    if isinstance(a, dict) and isinstance(b, dict):
        keys = set(a) | set(b)
        if not keys:
            return 1.0
        same = sum(1 for k in keys if k in a and k in b and _canonical(a[k]) == _canonical(b[k]))
        return same / len(keys)
    return 1.0 if a == b else 0.0


def _call_similarity(a: dict, b: dict) -> float:
    name = a.get("name")
    if name != b.get("name"):
        return 0.0
    args_a, args_b = a.get("arguments"), b.get("arguments")
    if isinstance(args_a, dict) and isinstance(args_b, dict):  # a shell call: its command, not its description
        args_a, args_b = decision_arguments(str(name), args_a), decision_arguments(str(name), args_b)
    return NAME_WEIGHT + (1 - NAME_WEIGHT) * _arguments_agreement(args_a, args_b)


def similarity(a: dict, b: dict) -> float:
    """The similarity of two actions (see the module docstring)."""
    if a.get("kind") != b.get("kind"):
        return 0.0
    if a.get("kind") == "text":
        ta, tb = (a.get("text") or "").strip(), (b.get("text") or "").strip()
        if not ta and not tb:
            return 1.0
        return fuzz.token_set_ratio(ta, tb, processor=utils.default_process) / 100.0
    ca, cb = a.get("calls") or [a], b.get("calls") or [b]
    n = max(len(ca), len(cb))
    return sum(_call_similarity(x, y) for x, y in zip(ca, cb)) / n


def consistency(taken: dict, samples: list[dict]) -> float:
    """Mean pairwise similarity of the taken action and the samples (1.0 with no pair)."""
    actions = [taken, *samples]
    pairs = list(combinations(actions, 2))
    if not pairs:
        return 1.0
    return sum(similarity(a, b) for a, b in pairs) / len(pairs)


# ------------------------------------------------------------------------------------ loading


def trial_schemas(store: Any, arm: str | None = None) -> dict[tuple[str, str, str, int], dict[str, dict]]:
    """The tools' JSON schemas of each stored trial (by (arm, domain, task id, trial))."""
    return {(r.key.arm, r.key.domain, r.key.task_id, r.key.trial): tool_schemas(r) for r in store.records(arm)}


def scored_steps(store: Any, arm: str | None = None,
                 schemas: dict[tuple[str, str, str, int], dict[str, dict]] | None = None,
                 rows: list[dict] | None = None) -> list[UnstableStep]:
    """Every resampled step in an open store (of ``arm`` when given), scored. ``schemas``: the
    tools' schemas per trial (``trial_schemas``; read from the store when not given)."""
    from agentrig.store.instability import read_rows

    if rows is None:
        rows = read_rows(store, arm)
    if schemas is None:
        schemas = trial_schemas(store, arm) if rows else {}
    out = []
    for row in rows:
        c = consistency(row["taken"], row["samples"])
        tools = schemas.get((row["arm"], row["domain"], row["task_id"], row["trial"]))
        unstable = decision_instability([row["taken"], *row["samples"]], tools)
        out.append(UnstableStep(
            arm=row["arm"], domain=row["domain"], task_id=row["task_id"], trial=row["trial"], step=row["step"],
            turn=row["turn"], temperature=row["temperature"], instability=round(unstable, 6),
            consistency=round(c, 6), taken=row["taken"], samples=row["samples"], context=row["context"]))
    return out


def load_unstable_steps(run_dir: Path, arm: str | None = None, *,
                        min_instability: float = 0.0) -> list[UnstableStep]:
    """Every resampled step of the run (of ``arm`` when given) with instability at least
    ``min_instability``, ordered by (arm, domain, task_id, trial, step, temperature). Empty when
    the run has not been resampled (``agentrig instability RUN``)."""
    from agentrig.store.rundir import open_run_dir

    store, _config = open_run_dir(Path(run_dir))
    try:
        return [s for s in scored_steps(store, arm) if s.instability >= min_instability]
    finally:
        store.close()
