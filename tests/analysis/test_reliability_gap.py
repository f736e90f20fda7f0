"""The consistency gap and mixed outcomes on hand-made counts (uneven and with too few trials)."""

from math import isclose

from agentrig.analysis.reliability import consistency_gap, mixed_outcomes


def test_gap_on_the_tasks_with_all_n_trials():
    counts = {"a": (4, 3), "b": (4, 4), "c": (2, 1)}  # c has 2 valid trials: not in pass^4 / Mean@4
    gap, mean, p4, used = consistency_gap(counts, 4)
    assert used == 2 and isclose(mean, (0.75 + 1) / 2) and isclose(p4, (0 + 1) / 2)
    assert isclose(gap, 0.875 - 0.5)
    assert consistency_gap({"c": (2, 1)}, 4) == (None, None, None, 0)
    assert consistency_gap(counts, 1)[0] == 0.0  # pass^1 is Mean@1


def test_mixed_outcomes_need_two_trials():
    counts = {"a": (4, 3), "b": (4, 4), "c": (2, 1), "d": (1, 0), "e": (3, 0)}
    assert mixed_outcomes(counts) == (2, 4)  # a and c mixed; d has one trial and is not counted
    assert mixed_outcomes({}) == (0, 0)
