"""The leniency audit on the shared data."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from agentrig.bench.tau import data
from agentrig.bench.tau.domains import get_domain
from agentrig.cli import app


def audit(tau2_root, domain):
    res = CliRunner().invoke(app, ["audit", "--data", str(tau2_root), "--domain", domain, "--json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def test_airline_lenient_tasks_are_those_whose_gold_changes_nothing(tau2_root):
    out = audit(tau2_root, "airline")
    spec = get_domain("airline")
    tasks = {t.id: t for t in data.load_tasks(tau2_root, "airline")}
    for row in out["tasks"]:
        task = tasks[row["task_id"]]
        writes = [a for a in task.gold_actions if spec.agent_toolkit.is_write(a.name)]
        assert row["gold"]["DB"] == 1.0
        if row["lenient"]:
            assert not writes and row["noop"]["DB"] == 1.0
        else:
            assert writes or row["noop"]["COMMUNICATE"] == 0.0
    assert 0 < out["summary"]["lenient"] < out["summary"]["tasks"]


def test_telecom_has_no_lenient_task_and_runs_on_all_domains(tau2_root):
    assert audit(tau2_root, "telecom")["summary"]["lenient"] == 0
    for domain in ("retail", "mock"):
        s = audit(tau2_root, domain)["summary"]
        assert s["tasks"] > 0 and s["lenient"] <= s["tasks"]
