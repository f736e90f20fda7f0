"""Consistency across repeated trials: where an agent's behaviour forks, task by task.

For one task played by one arm, from its VALID trials in trial order:

- ``pattern``: the outcomes as a string, ``"✓"`` for a success (reward 1, ``is_success``) and
  ``"✗"`` for a failure, e.g. ``"✓✗✓✓"``; ``trials`` gives the trial index of each character;
  ``n`` / ``c`` the trial and success counts; ``mixed`` is ``0 < c < n``.
- the **tool-call chain** of a trial: its tool calls after the task's own message history
  (``Trajectory.history_len``), by either side, in order. Each call is one token
  ``(name, arguments)``: ``name`` is the tool name, prefixed ``"user:"`` for a call of the user
  simulator's tools; ``arguments`` is the canonical JSON of the arguments
  (``json.dumps(sort_keys=True, separators=(",", ":"), ensure_ascii=False)``), or
  ``"!" + arguments_raw`` for a call whose arguments were not a JSON object (it never reached the
  environment, but it is behaviour).
- ``distinct_chains`` (whole tokens) and ``distinct_name_chains`` (tool names only).
- ``diverge_at``: the first index into the chains at which not all trials agree (a trial whose
  chain has ended counts as disagreeing with one that goes on); None when every chain is the
  same. ``diverge_at_name`` the same by tool names only. ``fork`` lists the options taken at
  ``diverge_at``: each distinct token there (None = the chain had ended) with the trials that took
  it and how many of them succeeded.
- ``similarity``: the mean over ALL unordered pairs of trials of
  ``1 − levenshtein(a, b) / max(len a, len b)`` over token sequences (1.0 for two empty chains);
  None when there are fewer than two trials. Exact — no pair sampling: identical chains are
  grouped first (weights), and the distances between distinct chains are computed by a dynamic
  programme vectorised with numpy over all pairs of a task at once (one row operation per
  position of the shorter chain; the within-row recurrence is a running minimum). Cost grows
  with pairs of DISTINCT chains × chain length²: 500 tasks × 50 trials with chains of 4–20 calls
  take about a second on one core (test_consistency's speed test prints it); 30–50 calls with
  every chain distinct about 8 s.

``rank(items)`` orders tasks most inconsistent first: mixed outcomes first; then lower
similarity (None counts as 1.0); then more distinct chains; then more distinct name chains; then
less balanced outcomes last (``|c/n − 0.5|`` ascending); then arm, domain, task id.

Memory: the analysis of a large store streams records. ``chain_of(record)`` extracts the chain
(interned strings), so the record can be dropped; ``task_consistency_from_chains(...)`` takes
``(trial, success, chain)`` triples; ``ConsistencyCollector`` does both for a stream of records
and yields one ``TaskConsistency`` per (arm, domain, task).

Shapes (pydantic)::

    Token = tuple[str, str]                  # (name, canonical JSON arguments)
    Chain = tuple[Token, ...]

    ForkOption:       call: str | None  (``name(args)`` text, args cut to 200 chars; None = ended)
                      name: str | None, trials: list[int], successes: int
    TaskConsistency:  arm: str, domain: str, task_id: str,
                      n: int, c: int, pattern: str, trials: list[int], mixed: bool,
                      distinct_chains: int, distinct_name_chains: int,
                      diverge_at: int | None, diverge_at_name: int | None, diverge_step: int | None,
                      similarity: float | None, pairs: int (pairs averaged = n(n−1)/2),
                      mean_calls: float, modal_share: float (share of trials taking the most
                      common chain), fork: list[ForkOption]
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
from rich.markup import escape
from rich.text import Text

from agentrig.benchmark import Chain, Token, chain_of
from agentrig.types import Strict, TrialRecord

from .decisions import parting_step
from .figure import ArmInputs, Figure
from .instability import decisions_of
from .reliability import is_success

__all__ = ["Token", "Chain", "ForkOption", "TaskConsistency", "chain_of", "edit_distance",
           "similarity", "task_consistency", "task_consistency_from_chains", "rank",
           "ConsistencyCollector", "PASS", "FAIL"]

PASS, FAIL = "✓", "✗"
_CALL_TEXT_MAX = 200


class ForkOption(Strict):
    call: str | None  # "name(args)" at the fork step; None: the chain had ended there
    name: str | None
    trials: list[int]
    successes: int


class TaskConsistency(Strict):
    arm: str
    domain: str
    task_id: str
    n: int
    c: int
    pattern: str
    trials: list[int]
    mixed: bool
    distinct_chains: int
    distinct_name_chains: int
    diverge_at: int | None
    diverge_at_name: int | None
    diverge_step: int | None = None
    similarity: float | None
    pairs: int
    mean_calls: float
    modal_share: float
    fork: list[ForkOption] = []


# ---- chains ---------------------------------------------------------------------------------


def _call_text(token: Token) -> str:
    name, args = token
    if len(args) > _CALL_TEXT_MAX:
        args = args[: _CALL_TEXT_MAX - 1] + "…"
    return f"{name}({args})"


# ---- edit distance --------------------------------------------------------------------------


def edit_distance(a: Sequence, b: Sequence) -> int:
    """Levenshtein distance between two sequences (insert, delete, substitute: cost 1 each)."""
    if len(a) < len(b):
        a, b = b, a
    prev = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        cur = [i]
        for j, y in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x != y)))
        prev = cur
    return prev[-1]


def similarity(a: Sequence, b: Sequence) -> float:
    """1 − edit_distance / max(len a, len b); 1.0 for two empty sequences."""
    longest = max(len(a), len(b))
    return 1.0 if longest == 0 else 1.0 - edit_distance(a, b) / longest


def _pair_distances(short: np.ndarray, short_len: np.ndarray, long: np.ndarray, long_len: np.ndarray) -> np.ndarray:
    """Levenshtein distances of P pairs at once. ``short`` (P, S) and ``long`` (P, L) hold token
    ids padded with values that never match (−1 and −2); ``short_len <= long_len`` per pair."""
    pairs, width = long.shape[0], long.shape[1] + 1
    dtype = np.int16 if width + short.shape[1] < 30000 else np.int32
    cols = np.arange(width, dtype=dtype)
    row = np.broadcast_to(cols, (pairs, width)).copy()  # row 0: distance from the empty prefix
    cand = np.empty_like(row)
    cost = np.empty((pairs, width - 1), dtype=dtype)
    out = np.empty(pairs, dtype=np.int32)
    rows = np.arange(pairs)
    done = short_len == 0
    out[done] = long_len[done]
    for i in range(1, short.shape[1] + 1):
        np.not_equal(long, short[:, i - 1 : i], out=cost, casting="unsafe")
        cost += row[:, :-1]  # the diagonal: match / substitution
        cand[:, 0] = i
        np.add(row[:, 1:], 1, out=cand[:, 1:])  # from above: deletion
        np.minimum(cand[:, 1:], cost, out=cand[:, 1:])
        # from the left (insertion): row[j] = min_k<=j cand[k] + (j − k) = j + running min(cand − k)
        cand -= cols
        np.minimum.accumulate(cand, axis=1, out=row)
        row += cols
        hit = short_len == i
        if hit.any():
            out[hit] = row[rows[hit], long_len[hit]]
    return out


def _mean_similarity(chains: list[tuple[int, ...]], weights: list[int]) -> float:
    """Mean pairwise similarity over all unordered pairs of trials, given the distinct chains
    (as token-id tuples) and how many trials took each."""
    n = sum(weights)
    total_pairs = n * (n - 1) // 2
    same = sum(w * (w - 1) // 2 for w in weights)  # pairs of identical chains: similarity 1
    u = len(chains)
    if u < 2:
        return 1.0
    ii, jj = np.triu_indices(u, k=1)
    lens = np.array([len(c) for c in chains], dtype=np.int32)
    w = np.array(weights, dtype=np.int64)
    la, lb = lens[ii], lens[jj]
    swap = la > lb
    si, li = np.where(swap, jj, ii), np.where(swap, ii, jj)  # short side, long side
    short_len, long_len = lens[si], lens[li]
    s_width, l_width = int(short_len.max()), int(long_len.max())
    pad_short = np.full((u, max(s_width, 1)), -1, dtype=np.int32)
    pad_long = np.full((u, max(l_width, 1)), -2, dtype=np.int32)
    for k, c in enumerate(chains):
        if c:
            pad_short[k, : min(len(c), s_width)] = c[:s_width]
            pad_long[k, : min(len(c), l_width)] = c[:l_width]
    dist = _pair_distances(pad_short[si, :s_width], short_len, pad_long[li, :l_width], long_len)
    longest = np.maximum(long_len, 1)  # long_len == 0 only for two empty chains: never distinct
    sims = 1.0 - dist / longest
    weighted = float(np.sum(sims * (w[ii] * w[jj])))
    return (same + weighted) / total_pairs


# ---- one task -------------------------------------------------------------------------------


def _first_divergence(chains: list[tuple]) -> int | None:
    if len(set(chains)) <= 1:
        return None
    step = 0
    while True:
        seen = {c[step] if step < len(c) else None for c in chains}
        if len(seen) > 1:
            return step
        step += 1


def task_consistency_from_chains(arm: str, domain: str, task_id: str,
                                 trials: Iterable[tuple[int, bool, Chain]],
                                 decisions: dict[int, tuple] | None = None) -> TaskConsistency:
    """Consistency of one task and arm from ``(trial index, success, chain)`` of its valid
    trials (any order; sorted by trial index here); ``decisions``: each trial's decision keys
    (``decisions.decisions_of``), for ``diverge_step``."""
    items = sorted(trials, key=lambda t: t[0])
    step = None
    if decisions is not None and all(t in decisions for t, _ok, _ch in items):
        step = parting_step([decisions[t] for t, _ok, _ch in items])
    n = len(items)
    c = sum(1 for _, ok, _ in items if ok)
    chains = [ch for _, _, ch in items]
    names = [tuple(tok[0] for tok in ch) for ch in chains]
    counts = Counter(chains)
    ids: dict[Token, int] = {}
    distinct = list(counts)
    encoded = [tuple(ids.setdefault(tok, len(ids)) for tok in ch) for ch in distinct]
    sim = _mean_similarity(encoded, [counts[ch] for ch in distinct]) if n >= 2 else None
    diverge = _first_divergence(chains)
    fork: list[ForkOption] = []
    if diverge is not None:
        by_option: dict[Token | None, list[tuple[int, bool]]] = {}
        for trial, ok, ch in items:
            tok = ch[diverge] if diverge < len(ch) else None
            by_option.setdefault(tok, []).append((trial, ok))
        for tok, taken in sorted(by_option.items(), key=lambda kv: (-len(kv[1]), kv[1][0][0])):
            fork.append(ForkOption(call=None if tok is None else _call_text(tok), name=None if tok is None else tok[0],
                                   trials=[t for t, _ in taken], successes=sum(1 for _, ok in taken if ok)))
    return TaskConsistency(
        arm=arm, domain=domain, task_id=task_id, n=n, c=c,
        pattern="".join(PASS if ok else FAIL for _, ok, _ in items), trials=[t for t, _, _ in items],
        mixed=0 < c < n, distinct_chains=len(counts), distinct_name_chains=len(set(names)),
        diverge_at=diverge, diverge_at_name=_first_divergence(names), diverge_step=step, similarity=sim,
        pairs=n * (n - 1) // 2, mean_calls=(sum(len(ch) for ch in chains) / n) if n else 0.0,
        modal_share=(max(counts.values()) / n) if n else 0.0, fork=fork,
    )


def task_consistency(trials: list[TrialRecord]) -> TaskConsistency:
    """Consistency of one task and arm from its records (invalid ones are skipped; when a trial
    index appears twice among the valid ones, the first is kept)."""
    if not trials:
        raise ValueError("task_consistency needs at least one record")
    first = trials[0].key
    seen: set[int] = set()
    items = []
    decisions: dict[int, tuple] = {}
    for r in trials:
        k = r.key
        if (k.arm, k.domain, k.task_id) != (first.arm, first.domain, first.task_id):
            raise ValueError(f"task_consistency got records of several tasks/arms: {first.label()} and {k.label()}")
        if not r.verdict.valid or k.trial in seen:
            continue
        seen.add(k.trial)
        items.append((k.trial, is_success(r.verdict.reward), chain_of(r)))
        decisions[k.trial] = decisions_of(r)
    return task_consistency_from_chains(first.arm, first.domain, first.task_id, items, decisions)


def _rank_key(t: TaskConsistency) -> tuple:
    sim = 1.0 if t.similarity is None else t.similarity
    balance = abs(t.c / t.n - 0.5) if t.n else 0.5
    return (not t.mixed, sim, -t.distinct_chains, -t.distinct_name_chains, balance, t.arm, t.domain, t.task_id)


def rank(items: Iterable[TaskConsistency]) -> list[TaskConsistency]:
    """Most inconsistent first (see the module docstring for the order)."""
    return sorted(items, key=_rank_key)


class ConsistencyCollector:
    """Streams records into chains (the records themselves are not kept; equal tokens share one
    tuple). Invalid records are skipped, so a task with no valid trial yields nothing; for a
    trial index seen twice the first valid record is kept."""

    def __init__(self, chain: Callable[[TrialRecord], Chain] | None = None) -> None:
        self._chain = chain or chain_of  # the benchmark's action sequence (default: the tool calls)
        self._by_task: dict[tuple[str, str, str], dict[int, tuple[int, bool, Chain]]] = {}
        self._tokens: dict[Token, Token] = {}  # one tuple object per distinct token
        self._decisions: dict[tuple[str, str, str], dict[int, tuple]] = {}

    def _shared(self, chain: Chain) -> Chain:
        tokens = self._tokens
        return tuple(tokens.setdefault(tok, tok) for tok in chain)

    def add(self, record: TrialRecord) -> None:
        if not record.verdict.valid:
            return
        k = record.key
        per = self._by_task.setdefault((k.arm, k.domain, k.task_id), {})
        if k.trial not in per:
            per[k.trial] = (k.trial, is_success(record.verdict.reward), self._shared(self._chain(record)))
            self._decisions.setdefault((k.arm, k.domain, k.task_id), {})[k.trial] = decisions_of(record)

    def add_chain(self, arm: str, domain: str, task_id: str, trial: int, success: bool, chain: Chain) -> None:
        per = self._by_task.setdefault((arm, domain, task_id), {})
        if trial not in per:
            per[trial] = (trial, success, self._shared(chain))

    def results(self) -> list[TaskConsistency]:
        """One TaskConsistency per (arm, domain, task), in key order."""
        return [task_consistency_from_chains(a, d, t, per.values(), self._decisions.get((a, d, t)))
                for (a, d, t), per in sorted(self._by_task.items())]


# ---- the figure (analysis/figure.py) ------------------------------------------------------------

TOP_TASKS = 10  # inconsistent tasks ``agentrig analyze`` lists per arm
REPORT_ROWS = 12  # … and the report (each with the first FORKS_SHOWN options at its fork)
FORKS_SHOWN = 4


class Consistency(Strict):
    tasks: list[TaskConsistency] = []  # one per task with valid trials, most inconsistent first


def shown(result: Consistency, rows: int = REPORT_ROWS) -> list[TaskConsistency]:
    """The most inconsistent tasks (mixed outcomes or more than one chain), at most ``rows``."""
    return [t for t in result.tasks if t.mixed or t.distinct_chains > 1][:rows]


class ConsistencyFigure(Figure):
    """Where each arm's behaviour forks: per task, its outcomes, distinct tool-call chains, where
    they diverge and the options at the fork (from the record pass: the benchmark's action
    sequence of each valid trial)."""

    id = "consistency"
    result = Consistency
    json_keys = ("consistency",)
    analyze_slot = "details"
    report_slot = "consistency"
    section = "consistency"

    def collector(self, arm: ArmInputs) -> ConsistencyCollector:
        return ConsistencyCollector(chain=arm.bench.action_sequence if arm.bench is not None else None)

    def compute(self, arm: ArmInputs) -> Consistency:
        return Consistency(tasks=rank(arm.collected[self.id].results()))

    def dump(self, dumped: Any) -> dict[str, Any]:
        return {"consistency": [] if dumped is None else dumped["tasks"]}

    def load(self, data: dict[str, Any]) -> Consistency:
        return Consistency.model_validate({"tasks": data.get("consistency") or []})

    def linked_trials(self, result: Consistency) -> list[tuple[str, str, int]]:
        return [(t.domain, t.task_id, f.trials[0]) for t in shown(result) for f in t.fork[:FORKS_SHOWN] if f.trials]

    def print(self, results: dict[str, Consistency], out: Any, analysis: Any) -> bool:
        status = analysis.sections.get("consistency", "ok")
        if status != "ok":
            out.print(Text(f"consistency: {status}", style="yellow"))
            return True
        from .text import f, table

        for arm, r in results.items():
            played = [c for c in r.tasks if c.n >= 2]
            items = [c for c in played if c.mixed or c.distinct_chains > 1][:TOP_TASKS]
            if not items:
                if played:
                    out.print(Text(f"consistency: {arm}: every task took one tool-call chain and one outcome "
                                   "on all its trials"))
                continue
            t = table(f"most inconsistent tasks: {arm}", ("task", "left"), ("outcomes", "left"),
                      ("chains", "right"), ("by name", "right"), ("diverge at", "right"), ("similarity", "right"))
            one_domain = len(analysis.arms[arm].domains) == 1
            for c in items:
                label = c.task_id if one_domain else f"{c.domain}/{c.task_id}"
                t.add_row(escape(label), c.pattern, str(c.distinct_chains), str(c.distinct_name_chains),
                          "-" if c.diverge_step is None else str(c.diverge_step), f(c.similarity, 2))
            t.print(out)
        return True
