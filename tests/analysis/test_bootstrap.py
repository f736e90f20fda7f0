"""Bootstrap intervals: exact per-task values, stratified resampling, seeds, speed."""

from __future__ import annotations

from math import comb

import numpy as np

from agentrig.analysis.bootstrap import (intervals, pass_at_matrix, pass_hat_matrix, resample_weights,
                                         scope_seed)
from agentrig.analysis.reliability import pass_hat_k


def test_matrices_equal_the_exact_estimators_with_uneven_counts():
    rng = np.random.default_rng(0)
    n = rng.integers(1, 12, size=60)
    c = np.array([rng.integers(0, x + 1) for x in n])
    ph, pa = pass_hat_matrix(n, c, 11), pass_at_matrix(n, c, 11)
    for t in range(60):
        for k in range(1, 12):
            if k > n[t]:
                assert np.isnan(ph[t, k - 1]) and np.isnan(pa[t, k - 1])
            else:
                assert abs(ph[t, k - 1] - comb(int(c[t]), k) / comb(int(n[t]), k)) < 1e-12
                assert abs(pa[t, k - 1] - (1 - comb(int(n[t] - c[t]), k) / comb(int(n[t]), k))) < 1e-12


def test_stratified_weights_keep_group_sizes():
    w = resample_weights(np.random.default_rng(1), [3, 5, 2], 1200)  # crosses a block boundary
    assert w.shape == (1200, 10)
    assert (w[:, :3].sum(axis=1) == 3).all() and (w[:, 3:8].sum(axis=1) == 5).all()
    assert (w[:, 8:].sum(axis=1) == 2).all()
    assert w[:, 0].std() > 0  # really resampled


def test_intervals_contain_the_estimate_and_are_seeded():
    rng = np.random.default_rng(3)
    n = np.full(40, 8)
    c = rng.binomial(8, 0.7, size=40)
    counts = {i: (int(a), int(b)) for i, (a, b) in enumerate(zip(n, c))}
    one = intervals(n, c, 8, seed=scope_seed(5, "arm", "d"))
    two = intervals(n, c, 8, seed=scope_seed(5, "arm", "d"))
    other = intervals(n, c, 8, seed=scope_seed(6, "arm", "d"))
    assert np.array_equal(one.curve, two.curve) and one.gap_pp == two.gap_pp
    assert not np.array_equal(one.curve, other.curve)
    for k in range(1, 9):
        value = pass_hat_k(counts, k)[0]
        low, high = one.curve[k - 1]
        assert low <= value <= high and low < high
    gap = 100 * (np.mean(c / n) - pass_hat_k(counts, 8)[0])
    assert one.gap_pp[0] <= gap <= one.gap_pp[1]


def test_ineligible_tasks_are_left_out_per_replicate():
    # task 0 has 1 valid trial (not eligible for k = 2), tasks 1, 2 always pass with 2 trials
    iv = intervals(np.array([1, 2, 2]), np.array([0, 2, 2]), 2, resamples=3000, seed=1)
    assert tuple(iv.curve[1]) == (1.0, 1.0)  # pass^2 is 1 whenever it is defined
    assert iv.curve[0][0] == 0.0 and iv.curve[0][1] == 1.0  # pass^1 varies with task 0's draws
    empty = intervals(np.array([]), np.array([]), 3)
    assert empty.curve.shape == (3, 2) and np.isnan(empty.curve).all() and empty.gap_pp is None


def test_clustered_and_macro():
    # group 0: 3 tasks that pass, group 1: 1 that fails; stratified → the task-weighted mean is
    # always 3/4 and the macro mean always 1/2; an unclustered draw would vary
    n, c = np.array([2, 2, 2, 2]), np.array([2, 2, 2, 0])
    iv = intervals(n, c, 2, group_sizes=[3, 1], seed=2)
    assert tuple(iv.curve[0]) == (0.75, 0.75) and tuple(iv.macro_curve[0]) == (0.5, 0.5)
    plain = intervals(n, c, 2, seed=2)
    assert plain.curve[0][0] < 0.75 < plain.curve[0][1]


def test_500_tasks_2000_resamples():
    rng = np.random.default_rng(4)
    n = np.full(500, 50)
    c = rng.binomial(50, rng.uniform(0, 1, 500))
    iv = intervals(n, c, 50, group_sizes=[125] * 4, resamples=2000, seed=1)
    assert iv.curve.shape == (50, 2) and not np.isnan(iv.curve).any()
    assert (iv.curve[:, 0] <= iv.curve[:, 1]).all()
    assert iv.curve[0, 0] <= c.sum() / n.sum() <= iv.curve[0, 1]  # pass^1 lies in its own interval
