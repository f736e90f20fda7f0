"""Issue 23.11: an unknown task id or domain gets only genuinely close suggestions (a few at
most, none when nothing stands out) and the count of tasks — never a list of every task."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from agentrig.bench.tau import data
from agentrig.cli import app
from agentrig.errors import DataError, close_matches, suggestions


def test_close_matches_offers_only_names_that_stand_out():
    ids = [str(i) for i in range(50) if i != 2]
    assert close_matches("2", ids) == []  # as close to 12 as to 20, 21 … 29: no guess
    assert close_matches("999", ids) == [] and close_matches("1x", ids) == ["1"]
    assert close_matches("write-markr", ["word-frequency", "write-marker", "stale-lock"]) == ["write-marker"]
    assert close_matches("airlin", ["airline", "retail", "telecom", "mock"]) == ["airline"]
    assert close_matches("telecom_full", ["airline", "retail", "telecom", "mock"]) == ["telecom"]
    assert close_matches("spaceship", ["airline", "retail", "telecom", "mock"]) == []
    assert len(close_matches("task", [f"task-{i}" for i in range(9)])) <= 3
    assert suggestions(["x1", "retial"], ["retail", "airline"]) == "did you mean: 'retial' → 'retail'"
    assert suggestions(["retial"], ["retail"]) == "did you mean 'retail'?" and suggestions(["zzz"], ["retail"]) == ""


def test_an_unknown_tau2_task_id_names_the_count_and_close_ids_only(tau2_root):
    n = len(data.load_tasks(tau2_root, "airline"))
    res = CliRunner().invoke(app, ["tasks", "show", "999", "--domain", "airline", "--data", str(tau2_root)])
    assert res.exit_code == 1 and "Traceback" not in res.output
    err = " ".join(res.stderr.split())
    assert f"unknown task id(s) '999' in domain 'airline' ({n} tasks)" in err
    assert "did you mean" not in err and "closest" not in err and "more)" not in err
    with pytest.raises(DataError) as exc:
        data.select_tasks(tau2_root, "airline", task_ids=["1x", "0"])
    assert "did you mean '1'?" in str(exc.value) and str(exc.value).count("\n") == 2  # three lines


def test_an_unknown_domain_of_the_data_root_gets_did_you_mean(tau2_root):
    res = CliRunner().invoke(app, ["tasks", "list", "--domain", "airlin", "--data", str(tau2_root)])
    assert res.exit_code == 1 and "unknown domain 'airlin': did you mean 'airline'?" in res.stderr
    res = CliRunner().invoke(app, ["tasks", "list", "--domain", "spaceship", "--data", str(tau2_root)])
    assert res.exit_code == 1 and "did you mean" not in res.stderr and "domains here: " in res.stderr


def test_an_unknown_terminal_task_gets_did_you_mean():
    res = CliRunner().invoke(app, ["tasks", "show", "--bench", "terminal", "write-markr"])
    assert res.exit_code == 1 and "Traceback" not in res.output
    err = " ".join(res.stderr.split())
    assert "no task named 'write-markr' among its" in err and "did you mean 'write-marker'?" in err
