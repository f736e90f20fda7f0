"""Hidden tests for read-only-tour: lenient by design (doing nothing passes)."""

from pathlib import Path


def test_files_intact():
    assert Path("/app/plan.txt").read_text() == "week 1: survey\nweek 2: report\n"
    assert Path("/app/budget.csv").read_text() == "item,cost\nsurvey,120\n"
    assert "plan.txt" in Path("/app/README.md").read_text()
