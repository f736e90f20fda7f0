"""The figure protocol (analysis/figure.py): a figure is one module, registered once, and both
`agentrig analyze` (table, --json) and the report (table and bars) show it with nothing else changed.

- the registered durations figure, by hand on a constructed run: median, p90, max of valid trials,
  invalid attempts and their seconds; in analyze's text, its JSON and the report's HTML;
- a figure defined here, in the test, and registered with one line: it shows up in all three.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from agentrig.analysis import figure as fig
from agentrig.commands.analyze import analyze_command
from agentrig.report import write_report
from agentrig.types import Strict

from .test_summary import record, write_run


def _run(path: Path) -> Path:
    recs = [record("A", "d", f"t{i}", 0, ok=i % 2 == 0, duration=float(d)) for i, d in enumerate([1, 2, 3, 4, 10])]
    recs.append(record("A", "d", "t5", 0, ok=False, valid=False))  # 5.0 s, invalid
    recs += [record("B", "d", f"t{i}", 0, ok=True, duration=0.5) for i in range(6)]
    return write_run(path, recs, {"d": [f"t{i}" for i in range(6)]}, arms=("A", "B"), n=1)


def _analyze(run: Path, as_json: bool = False) -> str:
    buf = io.StringIO()
    assert analyze_command(run, arm=None, as_json=as_json, out=Console(file=buf, width=160, color_system=None)) == 0
    return buf.getvalue()


def test_the_durations_figure_by_hand(tmp_path):
    run = _run(tmp_path / "run")
    doc = json.loads(_analyze(run, as_json=True))
    a = doc["arms"]["A"]["figures"]["durations"]
    assert (a["valid_trials"], a["median_s"], a["max_s"], a["invalid_attempts"], a["invalid_s"]) == (5, 3.0, 10.0, 1, 5.0)
    assert a["p90_s"] == pytest.approx(7.6)
    assert doc["arms"]["B"]["figures"]["durations"]["median_s"] == 0.5
    text = _analyze(run)
    assert "trial durations" in text and "1 (5.00 s)" in text and "10.00" in text
    html = write_report([run], tmp_path / "r.html").read_text()
    assert 'id="figure-durations"' in html and "3.00 s" in html and "invalid attempts (s)" in html


class Tasks(Strict):
    tasks: int


class TaskCount(fig.Figure):
    """A figure written in the test: how many distinct tasks each arm played."""

    id = "task_count"
    result = Tasks

    def compute(self, arm):
        return Tasks(tasks=len({(r.domain, r.task_id) for r in arm.rows}))

    def view(self, results):
        return fig.FigureView(id=self.id, title="tasks played", columns=["arm", "tasks"],
                              rows=[[a, str(r.tasks)] for a, r in results.items()],
                              bars=[fig.Bar(name=a, value=r.tasks) for a, r in results.items()])


def test_a_new_figure_is_one_module_registered_once(tmp_path, monkeypatch):
    monkeypatch.setattr(fig, "FIGURES", [*fig.FIGURES, f"{__name__}:TaskCount"])  # the one registry line
    monkeypatch.setattr(fig, "_LOADED", None)
    run = _run(tmp_path / "run")
    doc = json.loads(_analyze(run, as_json=True))
    assert doc["arms"]["A"]["figures"]["task_count"] == {"tasks": 6}
    assert "tasks played" in _analyze(run)
    html = write_report([run], tmp_path / "r.html").read_text()
    assert 'id="figure-task_count"' in html and "Tasks played" in html
    monkeypatch.setattr(fig, "_LOADED", None)  # leave the registry as it was for other tests


class Failed(Strict):
    failed: int


class LastWords(fig.Figure):
    """A figure written in the test that prints itself last in analyze and sits in the report's
    consistency section (drawn from its view: no drawer of its own)."""

    id = "last_words"
    result = Failed
    analyze_slot = "end"
    report_slot = "consistency"

    def compute(self, arm):
        return Failed(failed=sum(1 for r in arm.rows if r.valid and r.reward < 1))

    def view(self, results):
        return fig.FigureView(id=self.id, title="failed valid trials", columns=["arm", "failed"],
                              rows=[[a, str(r.failed)] for a, r in results.items()])

    def print(self, results, out, analysis):
        out.print("last words: " + ", ".join(f"{a} failed {r.failed}" for a, r in results.items()))
        return True


def test_a_figure_names_its_place_and_may_print_itself(tmp_path, monkeypatch):
    monkeypatch.setattr(fig, "FIGURES", [*fig.FIGURES, f"{__name__}:LastWords"])
    monkeypatch.setattr(fig, "_LOADED", None)
    run = _run(tmp_path / "run")
    text = _analyze(run)
    assert text.rstrip().splitlines()[-1] == "last words: A failed 2, B failed 0"  # its own text, last
    assert "failed valid trials" not in text  # printed by itself, not as its view's table
    html = write_report([run], tmp_path / "r.html").read_text()
    at = html.index('id="figure-last_words"')
    assert html.index('id="gap"') < at < html.index('id="grid"')  # in the consistency section
    assert "Failed valid trials" in html[at:]
    monkeypatch.setattr(fig, "_LOADED", None)
