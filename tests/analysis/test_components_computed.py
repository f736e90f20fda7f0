"""A reward component that was not computed — the NL judge off (``nl_assertions = "never"``), or
nothing to check (no env_assertions, no gold actions, no communicate_info) — shows "—" and enters
no rate, in ``analyze`` (JSON and tables) and the report; its stored value stays τ²-bench's 1.0
(the reward and the tau2 export are unchanged). Real τ² data (airline, mock), the gold agent."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentrig.cli import app
from agentrig.store.store import Store


def _cli(*args: str, env: dict):
    return CliRunner(env={**env, "COLUMNS": "160"}).invoke(app, list(args))


def _run(tmp_path: Path, tau2_root: Path, domain: str, task_ids: list[str] | None) -> Path:
    ids = "" if task_ids is None else f"task_ids = {json.dumps(task_ids)}\n"
    text = f"""
    name = "{domain}-never"
    [benchmark]
    domains = ["{domain}"]
    {ids}
    [run]
    trials = 1
    [user]
    kind = "scripted"
    [judge]
    nl_assertions = "never"
    [[arms]]
    name = "gold"
    agent = {{ kind = "gold" }}
    """
    path = tmp_path / f"{domain}.toml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    env = {"AGENTRIG_TAU2_DATA": str(tau2_root)}
    res = _cli("run", str(path), "--json", env=env)
    assert res.exit_code == 0, res.output
    return Path(json.loads(res.stdout)["run_dir"])


def _expected(tau2_root: Path, domain: str, task_ids: list[str] | None) -> dict[str, int]:
    """Per component, the tasks that give it something to check (NL: none, the judge is off)."""
    tasks = json.loads((tau2_root / "domains" / domain / "tasks.json").read_text())
    out = {"DB": 0, "ENV_ASSERTION": 0, "ACTION": 0, "COMMUNICATE": 0, "NL_ASSERTION": 0}
    for t in tasks:
        if task_ids is not None and t["id"] not in task_ids:
            continue
        ec = t.get("evaluation_criteria") or {}
        # the state is judged unless the task names neither actions nor env_assertions (τ²-bench)
        out["DB"] += bool(ec) and (ec.get("actions") is not None or ec.get("env_assertions") is not None)
        out["ENV_ASSERTION"] += bool(ec.get("env_assertions"))
        out["ACTION"] += bool(ec.get("actions"))
        out["COMMUNICATE"] += bool(ec.get("communicate_info"))
    return out


@pytest.mark.parametrize("domain, task_ids", [("airline", ["0", "1", "3", "4"]), ("mock", None)])
def test_components_not_computed_show_a_dash_and_enter_no_rate(tmp_path, tau2_root, domain, task_ids):
    env = {"AGENTRIG_TAU2_DATA": str(tau2_root)}
    run_dir = _run(tmp_path, tau2_root, domain, task_ids)
    expected = _expected(tau2_root, domain, task_ids)

    res = _cli("analyze", str(run_dir), "--json", env=env)
    assert res.exit_code == 0, res.output
    comps = json.loads(res.stdout)["arms"]["gold"]["overall"]["components"]
    assert {c: v["trials"] for c, v in comps.items()} == expected
    for c, v in comps.items():
        assert (v["rate"] is None) == (expected[c] == 0), (c, v)
    nl = comps["NL_ASSERTION"]
    assert (nl["trials"], nl["passed"], nl["rate"]) == (0, 0, None)  # was "100% (2/2)" on mock
    if domain == "airline":
        assert comps["ENV_ASSERTION"]["rate"] is None  # airline has no env_assertions at all
    else:
        assert 0 < comps["ENV_ASSERTION"]["trials"] < 10  # only the mock tasks that have some

    text = _cli("analyze", str(run_dir), env=env).stdout
    rows = {line.split()[0]: line for line in text.splitlines()
            if line.split() and line.split()[0] in expected and len(line.split()) >= 2}
    assert rows["NL_ASSERTION"].split()[1] == "—"
    assert all(("—" in rows[c]) == (expected[c] == 0) for c in expected), rows

    # the stored value is still τ²-bench's (what the reward and the tau2 export use)
    with Store.open(run_dir / "trials.sqlite", create=False) as store:
        infos = [r.verdict.reward_info for r in store.records()]
    assert any(i.components["NL_ASSERTION"] == 1.0 and "NL_ASSERTION" in i.unchecked for i in infos) \
        or all(i.components["NL_ASSERTION"] is None for i in infos)
    assert all(i.computed("NL_ASSERTION") is None for i in infos)

    # the report's component table
    res = _cli("report", str(run_dir), "-o", str(tmp_path / "r.html"), env=env)
    assert res.exit_code == 0, res.output
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    row = re.search(r'<td class="l">NL_ASSERTION</td><td>([^<]*)</td><td>([^<]*)</td>', html)
    assert row and row.groups() == ("—", "—")
    row = re.search(r'<td class="l">ENV_ASSERTION</td><td>([^<]*)</td><td>([^<]*)</td>', html)
    assert row and (row.group(1) == "—") == (expected["ENV_ASSERTION"] == 0)
    if expected["ENV_ASSERTION"]:
        assert row.group(2).endswith(f"/{expected['ENV_ASSERTION']}")
