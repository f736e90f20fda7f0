"""`agentrig demo` (what `make demo` runs): a complete offline run, then the channel path."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from agentrig.demo import demo_experiment
from agentrig.run.store import Store

ROOT = Path(__file__).resolve().parents[1]


def test_examples_demo_is_the_packaged_demo():
    assert (ROOT / "examples" / "demo.toml").read_text(encoding="utf-8") == demo_experiment()


def test_demo_runs_offline_and_stores_both_runs(tmp_path):
    agentrig = Path(sys.executable).with_name("agentrig")
    for _ in range(2):  # a second demo starts over instead of refusing or resuming
        done = subprocess.run([str(agentrig), "demo", "--dir", str(tmp_path)], capture_output=True, text=True,
                              timeout=120, env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
        assert done.returncode == 0, done.stderr + done.stdout
    out = done.stdout
    rows = {m.group(1): m.group(0).split() for m in re.finditer(r"^(gold|flaky-gold|noop|llm) .*$", out, re.M)}
    assert rows["gold"][1:6] == ["64/64", "0", "1.000", "1.000", "1.000"]
    assert rows["noop"][1] == "64/64" and float(rows["noop"][4]) < 0.5
    flaky = rows["flaky-gold"]
    assert float(flaky[5]) < float(flaky[4]) < 1.0  # pass^4 < pass^1 < 1
    llm = rows["llm"]
    assert llm[1:4] == ["32/32", "0", "1.000"] and int(llm[-1]) > 0  # faults retried, none spoiled a trial
    assert "agentrig run examples/airline.toml" in out
    with Store.open(tmp_path / "demo" / "trials.sqlite", create=False) as store:
        assert store.counts()["rows"] == 192
    with Store.open(tmp_path / "demo-llm" / "trials.sqlite", create=False) as store:
        calls = store.model_call_rows()
        assert {c["role"] for c in calls} >= {"agent", "user", "judge"}
        assert sum(c["retries"] for c in calls) > 0
