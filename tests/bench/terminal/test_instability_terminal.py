"""Decision instability on terminal tasks (issue 13 §1, §4): bash-agent arms (native and text
mode) play small tasks through the solution endpoint in NOISY mode (a wrong command at chosen
steps when sampled at temperature > 0; it counts as played, so the task's command of that step is
skipped and the verifier fails), four reruns at temperature 0.7; then ``agentrig instability``
resamples every decision step. The injected steps are found (precision and recall ≥ 0.9), every
other step is stable, the reruns fork at the injected steps, and each rebuilt request is the one
the endpoint received.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import textwrap
from pathlib import Path

import pytest
from rich.console import Console

from agentrig.analysis.instability import steps_of
from agentrig.commands.run import run_command
from agentrig.commands.instability import instability_command
from agentrig.run.resample import _requests
from agentrig.store.store import Store
from agentrig.testing._noise import Noise
from agentrig.testing.fake_endpoint import ThreadedFakeEndpoint
from agentrig.bench.terminal.scripted.solution_endpoint import SolutionEndpoint

from tests.bench.terminal.run_support import write_task

KEY_ENV = "AGENTRIG_INSTAB_TERM_KEY"
KEY = "sk-instab-term-0123456789abcdef"
STEPS = "\n".join(f"- command: {c}\n  block: true\n  append_enter: true" for c in (
    "mkdir -p /app/d", "echo ok > /app/d/out.txt", "cat /app/d/out.txt"))
TEST = "from pathlib import Path\n\ndef test_out():\n    assert Path('/app/d/out.txt').read_text().strip() == 'ok'\n"
INJECTED = {("t-one", 1), ("t-two", 0)}  # t-three: never noisy


@pytest.fixture(scope="module", params=["all", "one"])
def resampled(request, tmp_path_factory):
    """``all``: a wrong step plays another command; ``one``: the right command with one word wrong
    (issue 26: one wrong argument is a different decision)."""
    tmp = tmp_path_factory.mktemp("instab-term")
    tasks = tmp / "tasks"
    for name in ("t-one", "t-two", "t-three"):
        write_task(tasks, name, solution=None, solution_yaml=STEPS, test=TEST)
    os.environ[KEY_ENV] = KEY
    noise = Noise(p=0.5, seed=5, steps={f"terminal/{t}": (s,) for t, s in INJECTED}, mode=request.param)
    endpoint = SolutionEndpoint(tasks, api_key=KEY, noise=noise, record=True)
    exp = tmp / "e.toml"
    with ThreadedFakeEndpoint(endpoint=endpoint) as served:
        exp.write_text(textwrap.dedent(f"""
            name = "term-noisy"
            [benchmark]
            kind = "terminal"
            tasks = "{tasks}"
            [sandbox]
            cache_dir = "{tmp / 'cache'}"
            [run]
            seed = 41
            trials = 4
            concurrency = 4
            [channel]
            base_url = "{served.base_url}"
            api_key_env = "{KEY_ENV}"
            [roles.agent]
            model = "solution"
            temperature = 0.7
            [[arms]]
            name = "bash"
            agent = {{ kind = "bash" }}
            [[arms]]
            name = "bash-text"
            agent = {{ kind = "bash", tool_mode = "text" }}
        """), encoding="utf-8")
        run_dir = tmp / "run"
        assert run_command(exp, run_dir=run_dir, as_json=True, out=Console(file=io.StringIO())) == 0
        played = [r for r in endpoint.requests if r.headers.get("x-agentrig-role") == "agent"]
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            assert instability_command(run_dir, arm=None, tasks=None, samples=5, temperature=0.7, max_steps=15,
                                       concurrency=None, only_estimate=False, as_json=True,
                                       out=Console(file=io.StringIO())) == 0
        yield {"run_dir": run_dir, "played": played, "out": json.loads(buf.getvalue())}
    os.environ.pop(KEY_ENV, None)


def test_terminal_injected_steps_are_found_and_the_reruns_fork_there(resampled):
    reports = {r["arm"]: r for r in resampled["out"]["reports"]}
    assert set(reports) == {"bash", "bash-text"}
    for arm, report in reports.items():
        found = {(t["task_id"], s) for t in report["tasks"] for s in t["unstable_steps"]}
        hits = found & INJECTED
        assert len(hits) / max(1, len(found)) >= 0.9 and len(hits) / len(INJECTED) >= 0.9, (arm, found)
        three = next(t for t in report["tasks"] if t["task_id"] == "t-three")
        assert three["instability"] == 0.0 and three["fork_step"] is None and three["c"] == three["n"]
        for t in report["tasks"]:
            if t["fork_step"] is not None:
                assert (t["task_id"], t["fork_step"]) in INJECTED
        assert any(0 < t["c"] < t["n"] for t in report["tasks"]), arm  # the noise changed outcomes


def test_terminal_analyze_parts_the_reruns_where_instability_does(resampled):
    from agentrig.commands.analyze import analyze_command

    buf = io.StringIO()
    assert analyze_command(resampled["run_dir"], arm=None, as_json=True, out=Console(file=buf, width=160)) == 0
    data = json.loads(buf.getvalue())
    forks = 0
    for report in data["instability"]:
        diverge = {t["task_id"]: t["diverge_step"] for t in data["arms"][report["arm"]]["consistency"]}
        for t in report["tasks"]:
            assert diverge[t["task_id"]] == t["fork_step"], (report["arm"], t["task_id"])
            forks += t["fork_step"] is not None
    assert forks


def test_terminal_rebuilt_requests_are_the_requests_received(resampled):
    by_trial: dict[tuple, list] = {}
    for r in resampled["played"]:
        key = (r.headers["x-agentrig-arm"], r.headers["x-agentrig-task"], int(r.headers["x-agentrig-trial"]))
        by_trial.setdefault(key, []).append(r.json)
    with Store.open(resampled["run_dir"] / "trials.sqlite", create=False) as store:
        records = list(store.records(valid=True))
    checked = 0
    for record in records:
        steps = steps_of(record)
        rebuilt = _requests(record.trajectory, {m.call for _s, _t, m in steps})
        bodies = by_trial[(record.key.arm, record.key.task_id, record.key.trial)]
        assert len(bodies) == len(steps)
        for (_step, _turn, m), body in zip(steps, bodies):
            messages, tools, _params = rebuilt[m.call]
            assert messages == body["messages"] and tools == body.get("tools")
            checked += 1
    assert checked >= 24 * 3
