"""`agentrig tasks list|show` and `agentrig data pull tau2` through typer's CliRunner."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from agentrig.bench.tau.commands import data_app, tasks_app
from agentrig.bench.tau.data import ENV_VAR

runner = CliRunner()


def _run(app, args, env=None):
    return runner.invoke(app, args, env=env, catch_exceptions=False)


def test_list_json(tau2_root):
    res = _run(tasks_app, ["list", "--data", str(tau2_root), "--domain", "telecom", "--split", "test", "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["domain"] == "telecom" and doc["split"] == "test" and doc["count"] == 40
    first = doc["tasks"][0]
    assert set(first) == {"id", "summary", "gold_actions", "reward_basis"}
    assert all(t["reward_basis"] in (["ENV_ASSERTION"], ["ENV_ASSERTION", "ACTION"]) for t in doc["tasks"])
    retail = json.loads(_run(tasks_app, ["list", "--data", str(tau2_root), "-d", "retail", "--json"]).stdout)
    by = {t["id"]: t for t in retail["tasks"]}
    assert retail["count"] == 74 and by["0"]["reward_basis"] == ["DB", "NL_ASSERTION"]
    assert sum(t["gold_actions"] for t in retail["tasks"]) == 365


def test_list_table_uses_env_var(tau2_root):
    res = _run(tasks_app, ["list", "--domain", "mock"], env={ENV_VAR: str(tau2_root)})
    assert res.exit_code == 0, res.output
    assert "mock · 10 task(s)" in res.stdout
    assert "impossible_task_1" in res.stdout and "DB, ACTION" in res.stdout


def test_show_rich(tau2_root):
    res = _run(tasks_app, ["show", "--data", str(tau2_root), "--domain", "airline", "0"])
    assert res.exit_code == 0, res.output
    out = res.stdout
    for piece in ("airline · task 0", "User scenario", "reason for call", "EHGLP3", "reward basis: DB, COMMUNICATE"):
        assert piece in out, piece
    tel_id = "[mobile_data_issue]data_mode_off|data_usage_exceeded[PERSONA:None]"
    res = _run(tasks_app, ["show", "--data", str(tau2_root), "--domain", "telecom", tel_id])
    assert res.exit_code == 0, res.output
    flat = " ".join(res.stdout.split())
    assert "[mobile_data_issue]" in flat  # brackets in ids are text, not rich markup
    assert "Gold actions (2)" in flat and "toggle_data()" in flat
    assert "Env assertions (3)" in flat and "user.assert_mobile_data_status(expected_status=true)" in flat
    assert "assistant.set_data_usage(" in flat  # initialization actions


def test_show_json_is_the_task(tau2_root):
    res = _run(tasks_app, ["show", "--data", str(tau2_root), "--domain", "mock", "update_task_with_user_tools", "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["id"] == "update_task_with_user_tools"
    assert doc["evaluation_criteria"]["reward_basis"] == ["DB", "ACTION", "ENV_ASSERTION"]
    assert doc["initial_state"]["initialization_actions"][0]["func_name"] == "add_notification"
    raw = {t["id"]: t for t in json.loads((tau2_root / "domains/mock/tasks.json").read_text())}
    assert doc["user_scenario"] == raw["update_task_with_user_tools"]["user_scenario"]


@pytest.mark.parametrize(
    "args, needle",
    [
        (["show", "--domain", "airline", "2"], "unknown task id(s) '2'"),
        (["list", "--domain", "airlin"], "unknown domain 'airlin'"),
        (["list", "--domain", "telecom", "--split", "tset"], "unknown split 'tset'"),
    ],
)
def test_user_errors_exit_1_without_traceback(tau2_root, args, needle):
    res = runner.invoke(tasks_app, args[:1] + ["--data", str(tau2_root)] + args[1:])
    assert res.exit_code == 1
    assert needle in res.output and "error:" in res.output
    assert "Traceback" not in res.output
    assert res.exception is None or isinstance(res.exception, SystemExit)


def test_no_data_root(monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    res = runner.invoke(tasks_app, ["list", "--domain", "airline"])
    assert res.exit_code == 1 and "no tau2-bench data root given" in res.output and "--data" in res.output


def test_data_pull_command(tau2_root, tmp_path):
    from tests.bench.tau.test_pull import Upstream, _fake_tree

    tree = _fake_tree(tau2_root, tmp_path)
    with Upstream(tree) as up:
        res = runner.invoke(data_app, ["pull", "tau2", "--dest", str(tmp_path / "d"), "--base-url", up.base])
        assert res.exit_code == 0, res.output
        assert "checked against known sha256" in res.output and "--data" in res.output
        # the pulled root works with the tasks commands
        lst = _run(tasks_app, ["list", "--data", str(tmp_path / "d"), "-d", "airline", "--json"])
        assert json.loads(lst.stdout)["count"] == 30
        # a bad base URL: clear message, exit 1
        bad = runner.invoke(data_app, ["pull", "tau2", "--dest", str(tmp_path / "e"), "--base-url", up.base + "/nope"])
    assert bad.exit_code == 1
    assert "not found upstream (HTTP 404" in bad.output and "Traceback" not in bad.output
