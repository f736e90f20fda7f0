"""The consistency-guidelines loop on terminal tasks (issue 13 §2–§3), through the real stack:
`agentrig run` → the LLM bash agent → the solution endpoint in noisy mode (its first command is
replaced by a wrong one with probability 0.6 when sampled at temperature > 0) → bwrap sandboxes →
the verifier; `agentrig guidelines derive` with a scripted analyst; `agentrig compare`.

- derive reads the forks of the source run's reruns (terminal commands), the value-leak check
  rejects a guideline that repeats a path of a source task, the file names the source tasks;
- on other tasks (held out), the guidelines arm (select = bm25: retrieval from the shell
  session's context; and select = all with the bash agent in text mode) closes the gap the noise opens, `compare` lists the plug-in as the only
  intended difference and warns when the file's source tasks overlap the evaluated ones.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from agentrig.plugins.guidelines.filemodel import load, write
from agentrig.testing._noise import Noise
from agentrig.testing.fake_endpoint import ThreadedFakeEndpoint
from agentrig.bench.terminal.scripted.solution_endpoint import SolutionEndpoint

from .run_support import AGENTRIG, experiment
from .sandbox_support import needs_root_bwrap

pytestmark = needs_root_bwrap()

KEY_ENV = "AGENTRIG_T13_TERMINAL_KEY"
KEY = "sk-t13term-Jd6Wq1Nc8Vz4"
SOURCE = ["merge-json-config", "script-permissions"]
HELD_OUT = ["write-marker", "harbor-dedupe-emails", "csv-region-totals", "word-frequency"]


def _agentrig(*args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    env = {**os.environ, KEY_ENV: KEY, "COLUMNS": "200"}
    return subprocess.run([AGENTRIG, *map(str, args)], capture_output=True, text=True, env=env, timeout=timeout)


def _channel(gold_url: str, analyst_url: str) -> str:
    return f"""
[channel]
base_url = "{gold_url}"
api_key_env = "{KEY_ENV}"
model = "solution"
max_attempts = 4
backoff_base_s = 0.01
[roles.agent]
temperature = 0.7
[roles.analyst]
base_url = "{analyst_url}"
model = "analyst-model"
"""


def _run(path: Path) -> Path:
    proc = _agentrig("run", path, "--json")
    assert proc.returncode == 0, proc.stderr[-3000:]
    return Path(json.loads(proc.stdout)["run_dir"])


@pytest.fixture(scope="module")
def endpoints():
    noise = Noise(p=0.6, seed=3, steps={"*": (0,)})
    solution = ThreadedFakeEndpoint(SolutionEndpoint(None, noise=noise, api_key=KEY))
    analyst = ThreadedFakeEndpoint(api_key=KEY, models=("analyst-model",))
    solution.start()
    analyst.start()
    yield solution, analyst
    solution.stop()
    analyst.stop()


def test_guidelines_loop_on_terminal_tasks(tmp_path, endpoints):
    solution, analyst = endpoints
    cache = tmp_path / "cache"
    bash = 'agent = { kind = "bash", tool_mode = "native", step_limit = 12 }'
    src = _run(_write(tmp_path, "t-source", SOURCE, f'[[arms]]\nname = "baseline"\n{bash}\n', cache,
                      solution.base_url, analyst.base_url))
    analyst.endpoint.push_reply({"content": "```json\n" + json.dumps({"guidelines": [
        {"text": "Start by running the whole prepared fix in one step, then check its result: <<do:bash>>",
         "rationale": "the failed reruns began with an idle command", "category": "strategy",
         "trigger": "the first command of a task", "sources": [{"task": f"terminal/{SOURCE[0]}", "trial": 1,
                                                                "step": 0, "kind": "fork"}]},
        {"text": "Always write the merged result to /app/config/effective.json.", "rationale": "r",
         "category": "constraint", "trigger": "merging"},
    ]}) + "\n```"})
    out = tmp_path / "guidelines.json"
    proc = _agentrig("guidelines", "derive", src, "--out", out, "--top", "2")
    assert proc.returncode == 0, proc.stderr
    gf = load(out)
    assert [g.text[:24] for g in gf.guidelines] == ["Start by running the who"]
    assert gf.rejected and gf.rejected[0].values == ["/app/config/effective.json"]
    assert gf.provenance.benchmark == "terminal" and gf.provenance.inputs.forks >= 1
    assert gf.provenance.inputs.unstable_steps == 0 and "forks of reruns only" in gf.provenance.inputs.notes[0]
    assert set(gf.provenance.source_tasks) <= {f"terminal/{t}" for t in SOURCE}
    leaky = tmp_path / "leaky.json"
    write(gf.model_copy(update={"provenance": gf.provenance.model_copy(update={
        "source_tasks": [f"terminal/{t}" for t in HELD_OUT[:2]]})}), leaky)

    arms = f"""
[[arms]]
name = "baseline"
{bash}
[[arms]]
name = "guided"
{bash}
plugins = [{{ kind = "guidelines", file = "{out}", select = "bm25", top_k = 2 }}]
[[arms]]
name = "leaky"
{bash}
plugins = [{{ kind = "guidelines", file = "{leaky}", select = "all" }}]
[[arms]]
name = "guided-text"
agent = {{ kind = "bash", tool_mode = "text", step_limit = 12 }}
plugins = [{{ kind = "guidelines", file = "{out}", select = "all" }}]
"""
    ev = _write(tmp_path, "t-eval", HELD_OUT, arms, cache, solution.base_url, analyst.base_url)
    ev = _run(ev)
    r = json.loads(_agentrig("compare", f"{ev}:baseline", f"{ev}:guided", "--json").stdout)
    gap = r["metrics"]["gap"]
    assert gap["tasks"] == len(HELD_OUT) and gap["a"] > 0 and gap["b"] == 0.0, gap
    assert gap["delta"] < 0 and r["metrics"]["pass^1"]["b"] == 1.0
    assert r["warnings"] == [] and {d["path"] for d in r["config"]["differences"]} == {"arm.plugins"}
    r = json.loads(_agentrig("compare", f"{ev}:baseline", f"{ev}:leaky", "--json").stdout)
    assert len(r["warnings"]) == 1 and "derived from 2 of the 4 task(s)" in r["warnings"][0]
    assert r["metrics"]["gap"]["b"] == 0.0
    # text mode (actions in fenced blocks, not tool calls): the guidelines reach the model the same way
    r = json.loads(_agentrig("compare", f"{ev}:baseline", f"{ev}:guided-text", "--json").stdout)
    assert r["metrics"]["gap"]["b"] == 0.0 and r["metrics"]["pass^1"]["b"] == 1.0


def _write(tmp: Path, name: str, tasks: list[str], arms: str, cache: Path, url: str, analyst_url: str) -> Path:
    path = experiment(tmp, name, _channel(url, analyst_url) + arms, cache=cache,
                      benchmark=f"task_ids = {json.dumps(tasks)}", run="trials = 4")
    return path
