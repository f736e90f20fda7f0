"""A run directory has one owner (issue 31, item 2): a second `agentrig run` on a directory another
run holds exits 1 naming the holder (pid, host, command) and plays nothing; a run whose holder was
SIGKILLed takes the directory over and resumes it to completion. The real CLI as subprocesses, the
gold endpoint (its own process) playing τ²'s airline tasks from the real data."""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from agentrig.bench.tau.data import load_tasks
from agentrig.testing.store_watch import valid_count

from tests.support import EndpointProcess

KEY_ENV = "AGENTRIG_LOCK_TEST_KEY"
KEY = "sk-locktest-Hq4Wn8Rt2Yp6Kz0Bv3"
AGENTRIG = str(Path(sys.executable).with_name("agentrig"))
TRIALS = 3


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_") and not k.endswith("_PROXY")}
    return {**env, KEY_ENV: KEY, "PYTHONUNBUFFERED": "1", "COLUMNS": "200"}


@pytest.fixture
def gold(tau2_root):
    server = EndpointProcess("agentrig.bench.tau.scripted.gold_endpoint", "--data", str(tau2_root), "--api-key-env", KEY_ENV,
                             "--delay-ms", "40", env=_env())
    try:
        yield server
    finally:
        server.stop()


def _chat_count(server: EndpointProcess) -> int:
    root = server.base_url.rsplit("/v1", 1)[0]
    with urllib.request.urlopen(f"{root}/_fake/stats", timeout=10) as resp:
        return json.loads(resp.read())["chat_count"]


def _experiment(tmp_path: Path, base_url: str, root: Path) -> tuple[Path, Path, int]:
    """(the experiment file, its run directory, the planned trials): 4 airline tasks × TRIALS, an
    LLM agent, the LLM user and the judge, all on the gold endpoint."""
    ids = [t.id for t in load_tasks(root, "airline")[:4]]
    path = tmp_path / "lock.toml"
    path.write_text(f"""
name = "lock"
[benchmark]
data = "{root}"
domains = ["airline"]
task_ids = {json.dumps(ids)}
[run]
trials = {TRIALS}
seed = 31
concurrency = 2
[channel]
base_url = "{base_url}"
api_key_env = "{KEY_ENV}"
model = "gold"
timeout_s = 120
max_attempts = 4
backoff_base_s = 0.01
[[arms]]
name = "gold-llm"
agent = {{ kind = "llm", tool_mode = "native" }}
""", encoding="utf-8")
    return path, tmp_path / "runs" / "lock", len(ids) * TRIALS


def _start(path: Path) -> subprocess.Popen:
    return subprocess.Popen([AGENTRIG, "run", str(path), "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=_env())


def _wait_for_trials(proc: subprocess.Popen, db: Path, n: int) -> int:
    deadline = time.monotonic() + 180  # generous: a loaded machine starts the CLI slowly
    while time.monotonic() < deadline:
        got = valid_count(db)
        if got >= n:
            return got
        assert proc.poll() is None, f"the run ended early ({proc.returncode}): {proc.stderr.read()[-2000:]}"
        time.sleep(0.05)
    raise AssertionError(f"no {n} trial(s) stored in time")


def _attempts_stored(db: Path) -> int:
    """Every request the store accounts for: the attempts of every model call of every stored trial."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        return conn.execute("SELECT coalesce(sum(attempts), 0) FROM model_calls").fetchone()[0]


def test_a_second_run_on_a_held_directory_exits_1_naming_the_holder_and_plays_nothing(tmp_path, gold, tau2_root):
    path, run_dir, planned = _experiment(tmp_path, gold.base_url, tau2_root)
    first = _start(path)
    try:
        _wait_for_trials(first, run_dir / "trials.sqlite", 1)
        first.send_signal(signal.SIGSTOP)  # frozen, the holder keeps its lock: no race with its end
        try:
            second = subprocess.run([AGENTRIG, "run", str(path)], capture_output=True, text=True, timeout=300,
                                    env=_env())
        finally:
            first.send_signal(signal.SIGCONT)
        out, err = first.communicate(timeout=600)
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    assert second.returncode == 1, second.stderr[-3000:]
    text = " ".join(second.stderr.split())
    assert "Traceback" not in second.stderr
    assert f"pid {first.pid}" in text and socket.gethostname() in text, text
    assert "agentrig run" in text and str(path.name) in text  # the holder's command
    assert str(run_dir) in text and "fix:" in text and "--dir" in text
    assert first.returncode == 0, err[-3000:]
    doc = json.loads(out)
    assert doc["arms"]["gold-llm"]["valid"] == planned
    # the second run sent nothing: every request the endpoint answered is one the store accounts for
    assert _chat_count(gold) == _attempts_stored(run_dir / "trials.sqlite")
    assert json.loads((run_dir / "run.lock").read_text() or "{}") == {}  # released by the holder's clean end


def test_a_run_whose_holder_was_sigkilled_takes_over_and_resumes(tmp_path, gold, tau2_root):
    path, run_dir, planned = _experiment(tmp_path, gold.base_url, tau2_root)
    first = _start(path)
    try:
        kept = _wait_for_trials(first, run_dir / "trials.sqlite", 2)
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=60)
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    kept = valid_count(run_dir / "trials.sqlite")
    assert 2 <= kept < planned
    stale = json.loads((run_dir / "run.lock").read_text())  # the killed holder's record stays …
    assert stale["pid"] == first.pid and stale["host"] == socket.gethostname()
    second = subprocess.run([AGENTRIG, "run", str(path), "--json"], capture_output=True, text=True, timeout=600,
                            env=_env())
    assert second.returncode == 0, second.stderr[-3000:]  # … but the kernel released its lock
    assert f"pid {first.pid}" in " ".join(second.stderr.split())  # the takeover is said
    doc = json.loads(second.stdout)
    assert doc["played"] == planned - kept and doc["arms"]["gold-llm"]["valid"] == planned
    with sqlite3.connect(f"file:{run_dir / 'trials.sqlite'}?mode=ro", uri=True) as conn:
        keys = conn.execute("SELECT arm, domain, task_id, trial FROM trials WHERE valid = 1").fetchall()
    assert len(keys) == planned == len(set(keys))  # none lost, none stored twice
