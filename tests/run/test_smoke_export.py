"""A smoke check's trials are a run directory of their own (``RUN/smoke``): `agentrig export`
(jsonl, tau2), `analyze` and `report` read it; the run's own directory, with only a smoke check
in it, and a smoke store without a configuration snapshot are refused with one message naming
what to do (exit 1, no traceback). Real CLI, real store."""

from __future__ import annotations

import json
import sqlite3
import textwrap
from pathlib import Path

from typer.testing import CliRunner

from agentrig.cli import app

EXPERIMENT = """
name = "smoky"
[benchmark]
domains = ["bikeshop"]
task_ids = ["rent_city_bike", "refuse_cancel_active_rental", "extend_city_rental"]
[run]
trials = 3
[user]
kind = "scripted"
[judge]
nl_assertions = "never"
[[arms]]
name = "gold"
agent = { kind = "gold" }
[[arms]]
name = "noop"
agent = { kind = "noop" }
"""


def _cli(*args: str):
    return CliRunner(env={"COLUMNS": "200"}).invoke(app, [str(a) for a in args])


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_a_smoke_run_exports_like_a_run(tmp_path):
    path = tmp_path / "exp.toml"
    path.write_text(textwrap.dedent(EXPERIMENT), encoding="utf-8")
    res = _cli("run", path, "--smoke", "--json")
    assert res.exit_code == 0, res.output
    smoke_dir = Path(json.loads(res.stdout)["store"]).parent
    assert smoke_dir == tmp_path / "runs" / "smoky" / "smoke"
    config = json.loads((smoke_dir / "config.json").read_text())
    assert config["smoke"] is True and config["experiment"]["run"]["trials"] == 1
    (domain, ids), = config["tasks"].items()
    assert domain == "bikeshop" and len(ids) == 1

    res = _cli("export", smoke_dir, "--format", "jsonl")
    assert res.exit_code == 0, res.output
    lines = (smoke_dir / "exports" / "trials.jsonl").read_text().splitlines()
    assert sorted(json.loads(x)["key"]["arm"] for x in lines) == ["gold", "noop"]
    assert {json.loads(x)["key"]["task_id"] for x in lines} == set(ids)

    out = tmp_path / "gold.json"
    res = _cli("export", smoke_dir, "--format", "tau2", "--arm", "gold", "--out", out)
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text())
    assert len(doc["simulations"]) == 1 and [t["id"] for t in doc["tasks"]] == ids
    assert doc["info"]["num_trials"] == 1 and doc["simulations"][0]["reward_info"]["reward"] == 1.0

    res = _cli("analyze", smoke_dir, "--json")
    assert res.exit_code == 0, res.output
    arms = json.loads(res.stdout)["arms"]
    assert arms["gold"]["overall"]["valid"] == 1 and arms["gold"]["overall"]["trials_planned"] == 1
    res = _cli("report", smoke_dir)
    assert res.exit_code == 0, res.output
    assert (smoke_dir / "report.html").is_file()

    # the run's own directory holds only the smoke check: one message, naming where its trials are
    res = _cli("export", tmp_path / "runs" / "smoky", "--format", "jsonl")
    assert res.exit_code == 1 and "Traceback" not in res.output
    assert "only a smoke check" in _flat(res.output) and str(smoke_dir) in _flat(res.output)


def test_a_smoke_store_without_its_snapshot_is_refused_plainly(tmp_path):
    path = tmp_path / "exp.toml"
    path.write_text(textwrap.dedent(EXPERIMENT), encoding="utf-8")
    res = _cli("run", path, "--smoke", "--json")
    assert res.exit_code == 0, res.output
    smoke_dir = Path(json.loads(res.stdout)["store"]).parent
    # what an older agentrig wrote: the trials and the run meta, no configuration snapshot
    (smoke_dir / "config.json").unlink()
    conn = sqlite3.connect(smoke_dir / "trials.sqlite")
    conn.execute("DELETE FROM meta WHERE name = 'config'")
    conn.commit()
    conn.close()
    res = _cli("export", smoke_dir, "--format", "jsonl")
    assert res.exit_code == 1 and "Traceback" not in res.output
    said = _flat(res.output)
    assert "smoke check" in said and "--smoke" in said and "again" in said
