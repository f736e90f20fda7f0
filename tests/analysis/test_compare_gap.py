"""`compare`'s consistency-gap row and the guidelines leakage warning, from count tables.

- gap = pass^1 − pass^k per task, Δ with the paired-bootstrap CI; lower is better, so a CI below
  0 is "better" and above 0 "worse" (the opposite of pass^k);
- k = 1 has no gap row (pass^1 − pass^1 is 0 by definition);
- the leakage warning names the side, the overlap count and the evaluated task count, and is
  absent when the source tasks are elsewhere or the arm has no guidelines plug-in.
"""

from __future__ import annotations

from agentrig.analysis import compare as cmp


def _counts(per_task: list[tuple[int, int]]) -> cmp.Counts:
    return {("d", f"t{i}"): nc for i, nc in enumerate(per_task)}


def test_gap_row_lower_is_better():
    mixed = _counts([(5, 3)] * 8 + [(5, 2)] * 4)      # every task mixed: gap 0.6 / 0.4
    steady = _counts([(5, 5)] * 8 + [(5, 0)] * 4)     # all-or-nothing: gap 0
    s = cmp.paired_stats(mixed, steady, k=5, resamples=500)
    gap = s.metrics["gap"]
    assert gap.name == "gap (pass^1 − pass^5)" and gap.tasks == 12
    assert abs(gap.a - (8 * 0.6 + 4 * 0.4) / 12) < 1e-9 and gap.b == 0.0
    assert gap.ci[1] < 0 and gap.significance == "better"
    assert s.metrics["pass^k"].name == "pass^5" and s.metrics["pass^k"].significance == "better"
    back = cmp.paired_stats(steady, mixed, k=5, resamples=500).metrics["gap"]
    assert back.ci[0] > 0 and back.significance == "worse"
    assert "gap" not in cmp.paired_stats(mixed, steady, k=1, resamples=100).metrics


def test_leakage_warning_counts_the_overlap():
    comp = {"arms": {"g": {"plugins": [{"kind": "guidelines", "file_sha": "abc", "source_run": "r0",
                                        "source_arm": "base", "source_tasks": ["d/t0", "d/t1", "x/t9"]}]},
                     "m": {"plugins": [{"kind": "memory"}]}}}
    tasks = [("d", f"t{i}") for i in range(4)]
    [w] = cmp.guideline_leakage("runs/e:g", comp, "g", tasks)
    assert w.startswith("runs/e:g: its guidelines (file abc, from run r0 arm base) were derived from 2 of the 4")
    assert "d/t0, d/t1" in w and "not a held-out evaluation" in w
    assert cmp.guideline_leakage("runs/e:g", comp, "g", [("d", "t7")]) == []
    assert cmp.guideline_leakage("runs/e:m", comp, "m", tasks) == []
    assert cmp.guideline_leakage("runs/e:g", None, "g", tasks) == []
