"""Decision instability on calls with many arguments (issue 26), on real τ² airline data.

The gold endpoint in NOISY mode ``one`` corrupts ONE argument of the gold call at known steps
(calls of 1, 2, 3, 4 and 11 arguments — ``book_reservation`` has 11) and keeps the others; four
reruns per task at temperature 0.5, then ``agentrig instability`` samples every decision step five
times. Under the old graded similarity one wrong argument of n scored about 0.25/n and fell under
the threshold for n ≥ 3 (recall 0.5); at the decision level one wrong argument is a different
decision, so the injected steps are found (precision and recall ≥ 0.9 at the default threshold),
and ``analyze``'s divergence step and ``instability``'s fork step agree on every task.
"""

from __future__ import annotations

import contextlib
import io
import json
import os

import pytest
from rich.console import Console

from agentrig.analysis.instability_report import DEFAULT_THRESHOLD
from agentrig.commands.analyze import analyze_command
from agentrig.commands.instability import instability_command
from agentrig.commands.run import run_command
from agentrig.testing._noise import Noise
from agentrig.testing.fake_endpoint import ThreadedFakeEndpoint
from agentrig.bench.tau.scripted.gold_endpoint import GoldEndpoint

KEY_ENV = "AGENTRIG_INSTAB_ARGS_KEY"
KEY = "sk-instab-args-0123456789abcdef"
# (task, gold step) → the arguments of the gold call there
INJECTED = {("4", 1): 1, ("40", 1): 2, ("9", 0): 3, ("33", 2): 3, ("7", 2): 4, ("11", 0): 4, ("15", 0): 4,
            ("14", 1): 11, ("20", 0): 11, ("23", 1): 11}
UNTOUCHED = ("1", "3", "12", "17")
TASKS = sorted({t for t, _s in INJECTED} | set(UNTOUCHED), key=int)
EXP = """
name = "many-args"
[benchmark]
data = "{data}"
domains = ["airline"]
task_ids = {tasks}
[run]
trials = 4
seed = 26
concurrency = 16
[user]
kind = "llm"
[judge]
nl_assertions = "never"
[channel]
base_url = "{base_url}"
api_key_env = "{key_env}"
[roles.agent]
model = "gold"
temperature = 0.5
[roles.user]
model = "gold"
[[arms]]
name = "llm"
agent = {{ kind = "llm" }}
"""


@pytest.fixture(scope="module")
def run(tau2_root, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("many-args")
    os.environ[KEY_ENV] = KEY
    noise = Noise(p=0.5, seed=26, steps={f"airline/{t}": (s,) for t, s in INJECTED}, mode="one")
    endpoint = GoldEndpoint(tau2_root, api_key=KEY, noise=noise)
    with ThreadedFakeEndpoint(endpoint=endpoint) as served:
        exp = tmp / "exp.toml"
        exp.write_text(EXP.format(data=tau2_root, tasks=json.dumps(TASKS), base_url=served.base_url,
                                  key_env=KEY_ENV), encoding="utf-8")
        run_dir = tmp / "run"
        assert run_command(exp, run_dir=run_dir, as_json=True, out=Console(file=io.StringIO())) == 0
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            assert instability_command(run_dir, arm=None, tasks=None, samples=5, temperature=0.5, max_steps=15,
                                       concurrency=None, only_estimate=False, as_json=True,
                                       out=Console(file=io.StringIO())) == 0
        report = json.loads(buf.getvalue())["reports"][0]
        buf = io.StringIO()
        assert analyze_command(run_dir, arm=None, as_json=True, out=Console(file=buf, width=160)) == 0
        yield {"report": report, "analysis": json.loads(buf.getvalue())}
    os.environ.pop(KEY_ENV, None)


def test_one_wrong_argument_of_many_is_found_at_the_default_threshold(run):
    report = run["report"]
    assert report["threshold"] == DEFAULT_THRESHOLD
    found = {(t["task_id"], s) for t in report["tasks"] for s in t["unstable_steps"]}
    hits = found & set(INJECTED)
    precision, recall = len(hits) / max(1, len(found)), len(hits) / len(INJECTED)
    assert precision >= 0.9 and recall >= 0.9, (sorted(found), sorted(INJECTED))
    # the 11-argument writes are found like the 1-argument reads
    assert {(t, s) for (t, s), n in INJECTED.items() if n == 11} <= found
    untouched = [t for t in report["tasks"] if t["task_id"] in UNTOUCHED]
    assert len(untouched) == len(UNTOUCHED) and all(t["instability"] == 0.0 for t in untouched)


def test_analyze_and_instability_part_the_reruns_at_the_same_step(run):
    report, analysis = run["report"], run["analysis"]
    diverge = {c["task_id"]: c["diverge_step"] for c in analysis["arms"]["llm"]["consistency"]}
    assert set(diverge) == set(TASKS)
    for t in report["tasks"]:
        assert diverge[t["task_id"]] == t["fork_step"], t["task_id"]
        if t["fork_step"] is not None:
            assert (t["task_id"], t["fork_step"]) in INJECTED
    assert sum(t["fork_step"] is not None for t in report["tasks"]) >= len(INJECTED) // 2


def test_the_validation_names_its_tasks_and_says_when_they_are_too_few(run):
    v = run["report"]["validation"]
    assert v["tasks_all"] == len(TASKS)
    assert v["tasks"] == sum(1 for t in run["report"]["tasks"] if t["instability"] > 0 or t["mixed_rate"] > 0)
    assert f"over {v['tasks']} tasks with any instability or mixed outcome" in v["sentence"]
    assert f"over {v['tasks_all']} tasks)" in v["sentence"]
