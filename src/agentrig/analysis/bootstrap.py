"""Percentile-bootstrap confidence intervals for pass^k, pass^n and the consistency gap.

The unit of resampling is the task: a replicate draws as many tasks as there are, with
replacement, and recomputes every figure on them. With several domains (``group_sizes``) the draw
is stratified — each domain's tasks are drawn from that domain only, so every replicate keeps the
domain sizes (the overall figure's clustering by domain); the macro figure (mean over domains) is
computed from the same replicates.

Vectorized: a replicate is a row of per-task multiplicities ``W`` (B × T), and every figure is a
ratio of matrix products ``(W @ values) / (W @ eligible)`` — all k at once, no Python loop over
replicates. Tasks not eligible for a figure (fewer valid trials than k) carry NaN and are left
out of that figure in each replicate, as in the point estimate.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np

DEFAULT_RESAMPLES = 2000
DEFAULT_SEED = 2718
CONFIDENCE = 0.95
_BLOCK = 500  # replicates per block (bounds the B × T index matrix)


def scope_seed(seed: int, *names: str) -> np.random.SeedSequence:
    """A seed for one (arm, scope): stable across processes and independent of which arms or
    domains are analysed alongside."""
    return np.random.SeedSequence([seed, *(zlib.crc32(n.encode("utf-8")) for n in names)])


def pass_hat_matrix(n: np.ndarray, c: np.ndarray, k_max: int) -> np.ndarray:
    """T × k_max: C(c, k) / C(n, k) for k = 1..k_max, NaN where n < k."""
    return _ratio_products(np.asarray(c, float), np.asarray(n, float), k_max)


def pass_at_matrix(n: np.ndarray, c: np.ndarray, k_max: int) -> np.ndarray:
    """T × k_max: 1 − C(n − c, k) / C(n, k), NaN where n < k."""
    n = np.asarray(n, float)
    return 1.0 - _ratio_products(n - np.asarray(c, float), n, k_max)


def _ratio_products(top: np.ndarray, n: np.ndarray, k_max: int) -> np.ndarray:
    # C(a, k) / C(n, k) = prod_{j<k} (a − j) / (n − j); a factor a − j < 0 means C(a, k) = 0
    j = np.arange(k_max, dtype=float)
    num = np.clip(top[:, None] - j, 0.0, None)
    den = n[:, None] - j
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)
    return np.cumprod(ratios, axis=1)  # NaN propagates: n < k stays NaN


def resample_weights(rng: np.random.Generator, group_sizes: list[int], resamples: int) -> np.ndarray:
    """B × T multiplicities of a stratified bootstrap (tasks ordered group by group)."""
    total = sum(group_sizes)
    out = np.empty((resamples, total), dtype=np.float64)
    for start in range(0, resamples, _BLOCK):
        b = min(_BLOCK, resamples - start)
        parts, offset = [], 0
        for size in group_sizes:
            if size:
                parts.append(rng.integers(0, size, size=(b, size)) + offset)
            offset += size
        idx = np.hstack(parts) if parts else np.empty((b, 0), dtype=np.int64)
        flat = (idx + (np.arange(b) * total)[:, None]).ravel()
        out[start:start + b] = np.bincount(flat, minlength=b * total).reshape(b, total)
    return out


def _ratio(w: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Per replicate: the mean over eligible resampled tasks (NaN when none is eligible)."""
    eligible = ~np.isnan(values)
    both = w @ np.hstack([np.where(eligible, values, 0.0), eligible.astype(float)])
    k = values.shape[1]
    with np.errstate(divide="ignore", invalid="ignore"):
        return both[:, :k] / both[:, k:]


@dataclass
class Intervals:
    """(low, high) per figure; curve_* arrays have one row per k = 1..k_max (NaN = undefined)."""

    curve: np.ndarray  # k_max × 2 (pass^k)
    gap_pp: tuple[float, float] | None
    macro_curve: np.ndarray | None = None
    macro_gap_pp: tuple[float, float] | None = None


def _bounds(stats: np.ndarray, confidence: float) -> np.ndarray:
    """Percentile bounds over replicates (axis 0 of a B × m array) → m × 2; NaN where no
    replicate is defined."""
    tail = 100 * (1 - confidence) / 2
    out = np.full((stats.shape[1], 2), np.nan)
    nan = np.isnan(stats)
    clean = ~nan.any(axis=0)
    if clean.any():
        out[clean] = np.percentile(stats[:, clean], [tail, 100 - tail], axis=0).T
    for col in np.flatnonzero(~clean):
        s = stats[~nan[:, col], col]
        if s.size:
            out[col] = np.percentile(s, [tail, 100 - tail])
    return out


def intervals(n: np.ndarray, c: np.ndarray, k_max: int, *, group_sizes: list[int] | None = None,
              resamples: int = DEFAULT_RESAMPLES, seed: np.random.SeedSequence | int = DEFAULT_SEED,
              confidence: float = CONFIDENCE) -> Intervals:
    """Bootstrap CIs for pass^k (k = 1..k_max) and the gap Mean@k_max − pass^k_max (in pp).

    ``n`` / ``c``: valid trials / successes per task (every task has n ≥ 1), ordered by group when
    ``group_sizes`` is given (then the draw is stratified and macro intervals are added)."""
    n = np.asarray(n, dtype=float)
    c = np.asarray(c, dtype=float)
    sizes = list(group_sizes) if group_sizes else [len(n)]
    if sum(sizes) != len(n):
        raise ValueError(f"group sizes {sizes} do not add up to {len(n)} tasks")
    if len(n) == 0 or k_max < 1:
        empty = np.full((max(k_max, 0), 2), np.nan)
        return Intervals(empty, None, empty.copy() if group_sizes else None, None)
    rng = np.random.default_rng(seed)
    w = resample_weights(rng, sizes, resamples)
    curve_vals = pass_hat_matrix(n, c, k_max)
    full = curve_vals[:, k_max - 1]
    gap_vals = np.where(np.isnan(full), np.nan, c / n - full) * 100.0
    values = np.column_stack([curve_vals, gap_vals])
    stats = _ratio(w, values)
    b = _bounds(stats, confidence)
    out = Intervals(curve=b[:k_max], gap_pp=_pair(b[k_max]))
    if group_sizes:
        per_group, offset = [], 0
        for size in sizes:
            sl = slice(offset, offset + size)
            per_group.append(_ratio(w[:, sl], values[sl]))
            offset += size
        with np.errstate(all="ignore"):
            stacked = np.stack(per_group)  # G × B × (k_max + 1)
            defined = (~np.isnan(stacked)).sum(axis=0)
            macro = np.where(defined > 0, np.nansum(stacked, axis=0) / np.maximum(defined, 1), np.nan)
        mb = _bounds(macro, confidence)
        out.macro_curve = mb[:k_max]
        out.macro_gap_pp = _pair(mb[k_max])
    return out


def _pair(row: np.ndarray) -> tuple[float, float] | None:
    return None if np.isnan(row).any() else (float(row[0]), float(row[1]))
