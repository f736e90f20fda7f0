from math import isclose

import pytest

from agentrig.analysis.reliability import (counts_by_task, is_success, mean_at_n, pass_at_k, pass_hat_curve,
                                           pass_hat_k, pass_hat_k_task)


def test_pass_hat_k_by_hand():
    # task a: 4 trials, 3 successes; task b: 4 trials, 1 success; task c: 2 trials (uneven), 2 successes
    counts = {"a": (4, 3), "b": (4, 1), "c": (2, 2)}
    assert pass_hat_k_task(4, 3, 2) == 3 / 6
    v1, n1 = pass_hat_k(counts, 1)
    assert n1 == 3 and isclose(v1, (3 / 4 + 1 / 4 + 1) / 3)
    v2, n2 = pass_hat_k(counts, 2)
    assert n2 == 3 and isclose(v2, (3 / 6 + 0 + 1) / 3)
    v4, n4 = pass_hat_k(counts, 4)  # c has too few trials for k = 4: left out and counted
    assert n4 == 2 and isclose(v4, (0 + 0) / 2)
    assert [k for k, _, _ in pass_hat_curve(counts)] == [1, 2, 3, 4]
    assert isclose(pass_at_k(counts, 2)[0], ((1 - 0 / 6) + (1 - 3 / 6) + 1) / 3)
    assert isclose(mean_at_n(counts), (0.75 + 0.25 + 1.0) / 3)


def test_counts_and_success_rule():
    assert counts_by_task([("a", True), ("a", False), ("b", True)]) == {"a": (2, 1), "b": (1, 1)}
    assert is_success(1.0) and is_success(0.9999999) and not is_success(0.5)
    with pytest.raises(ValueError):
        pass_hat_k_task(2, 3, 1)
