"""What ``agentrig guidelines derive`` shows the analyst model: evidence of inconsistent decisions.

Two kinds of evidence, per arm of a stored run:

- **unstable steps** (``agentrig instability RUN`` stored them; ``analysis.instability``): per
  trial, the ``top`` steps with instability at least ``threshold``, most unstable first — the
  context before the step, the action taken and the distinct sampled alternatives with counts;
- **forks** of reruns: per task with mixed outcomes (some valid trials succeeded, some failed),
  one successful and one failed trial whose action sequences (``Benchmark.action_sequence``: τ²
  tool calls, terminal commands) differ, side by side at the first action where they part: the
  shared actions just before it and the next ``FORK_NEXT`` actions of each branch. Its ``step``
  is that action's index in the sequence.

Without a stored instability table the unstable steps are simply absent (a note says so) and
the forks are the evidence. Both are generic: nothing here knows a benchmark.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from agentrig.analysis.reliability import is_success
from agentrig.types import Strict

FORK_BEFORE = 3  # shared actions shown before the fork
FORK_NEXT = 3  # actions of each branch shown from the fork on
TEXT_MAX = 600


class Evidence(Strict):
    kind: str  # "unstable_step" | "fork"
    task: str  # "<group>/<task id>"
    trial: int
    step: int
    text: str  # what the analyst reads (already cut)
    weight: float = 0.0  # instability, or the task's mixed-outcome balance; for ordering


def _clip(text: str, limit: int = TEXT_MAX) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit] + " …"


def _action(a: dict[str, Any]) -> str:
    if a.get("kind") == "tool":
        args = a.get("arguments")
        shown = args if isinstance(args, str) else json.dumps(args, sort_keys=True, ensure_ascii=False)
        return _clip(f"call {a.get('name')}({shown})", 300)
    return _clip(f"say: {a.get('text', '')}", 300)


def unstable_evidence(run_dir: Path, arm: str, *, top: int, threshold: float) -> tuple[list[Evidence], bool]:
    """(the top unstable steps per trial, whether the run has a stored instability table)."""
    from agentrig.analysis.instability import load_unstable_steps

    every = load_unstable_steps(run_dir, arm)
    if not every:
        return [], False
    by_trial: dict[tuple, list] = defaultdict(list)
    for s in every:
        if s.instability >= threshold and s.instability > 0:
            by_trial[(s.domain, s.task_id, s.trial)].append(s)
    out: list[Evidence] = []
    for (domain, task_id, trial), steps in sorted(by_trial.items()):
        for s in sorted(steps, key=lambda s: (-s.instability, s.step))[:top]:
            counts: dict[str, int] = {}
            for sample in s.samples:
                shown = _action(sample)
                counts[shown] = counts.get(shown, 0) + 1
            alternatives = "; ".join(f"{n}× {a}" for a, n in sorted(counts.items(), key=lambda kv: -kv[1]))
            text = (f"context before the step: {_clip(s.context) or '(none)'}\n"
                    f"action taken: {_action(s.taken)}\n"
                    f"resampled alternatives ({len(s.samples)} samples): {alternatives}\n"
                    f"instability {s.instability:.2f}")
            out.append(Evidence(kind="unstable_step", task=f"{domain}/{task_id}", trial=trial, step=s.step,
                                text=text, weight=s.instability))
    return out, True


def _token(tok: Any) -> str:
    if isinstance(tok, (tuple, list)) and len(tok) == 2:
        name, args = tok
        return _clip(f"{name}({args})" if name != "bash" else f"$ {args}", 300)
    return _clip(str(tok), 300)


def fork_evidence(records: Any, action_sequence: Any) -> list[Evidence]:
    """One fork per task with mixed outcomes: a successful and a failed trial side by side."""
    trials: dict[tuple[str, str], list[tuple[int, bool, tuple]]] = defaultdict(list)
    for r in records:
        k = r.key
        trials[(k.domain, k.task_id)].append((k.trial, is_success(r.verdict.reward), tuple(action_sequence(r))))
    out: list[Evidence] = []
    for (domain, task_id), items in sorted(trials.items()):
        items.sort()
        wins = [t for t in items if t[1]]
        losses = [t for t in items if not t[1]]
        if not wins or not losses:
            continue
        pair = next(((w, f) for f in losses for w in wins if w[2] != f[2]), None)
        if pair is None:
            continue  # same actions, different outcome: nothing to compare here
        (wt, _, wc), (ft, _, fc) = pair
        at = 0
        while at < len(wc) and at < len(fc) and wc[at] == fc[at]:
            at += 1
        shared = [_token(t) for t in wc[max(0, at - FORK_BEFORE):at]]
        def branch(chain: tuple) -> str:
            nxt = [_token(t) for t in chain[at:at + FORK_NEXT]]
            return " → ".join(nxt) if nxt else "(stopped acting)"
        share = len(wins) / len(items)
        text = (f"{len(wins)} of {len(items)} reruns succeeded; they part at action {at}\n"
                f"shared actions just before: {' → '.join(shared) if shared else '(none: the first action differs)'}\n"
                f"successful branch (trial {wt}): {branch(wc)}\n"
                f"failed branch (trial {ft}): {branch(fc)}")
        out.append(Evidence(kind="fork", task=f"{domain}/{task_id}", trial=ft, step=at, text=text,
                            weight=1.0 - abs(share - 0.5)))
    return out
