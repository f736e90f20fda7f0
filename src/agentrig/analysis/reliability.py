"""pass^k, pass@k and Mean@n from per-task success counts.

τ²-bench's estimator: for a task with ``n`` valid trials of which ``c`` succeeded (reward 1),
pass^k = C(c, k) / C(n, k) — the chance that k trials drawn without replacement all succeed —
averaged over the tasks that have at least k valid trials. pass@k = 1 − C(n − c, k) / C(n, k).
Mean@n is the average success over all valid trials of a task, averaged over tasks.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from math import comb

SUCCESS_REWARD = 1.0


def is_success(reward: float) -> bool:
    """A trial succeeds when its reward is 1 (τ²-bench: ``reward >= 1 - 1e-6``)."""
    return reward >= SUCCESS_REWARD - 1e-6


def pass_hat_k_task(n: int, c: int, k: int) -> float:
    if not 0 <= c <= n or k < 1 or k > n:
        raise ValueError(f"need 0 <= c <= n and 1 <= k <= n (n={n}, c={c}, k={k})")
    return comb(c, k) / comb(n, k)


def pass_at_k_task(n: int, c: int, k: int) -> float:
    if not 0 <= c <= n or k < 1 or k > n:
        raise ValueError(f"need 0 <= c <= n and 1 <= k <= n (n={n}, c={c}, k={k})")
    return 1.0 - comb(n - c, k) / comb(n, k)


def counts_by_task(outcomes: Iterable[tuple[str, bool]]) -> dict[str, tuple[int, int]]:
    """``(task, success)`` pairs of valid trials → ``{task: (n, c)}``."""
    out: dict[str, list[int]] = {}
    for task, ok in outcomes:
        nc = out.setdefault(task, [0, 0])
        nc[0] += 1
        nc[1] += int(ok)
    return {t: (n, c) for t, (n, c) in out.items()}


def pass_hat_k(counts: Mapping[str, tuple[int, int]], k: int) -> tuple[float | None, int]:
    """Average pass^k over tasks with at least k valid trials; returns (value, tasks used)."""
    vals = [pass_hat_k_task(n, c, k) for n, c in counts.values() if n >= k]
    return (sum(vals) / len(vals) if vals else None), len(vals)


def pass_at_k(counts: Mapping[str, tuple[int, int]], k: int) -> tuple[float | None, int]:
    vals = [pass_at_k_task(n, c, k) for n, c in counts.values() if n >= k]
    return (sum(vals) / len(vals) if vals else None), len(vals)


def mean_at_n(counts: Mapping[str, tuple[int, int]]) -> float | None:
    vals = [c / n for n, c in counts.values() if n > 0]
    return sum(vals) / len(vals) if vals else None


def pass_hat_curve(counts: Mapping[str, tuple[int, int]], k_max: int | None = None) -> list[tuple[int, float | None, int]]:
    """[(k, pass^k, tasks used)] for k = 1 .. k_max (default: the most valid trials of any task)."""
    top = k_max if k_max is not None else max((n for n, _ in counts.values()), default=0)
    return [(k, *pass_hat_k(counts, k)) for k in range(1, top + 1)]


def consistency_gap(counts: Mapping[str, tuple[int, int]],
                    n: int) -> tuple[float | None, float | None, float | None, int]:
    """Over the tasks with at least ``n`` valid trials: (Mean@n − pass^n, Mean@n, pass^n, tasks).

    Both terms are taken over the same tasks, so the gap is never an artefact of invalid trials
    (on the same tasks Mean@n equals pass^1; the gap is how much is lost by asking for all n)."""
    full = {t: nc for t, nc in counts.items() if nc[0] >= n}
    if not full or n < 1:
        return None, None, None, 0
    p_n, used = pass_hat_k(full, n)
    mean = mean_at_n(full)
    assert p_n is not None and mean is not None
    return mean - p_n, mean, p_n, used


def mixed_outcomes(counts: Mapping[str, tuple[int, int]]) -> tuple[int, int]:
    """(tasks with mixed outcomes 0 < c < n, tasks with at least 2 valid trials)."""
    eligible = [(n, c) for n, c in counts.values() if n >= 2]
    return sum(1 for n, c in eligible if 0 < c < n), len(eligible)
