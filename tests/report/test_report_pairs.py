"""Which arms the report compares (issue 31.9): within each run, its arms against the run's first
arm — the demo's terminal report compares `bash-text` with `bash-native`, never every arm of the
LLM run with the reference run's `oracle`; the same arm in two runs is compared by name; a lone
arm of a later run is still guessed against the first run's first arm (kept when controlled)."""

from __future__ import annotations

from pathlib import Path

from agentrig.report import write_report
from agentrig.report.findings import pairs

from .runs import make_run

TWO_ARMS = """
[[arms]]
name = "bash-native"
agent = { kind = "gold" }

[[arms]]
name = "bash-text"
agent = { kind = "flaky-gold", drop_p = 0.3 }
"""


def _sides(*runs: tuple[str, tuple[str, ...]]) -> list[tuple[str, Path, str]]:
    return [(run, Path(run), arm) for run, arms in runs for arm in arms]


def test_the_demos_terminal_runs_compare_within_each_run():
    sides = _sides(("demo-terminal", ("oracle", "flaky-oracle", "noop")), ("demo-terminal-llm", ("bash-native", "bash-text")))
    assert pairs(sides) == [(0, 1), (0, 2), (3, 4)]


def test_same_names_across_runs_and_a_lone_arm():
    assert pairs(_sides(("a", ("gold", "noop")), ("b", ("gold", "noop")))) == [(0, 1), (0, 2), (1, 3)]
    assert pairs(_sides(("a", ("base",)), ("b", ("candidate",)))) == [(0, 1)]  # two one-arm runs: an A/B guess
    assert pairs(_sides(("a", ("gold", "noop")), ("b", ("noop", "new")))) == [(0, 1), (1, 2), (2, 3)]


def test_report_of_two_runs_shows_the_second_runs_own_comparison(demo_run, tmp_path):
    second = make_run(tmp_path / "llm", arms=TWO_ARMS, name="llm-run")
    html = write_report([demo_run, second], tmp_path / "r.html").read_text()
    first = demo_run.name
    ab = html.split('id="ab"')[1].split("</section>")[0]
    assert f"<h3>llm-run:bash-text vs llm-run:bash-native</h3>" in ab
    assert f"vs {first}:gold</h3>" in ab  # the first run's own comparisons stay
    assert "llm-run:bash-native vs" not in ab and f"llm-run:bash-text vs {first}" not in ab
