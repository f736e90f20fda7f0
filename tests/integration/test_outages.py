"""An endpoint that goes down mid-run: the run rides the outage out (channel/breaker.py).

The gold endpoint runs as its own process on a fixed port; `agentrig run` runs as another. The
endpoint is SIGKILLed after a few trials are stored, kept down for a while, then restarted on the
same port: the run completes by itself, every trial valid, no invalid attempt stored, and the
outage is in the run's record. An outage longer than ``outage_wait_s`` stops the run with
``ENDPOINT_DOWN``, every finished trial kept and still no invalid attempt.
"""

from __future__ import annotations

import json
import socket
import subprocess
import time
from pathlib import Path

import pytest

from agentrig.bench.tau.data import load_tasks
from agentrig.run.outages import stored as stored_outages
from agentrig.store.store import Store
from agentrig.testing.store_watch import valid_count

from tests.integration.test_gold_runs import KEY_ENV, GoldServer, _agentrig, _env, assert_no_key



def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_experiment(path: Path, base_url: str, root: Path, outage_wait_s: float, run_extra: str = "") -> Path:
    path.write_text(f"""
name = "outage"
[benchmark]
data = "{root}"
domains = ["airline"]
split = "all"
[run]
trials = 1
concurrency = 8
max_invalid_retries = 3
{run_extra}
[channel]
base_url = "{base_url}"
api_key_env = "{KEY_ENV}"
model = "gold"
timeout_s = 20
max_attempts = 6
backoff_base_s = 0.05
backoff_max_s = 0.5
outage_wait_s = {outage_wait_s}
[[arms]]
name = "gold-llm"
agent = {{ kind = "llm" }}
""", encoding="utf-8")
    return path


