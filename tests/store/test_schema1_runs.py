"""A run written before the store's schema 2 (by agentrig as it was before τ²'s judgement moved into
``RewardInfo.details``) still opens: it resumes (nothing to play), analyzes, reports and exports as
it did. The fixture (tests/fixtures/schema1-demo) is the offline demo's bikeshop run — our own
built-in domain, no benchmark data — stored by the commit before the change.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

from agentrig.bench.tau.verdict import details_of
from agentrig.store.store import SCHEMA_VERSION, Store

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "schema1-demo"
AGENTRIG = str(Path(sys.executable).with_name("agentrig"))


def _copy(tmp_path: Path) -> Path:
    run = tmp_path / "demo"
    run.mkdir()
    for name in ("trials.sqlite", "config.json"):
        shutil.copy(FIXTURE / name, run / name)
    shutil.copy(FIXTURE / "demo.toml", tmp_path / "demo.toml")
    return run


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([AGENTRIG, *args], cwd=cwd, capture_output=True, text=True, timeout=300)


def test_the_fixture_is_schema_1_with_tau2_fields_on_top():
    conn = sqlite3.connect(FIXTURE / "trials.sqlite")
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 1 < SCHEMA_VERSION
    conn.close()


def test_schema_1_records_read_into_details(tmp_path):
    run = _copy(tmp_path)
    with Store.open(run / "trials.sqlite", create=False) as store:
        records = list(store.records())
    assert len(records) == 192
    judged = [r for r in records if r.verdict.valid and r.verdict.reward_info is not None]
    assert judged and all(details_of(r.verdict.reward_info).db_match is not None for r in judged)
    gold = [r for r in judged if r.key.arm == "gold"]
    assert all(details_of(r.verdict.reward_info).db_match for r in gold)


def test_a_schema_1_run_resumes_analyzes_reports_and_exports(tmp_path):
    run = _copy(tmp_path)
    res = _cli("run", "demo.toml", "--dir", str(run), cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "192 already stored, 0 to play" in res.stdout + res.stderr
    res = _cli("analyze", str(run), "--json", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["arms"]["gold"]["overall"]["pass_1"]["value"] == 1.0
    assert doc["arms"]["noop"]["overall"]["valid"] == 64
    res = _cli("report", str(run), "--out", str(tmp_path / "r.html"), cwd=tmp_path)
    assert res.returncode == 0 and (tmp_path / "r.html").stat().st_size > 10_000
    res = _cli("export", str(run), "--format", "tau2", "--arm", "gold", "--out", str(tmp_path / "t.json"), cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    sims = json.loads((tmp_path / "t.json").read_text())["simulations"]
    assert len(sims) == 64 and all(s["reward_info"]["db_check"]["db_match"] for s in sims)
    # the writer marked the store with the schema it appends in: an older agentrig now refuses it
    conn = sqlite3.connect(run / "trials.sqlite")
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    conn.close()
