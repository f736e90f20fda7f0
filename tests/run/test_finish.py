"""The finish of a run as a user meets it: the same `agentrig run` again, and `agentrig report`.

A 50-trial run of the built-in bikeshop domain (5 tasks × 10 trials) with an LLM agent and an LLM
user simulator, both through the channel to the gold-scripting endpoint (a real HTTP server on
127.0.0.1), played by the real CLI in its own process. Then, again as new processes:

- `agentrig run` on the finished run: it plays and stores nothing, prints the plan and the
  summary, and rewrites the report;
- `agentrig report`: the page still holds every trial of the run, its figures and its usage.

Neither loads the OpenAI SDK or the code that plays trials: they are only needed when a trial is
to be played. That is why the finish is quick; how quick is measured by perf/finish.py,
never asserted here.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from agentrig.testing.fake_endpoint import ThreadedFakeEndpoint
from agentrig.bench.tau.scripted.gold_endpoint import GoldEndpoint

KEY = "sk-finish-test-5f4e3d2c1b0a9988"
KEY_ENV = "AGENTRIG_FINISH_TEST_KEY"
AGENTRIG = Path(sys.executable).with_name("agentrig")
CLI = [str(AGENTRIG)] if AGENTRIG.exists() else [sys.executable, "-m", "agentrig.cli"]
# loaded only to play a trial: the SDK, the channel's client, a benchmark's episode
PLAY_ONLY = ("openai", "agentrig.channel.client", "agentrig.bench.tau.episode")

EXPERIMENT = """\
name = "finish"
[benchmark]
domains = ["bikeshop"]
num_tasks = 5
[run]
trials = 10
seed = 11
concurrency = 8
[user]
kind = "llm"
guidelines = "builtin"
[judge]
nl_assertions = "never"
[channel]
base_url = "{base_url}"
api_key_env = "{key_env}"
model = "gold"
max_attempts = 2
[[arms]]
name = "gold-llm"
agent = {{ kind = "llm" }}
"""


def agentrig(*args: str) -> tuple[subprocess.CompletedProcess, set[str]]:
    """The CLI in a new process; also the modules it imported (Python's -X importtime)."""
    env = {**os.environ, KEY_ENV: KEY, "PYTHONPROFILEIMPORTTIME": "1", "COLUMNS": "160"}
    done = subprocess.run([*CLI, *args], env=env, capture_output=True, text=True, timeout=120)
    modules = {line.rsplit("|", 1)[1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    done.stderr = "\n".join(line for line in done.stderr.splitlines() if not line.startswith("import time:"))
    return done, modules


def counts(run_dir: Path) -> dict[str, int]:
    con = sqlite3.connect(run_dir / "trials.sqlite")
    try:
        return {t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in ("trials", "model_calls")}
    finally:
        con.close()


def blocks(html: str) -> dict[str, object]:
    return {m.group(1): json.loads(m.group(2)) for m in
            re.finditer(r'<script type="application/json" id="([^"]+)">(.*?)</script>', html, re.S)}


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """A finished 50-trial run: (experiment file, run directory, the first run's JSON)."""
    where = tmp_path_factory.mktemp("finish")
    with ThreadedFakeEndpoint(endpoint=GoldEndpoint(None, api_key=KEY)) as served:
        exp = where / "finish.toml"
        exp.write_text(EXPERIMENT.format(base_url=served.base_url, key_env=KEY_ENV), encoding="utf-8")
        first, modules = agentrig("run", str(exp), "--json")
        assert first.returncode == 0, first.stderr
        assert "openai" in modules  # the first run played: the SDK was loaded then
        yield exp, Path(json.loads(first.stdout)["run_dir"]), json.loads(first.stdout)


def test_the_run_is_what_the_finish_is_measured_on(finished):
    _, run_dir, doc = finished
    arm = doc["arms"]["gold-llm"]
    assert doc["status"] == "done" and doc["played"] == 50 and doc["stored"] == 50
    assert (arm["valid"], arm["mean_reward"], arm["pass_1"]) == (50, 1.0, 1.0)
    stored = counts(run_dir)
    assert arm["prompt_tokens"] > 0 and stored["trials"] == 50
    assert stored["model_calls"] >= 100  # the agent's and the user's calls, recorded


def test_a_resume_with_nothing_to_play_stores_nothing_prints_the_summary_and_the_report(finished):
    exp, run_dir, _ = finished
    before = counts(run_dir)
    report = run_dir / "report.html"
    old_inode = report.stat().st_ino
    done, modules = agentrig("run", str(exp))
    assert done.returncode == 0, done.stderr
    assert "50 already stored, 0 to play" in done.stderr
    out = " ".join(done.stdout.split())
    assert "gold-llm" in out and "50/50" in out and "1.000" in out
    assert f"run directory: {run_dir}" in out and f"report: {report}" in out
    assert counts(run_dir) == before  # nothing played, nothing stored
    assert report.stat().st_ino != old_inode  # the report was written again (replaced whole)
    assert not [m for m in PLAY_ONLY if m in modules], sorted(m for m in PLAY_ONLY if m in modules)

    again, _ = agentrig("run", str(exp), "--json")
    doc = json.loads(again.stdout)
    assert (doc["played"], doc["stored"], doc["status"]) == (0, 0, "done") and doc["report"] == str(report)


def test_the_report_of_the_run_holds_every_trial_and_its_figures(finished):
    _, run_dir, doc = finished
    done, modules = agentrig("report", str(run_dir))
    assert done.returncode == 0, done.stderr
    assert f"report: {run_dir / 'report.html'}" in " ".join(done.stdout.split())
    assert not [m for m in PLAY_ONLY if m in modules]
    html = (run_dir / "report.html").read_text(encoding="utf-8")
    data = blocks(html)
    grid = data["grid-data"]
    assert len(grid["tasks"]) == 5 and [a["arm"] for a in grid["arms"]] == ["gold-llm"]
    cells = grid["arms"][0]["cells"]
    assert len(cells) == 50 and all(c[2] == 1 for c in cells)  # every trial, every one passed
    assert sum(c[7] for c in cells) == doc["arms"]["gold-llm"]["prompt_tokens"] + doc["arms"]["gold-llm"]["completion_tokens"]
    trajectories = {k: v for k, v in data.items() if k.startswith("t-")}
    assert len(trajectories) == 50 and sorted(c[11] for c in cells) == list(range(50))
    assert all(t["attempts"][0]["messages"] and t["attempts"][0]["calls"] for t in trajectories.values())
    text = " ".join(re.sub(r"<[^>]+>", " ", re.sub(r"<script.*?</script>|<style.*?</style>", "", html, flags=re.S)).split())
    for expected in ("gold-llm 50/50 0 5/5 1.000 100.0%", "pass^10", "No failed valid trials.",
                     "gold-llm agent gold", "gold-llm user gold", "every trial's trajectory (50,"):
        assert expected in text.replace("&#39;", "'"), expected