def start_run(toml: Path) -> subprocess.Popen:
    return subprocess.Popen([*_agentrig(), "run", str(toml), "--json"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=_env())


def kill_mid_run(server: GoldServer, proc: subprocess.Popen, db: Path) -> None:
    deadline = time.monotonic() + 120
    while valid_count(db) < 5 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert proc.poll() is None, f"the run ended before the outage: {proc.stderr.read()[-2000:]}"
    server.proc.kill()  # a crash, not a clean stop
    server.proc.wait(timeout=10)


def invalid_rows(db: Path) -> int:
    with Store.open(db, create=False) as store:
        return sum(not r.valid for r in store.verdict_rows())


@pytest.mark.parametrize("outage_s", [
    4,
    pytest.param(30, marks=pytest.mark.slow),
    pytest.param(90, marks=pytest.mark.slow),
])
def test_the_run_rides_out_an_outage_and_completes_by_itself(tau2_root, tmp_path, outage_s):
    port = free_port()
    server = GoldServer(tau2_root, "--port", str(port), "--delay-ms", "20")
    restarted = None
    try:
        toml = write_experiment(tmp_path / "outage.toml", server.base_url, tau2_root, outage_wait_s=600)
        db = tmp_path / "runs" / "outage" / "trials.sqlite"
        proc = start_run(toml)
        kill_mid_run(server, proc, db)
        down_at = time.monotonic()
        while time.monotonic() - down_at < outage_s:
            assert proc.poll() is None, f"the run stopped during the outage: {proc.stderr.read()[-2000:]}"
            time.sleep(0.2)
        restarted = GoldServer(tau2_root, "--port", str(port), "--delay-ms", "20")
        assert restarted.base_url == server.base_url
        out, err = proc.communicate(timeout=300)
    finally:
        server.stop()
        if restarted is not None:
            restarted.stop()
    assert proc.returncode == 0, err[-3000:]
    doc = json.loads(out)
    assert doc["status"] == "done" and doc["error"] is None
    arm = doc["arms"]["gold-llm"]
    tasks = len(load_tasks(tau2_root, "airline"))
    assert (arm["planned"], arm["valid"], arm["invalid"], arm["invalid_attempts"]) == (tasks, tasks, 0, 0)
    assert invalid_rows(db) == 0 and valid_count(db) == tasks
    (outage,) = doc["outages"]
    assert outage["resumed"] is True and outage["calls_held"] >= 1 and outage["probes"] >= 1
    assert outage["duration_s"] >= 0.5 * outage_s  # it lasted about as long as the server was gone (lower bound: not a time bound)
    with Store.open(db, create=False) as store:
        (kept,) = stored_outages(store)  # the run's record keeps it
    assert kept.started_at == outage["started_at"] and kept.calls_held == outage["calls_held"]
    assert_no_key(db.parent)  # the outage's record (endpoint, last fault) holds no key


def test_a_trial_whose_clock_runs_out_during_an_outage_is_replayed_not_failed(tau2_root, tmp_path):
    """trial_timeout_s shorter than the outage: the held trials' clocks run out, and those trials
    are invalid (OUTAGE) and replayed, never valid `timeout` failures; the run completes by itself."""
    port = free_port()
    server = GoldServer(tau2_root, "--port", str(port), "--delay-ms", "20")
    restarted = None
    try:
        toml = write_experiment(tmp_path / "outage.toml", server.base_url, tau2_root, outage_wait_s=600,
                                run_extra="trial_timeout_s = 5")  # above what one trial needs on a busy machine
        db = tmp_path / "runs" / "outage" / "trials.sqlite"
        proc = start_run(toml)
        kill_mid_run(server, proc, db)
        time.sleep(10)  # longer than trial_timeout_s: not a time bound, the outage's length
        assert proc.poll() is None, f"the run stopped during the outage: {proc.stderr.read()[-2000:]}"
        restarted = GoldServer(tau2_root, "--port", str(port), "--delay-ms", "20")
        out, err = proc.communicate(timeout=300)
    finally:
        server.stop()
        if restarted is not None:
            restarted.stop()
    assert proc.returncode == 0, err[-3000:]
    doc = json.loads(out)
    assert doc["status"] == "done"
    tasks = len(load_tasks(tau2_root, "airline"))
    arm = doc["arms"]["gold-llm"]
    assert (arm["planned"], arm["valid"], arm["invalid"]) == (tasks, tasks, 0)
    with Store.open(db, create=False) as store:
        rows = store.verdict_rows()
    spoiled = [r for r in rows if not r.valid]
    assert spoiled, "no trial's clock ran out during the outage: the test proves nothing"
    assert all((r.invalid_cause or "").startswith("OUTAGE:") for r in spoiled)
    assert not any(r.valid and r.termination == "timeout" for r in rows)


def test_an_outage_longer_than_outage_wait_s_stops_the_run_with_its_diagnosis(tau2_root, tmp_path):
    port = free_port()
    server = GoldServer(tau2_root, "--port", str(port), "--delay-ms", "20")
    try:
        toml = write_experiment(tmp_path / "outage.toml", server.base_url, tau2_root, outage_wait_s=3)
        db = tmp_path / "runs" / "outage" / "trials.sqlite"
        proc = start_run(toml)
        kill_mid_run(server, proc, db)
        kept = valid_count(db)
        out, err = proc.communicate(timeout=120)
    finally:
        server.stop()
    assert proc.returncode == 1
    doc = json.loads(out)
    assert doc["status"] == "fatal" and doc["error"]["code"] == "ENDPOINT_DOWN"
    assert "outage_wait_s=3s" in doc["error"]["message"] and "connection refused" in doc["error"]["message"]
    assert "ENDPOINT_DOWN" in err and "rerun the same command" in err and "Traceback" not in err
    assert invalid_rows(db) == 0 and valid_count(db) >= kept  # no invalid attempt; every finished trial kept
    (outage,) = doc["outages"]
    assert outage["resumed"] is False and outage["calls_held"] >= 1


def test_hung_requests_are_cut_and_retried_and_every_trial_is_valid(tau2_root, tmp_path):
    # one request in ten is never answered; timeout_s = 60, but the adaptive limit cuts them
    server = GoldServer(tau2_root, "--fault-rate", "0.1", "--fault-kinds", "hang", "--seed", "3")
    try:
        toml = write_experiment(tmp_path / "hang.toml", server.base_url, tau2_root, outage_wait_s=600)
        toml.write_text(toml.read_text().replace("timeout_s = 20", "timeout_s = 60").replace(
            "max_attempts = 6", "max_attempts = 8"))
        proc = start_run(toml)
        out, err = proc.communicate(timeout=600)
    finally:
        server.stop()
    assert proc.returncode == 0, err[-3000:]
    doc = json.loads(out)
    arm = doc["arms"]["gold-llm"]
    assert doc["status"] == "done" and arm["valid"] == arm["planned"] and arm["invalid_attempts"] == 0
    db = tmp_path / "runs" / "outage" / "trials.sqlite"
    with Store.open(db, create=False) as store:
        calls = store.model_call_rows()
        details = [a.detail for r in store.records(valid=True) for c in r.trajectory.model_calls
                   for a in c.attempts if a.cause == "timeout"]
    cut = sum(c["retry_causes"].split(",").count("timeout") for c in calls)  # the stored retry causes
    assert cut >= 1 and len(details) == cut  # the hung attempts were retried
    assert any("the adaptive limit; timeout_s=60" in d for d in details)
    # a few hung requests are not an outage; on a loaded machine the adaptive limit may cut enough
    # slow answers in a row to open the breaker briefly — then the outage was ridden out, never lost
    assert all(o["resumed"] for o in doc.get("outages", [])), doc.get("outages")
