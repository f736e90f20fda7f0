"""Decisions: when two actions of an agent are the same decision, and where reruns part.

One definition, used by ``agentrig analyze`` (``TaskConsistency.diverge_step``), the report and
``agentrig instability`` (a step's instability and a task's ``fork_step``) alike.

**Actions** are the dicts of ``instability.action_of``: ``{"kind": "tool", "name", "arguments"}``
(with ``"calls"`` when a reply holds several calls) or ``{"kind": "text", "text"}``.

**The same decision.** Two tool actions are the same decision only when they call the same tools
in the same order and every argument that matters agrees, values normalised:

- strings: surrounding whitespace dropped, inner runs of whitespace made one space;
- numbers: ``3``, ``3.0`` and (where the tool's schema types the argument as a number or an
  integer) ``"3"`` are one value; a boolean is never a number;
- lists: compared in order, except where the tool's JSON schema says the list is a set
  (``"uniqueItems": true``): then sorted;
- an argument that is absent, ``null``, or equal to its schema ``default`` does not matter;
- arguments that were not a JSON object (``"!" + raw text``) are compared as normalised text;
- a shell tool's call (``shell_tools``: ``bash``, Codex's ``exec_command``, Claude Code's ``Bash``…)
  is its command and the arguments that change what runs: a free-text ``description`` or an
  output-paging argument does not matter.

One wrong argument of eleven makes a different decision, exactly as a wrong tool does. Two text
replies are the same decision when their words agree at least ``TEXT_SAME`` (rapidfuzz's
``token_set_ratio`` on lower-cased words without punctuation): a paraphrase is the same decision,
another message is not — except a text carrying fenced code blocks (a text-mode agent's action):
its decision is its code, whitespace-normalised, compared exactly (one wrong word in a command
is another decision). A tool action and a text are different decisions.

**Grouping.** ``groups(actions)`` gives each action the index of its decision: actions are taken
in order, and each joins the first earlier group whose first action is the same decision (for
tool actions this is exact equality of normalised keys, so the grouping does not depend on the
order; for texts it is the first close enough).

**Instability of a step** = the share of its actions (the action taken and its samples) that are
not the majority decision: ``1 − largest group / n``; 0 when all agree, at most ``1 − 1/n``.

**Where reruns part** (``parting_step``): the first decision step at which the valid trials of a
task did not all take the same decision — or one trial had stopped deciding while another went
on; None when they decided alike all along (or there are fewer than two trials).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

from rapidfuzz import fuzz, utils

from .shell_tools import decision_arguments

__all__ = ["TEXT_SAME", "normalise", "decision_key", "same_decision", "groups", "decision_instability",
           "parting_step", "tool_schemas"]

TEXT_SAME = 0.8
_SPACE = re.compile(r"\s+")
_FENCED = re.compile(r"```[^\n`]*\n(.*?)```", re.DOTALL)
_NUMBER_TYPES = {"number", "integer"}


def _types(schema: dict | None) -> set[str]:
    t = (schema or {}).get("type")
    return {t} if isinstance(t, str) else set(t) if isinstance(t, list) else set()


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)


def normalise(value: Any, schema: dict | None = None) -> Any:
    """A value normalised for comparison (see the module docstring)."""
    schema = schema if isinstance(schema, dict) else {}
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, (int, float)):
        return int(value) if float(value).is_integer() else float(value)
    if isinstance(value, str):
        text = _SPACE.sub(" ", value).strip()
        if _types(schema) & _NUMBER_TYPES:
            try:
                number = float(text)
            except ValueError:
                return text
            return int(number) if number.is_integer() else number
        return text
    if isinstance(value, (list, tuple)):
        items = [normalise(v, schema.get("items")) for v in value]
        if schema.get("uniqueItems") is True:
            items = sorted(items, key=_canonical)
        return items
    if isinstance(value, dict):
        props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
        out = {}
        for k, v in value.items():
            sub = props.get(k) if isinstance(props.get(k), dict) else {}
            if v is None or ("default" in sub and normalise(v, sub) == normalise(sub["default"], sub)):
                continue  # an argument left at its default does not matter
            out[str(k)] = normalise(v, sub)
        return out
    return value


def _call_key(call: dict, schemas: dict[str, dict] | None) -> tuple[str, str]:
    name = str(call.get("name"))
    args = call.get("arguments")
    if isinstance(args, dict):
        return name, _canonical(normalise(decision_arguments(name, args), (schemas or {}).get(name)))
    return name, "!" + _SPACE.sub(" ", str(args or "")).strip()


def decision_key(action: dict, schemas: dict[str, dict] | None = None) -> tuple:
    """A hashable key of an action: equal keys are the same decision (texts: see ``same_decision``)."""
    if action.get("kind") == "text":
        text = action.get("text") or ""
        code = _FENCED.findall(text)
        if code:
            return ("code", tuple(_SPACE.sub(" ", c).strip() for c in code))
        return ("text", _SPACE.sub(" ", text).strip())
    calls = action.get("calls") or [action]
    return ("tool", tuple(_call_key(c, schemas) for c in calls))


def _same_key(a: tuple, b: tuple) -> bool:
    if a[0] != b[0]:
        return False
    if a[0] != "text":
        return a == b
    ta, tb = a[1], b[1]
    if ta == tb:
        return True
    if not ta or not tb:
        return False
    return fuzz.token_set_ratio(ta, tb, processor=utils.default_process) / 100.0 >= TEXT_SAME


def same_decision(a: dict, b: dict, schemas: dict[str, dict] | None = None) -> bool:
    """Whether two actions are the same decision (see the module docstring)."""
    return _same_key(decision_key(a, schemas), decision_key(b, schemas))


def _group_keys(keys: Sequence[tuple]) -> list[int]:
    heads: list[tuple] = []
    out = []
    for k in keys:
        for i, h in enumerate(heads):
            if _same_key(h, k):
                out.append(i)
                break
        else:
            heads.append(k)
            out.append(len(heads) - 1)
    return out


def groups(actions: Sequence[dict], schemas: dict[str, dict] | None = None) -> list[int]:
    """The decision group of each action (0 = the first action's decision)."""
    return _group_keys([decision_key(a, schemas) for a in actions])


def decision_instability(actions: Sequence[dict], schemas: dict[str, dict] | None = None) -> float:
    """The share of ``actions`` not taking the majority decision (0.0 for fewer than two)."""
    if len(actions) < 2:
        return 0.0
    counts = Counter(groups(actions, schemas))
    return 1.0 - max(counts.values()) / len(actions)


def parting_step(sequences: Sequence[Sequence[tuple]]) -> int | None:
    """The first step where the trials' decisions (``decision_key`` tuples, one sequence per
    trial) are not all the same, or one sequence has ended while another goes on."""
    if len(sequences) < 2:
        return None
    for i in range(max(len(s) for s in sequences)):
        if any(len(s) <= i for s in sequences):
            return i
        if len(set(_group_keys([s[i] for s in sequences]))) > 1:
            return i
    return None


def tool_schemas(record: Any) -> dict[str, dict]:
    """The JSON schemas of the tools offered to the agent in a stored trial (by tool name), from
    its recorded requests; empty for trials stored before requests were recorded."""
    out: dict[str, dict] = {}
    for request in getattr(record.trajectory, "agent_requests", None) or ():
        for tool in request.tools or ():
            fn = tool.get("function") if isinstance(tool.get("function"), dict) else tool
            name = fn.get("name")
            params = fn.get("parameters") or fn.get("input_schema")
            if isinstance(name, str) and isinstance(params, dict):
                out.setdefault(name, params)
    return out
