"""The terminal exports loaded by the anchors' own code (issue 31.10), as τ²'s export is re-graded
by tau2-bench: Terminal-Bench 0.2.18, mini-SWE-agent and Harbor from PyPI, in their own venv
(``tests/anchors.py``: Python >= 3.12; skipped when it cannot be made, failed under CI).

A run through the real stack (`agentrig run`: the bash agent in both tool modes through the
solution endpoint, flaky-oracle and noop, 4 trials each on a TB1 task and a Harbor task), exported;
then, in the anchors' python:

- Terminal-Bench's ``BenchmarkResults``, ``RunMetadata``, each trial folder's ``TrialResults`` and
  ``RunLock.from_json`` (its directory checks) accept the export; TB's own accuracy and pass@k
  (computed by its models from the trials) equal ours and the store's; its pytest parser re-grades
  each TB1 trial's ``panes/post-test.txt`` to our ``parser_results``;
- ``tb runs summarize`` and ``tb runs status`` read the export directory; status's passed and failed
  tasks are ours; ``tb runs resume`` gets past the lock and folders and stops only at the agent
  (agentrig's, which Terminal-Bench cannot import), leaving the directory as it was;
- a trial with no valid attempt leaves its folder without results.json: TB's lock check accepts the
  gap-free numbering and ``tb runs status`` counts the task incomplete;
- mini-SWE-agent's inspector loads every trajectory file (its own loading code, in a headless
  Textual app) and Harbor's converter turns each into an ATIF trajectory whose token counts and
  cost are the store's.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
from collections import defaultdict
from pathlib import Path

import pytest

from tests.anchors import anchor_python

from .run_support import agentrig, records, solution_run
from .sandbox_support import needs_root_bwrap

pytestmark = needs_root_bwrap()

KEY_ENV = "AGENTRIG_ANCHOR_EXPORT_KEY"
KEY = "sk-anchors-Pq7Zt3Wn8Kc2Lv5Rx9Bm"
TASKS = ["harbor-dedupe-emails", "write-marker"]
TRIALS = 4
ARMS = ("bash-native", "bash-text", "flaky-oracle", "noop")


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENTRIG_SOLUTION"))}
    env.update({KEY_ENV: KEY, "PYTHONUNBUFFERED": "1", "COLUMNS": "200"})
    return env


def _agentrig(*args, timeout: float = 900) -> subprocess.CompletedProcess:
    return agentrig(*args, timeout=timeout, env=_env())


def _anchor(python: Path, script: str, *args, timeout: float = 300) -> subprocess.CompletedProcess:
    """``script`` run by the anchors' python, in a scratch directory (no agentrig on its path)."""
    env = {k: v for k, v in _env().items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # litellm (imported by all three) asks GitHub for prices otherwise
    return subprocess.run([str(python), "-c", script, *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=Path(python).parent)


@pytest.fixture(scope="module")
def anchors() -> Path:
    return anchor_python()


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    flaky = '\n[[arms]]\nname = "flaky-oracle"\nagent = { kind = "flaky-oracle", drop_p = 0.5 }\n'
    return solution_run(tmp_path_factory.mktemp("anchor-exports"), "anchors", KEY_ENV, _env(), more_arms=flaky,
                        run=f"trials = {TRIALS}\nconcurrency = 4", benchmark=f"task_ids = {json.dumps(TASKS)}")


@pytest.fixture(scope="module")
def tb_export(run_dir) -> Path:
    done = _agentrig("export", run_dir, "--format", "terminal-bench")
    assert done.returncode == 0, done.stderr
    return run_dir / "exports" / "terminal-bench"


def _ours(run_dir: Path, arm: str) -> dict:
    """Accuracy, pass@k (Terminal-Bench's unbiased estimate) and tasks passed in every trial, from the store."""
    per_task = defaultdict(list)
    for r in records(run_dir, arm=arm, valid=True):
        result = next(e.data for e in r.trajectory.events if (e.plugin, e.kind) == ("verifier", "result"))
        per_task[r.key.task_id].append(bool(result["resolved"]))
    n = sum(len(v) for v in per_task.values())
    ks = [k for k in (2, 4) if min(len(v) for v in per_task.values()) >= k]

    def estimate(n, c, k):
        return 1.0 if n - c < k else 1 - math.comb(n - c, k) / math.comb(n, k)
    return {"accuracy": sum(sum(v) for v in per_task.values()) / n,
            "pass_at_k": {str(k): sum(estimate(len(v), sum(v), k) for v in per_task.values()) / len(per_task) for k in ks},
            "passed": sorted(t for t, v in per_task.items() if all(v) and len(v) == TRIALS),
            "failed": sorted(t for t, v in per_task.items() if not all(v) and len(v) == TRIALS),
            "n": n}


TB_LOAD = r"""
import json, sys
from pathlib import Path
from terminal_bench.harness.models import BenchmarkResults, RunMetadata, TrialResults
from terminal_bench.parsers.parser_factory import ParserFactory, ParserName
from terminal_bench.utils.run_lock import RunLock

out = {}
for run in map(Path, sys.argv[1:]):
    results = BenchmarkResults.model_validate_json((run / "results.json").read_text())
    meta = RunMetadata.model_validate_json((run / "run_metadata.json").read_text())
    lock = RunLock.from_json(run / "tb.lock")
    trials, regraded = {}, {}
    for folder in sorted(p for p in run.glob("*/*") if p.is_dir()):
        t = TrialResults.model_validate_json((folder / "results.json").read_text())
        trials[folder.name] = {"task_id": t.task_id, "is_resolved": t.is_resolved, "id": str(t.id)}
        pane = folder / "panes" / "post-test.txt"
        if t.parser_results is not None and pane.is_file():
            parsed = ParserFactory.get_parser(ParserName.PYTEST).parse(pane.read_text())
            regraded[folder.name] = [{k: v.value for k, v in parsed.items()},
                                     {k: v.value for k, v in t.parser_results.items()}]
    out[run.name] = {
        "accuracy": results.accuracy, "pass_at_k": {str(k): v for k, v in results.pass_at_k.items()},
        "n": len(results.results), "ids": [str(r.id) for r in results.results] + [str(results.id)],
        "names": sorted(r.trial_name for r in results.results), "trials": trials, "regraded": regraded,
        "meta": [meta.run_id, meta.n_attempts, meta.accuracy],
        "lock": [lock.local_config.run_id, lock.run_config.n_attempts, lock.agent.name, str(lock.dataset.local_path)]}
print(json.dumps(out))
"""

# Terminal-Bench's command line (its typer app, as the `tb` script calls it), several commands in one
# process (importing Terminal-Bench takes seconds): each command's exit code and output.
TB_CLI = r"""
import contextlib, io, json, sys
from terminal_bench.cli.tb.main import app

out = []
for args in json.loads(sys.argv[1]):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
        try:
            app(args, prog_name="tb")
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    out.append([code, buf.getvalue()])
print(json.dumps(out))
"""


def _load(python: Path, script: str, *args, timeout: float = 600):
    done = _anchor(python, script, *args, timeout=timeout)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])  # the last line (mini-SWE-agent prints a banner first)


@pytest.fixture(scope="module")
def tb_cli(anchors, run_dir, tb_export, tmp_path_factory) -> dict:
    """``tb runs summarize|status`` on every arm, ``tb runs resume`` on one, and ``tb runs status``
    on an export whose noop arm lacks a valid write-marker trial 1 (written with ``write_arm``)."""
    from agentrig.bench.terminal.export_tb import write_arm

    gap = tmp_path_factory.mktemp("tb-gap")
    config = json.loads((run_dir / "config.json").read_text())
    kept = [r for r in records(run_dir, arm="noop", valid=True) if (r.key.task_id, r.key.trial) != ("write-marker", 1)]
    assert write_arm(config, "noop", kept, {}, gap, ["export"]) == len(TASKS) * TRIALS - 1
    before = sorted((str(p), p.stat().st_mtime_ns) for p in (tb_export / "noop").rglob("*"))
    commands = {f"{verb} {arm}": ["runs", verb, "--run-id", arm, "--runs-dir", str(tb_export)]
                for arm in ARMS for verb in ("summarize", "status")}
    commands["resume noop"] = ["runs", "resume", "--run-id", "noop", "--runs-dir", str(tb_export)]
    commands["status gap"] = ["runs", "status", "--run-id", "noop", "--runs-dir", str(gap)]
    answers = _load(anchors, TB_CLI, json.dumps(list(commands.values())))
    after = sorted((str(p), p.stat().st_mtime_ns) for p in (tb_export / "noop").rglob("*"))
    return {"answers": dict(zip(commands, answers)), "gap": gap, "resume_left_it": before == after}


def test_terminal_benchs_models_accept_the_export_and_compute_our_figures(anchors, run_dir, tb_export):
    config = json.loads((run_dir / "config.json").read_text())
    loaded = _load(anchors, TB_LOAD, *(tb_export / arm for arm in ARMS))
    for arm in ARMS:
        theirs, ours = loaded[arm], _ours(run_dir, arm)
        assert theirs["n"] == ours["n"] == len(TASKS) * TRIALS
        assert theirs["accuracy"] == pytest.approx(ours["accuracy"])
        assert set(theirs["pass_at_k"]) == {"2", "4"}
        assert theirs["pass_at_k"] == pytest.approx(ours["pass_at_k"])
        exported = json.loads((tb_export / arm / "results.json").read_text())
        assert exported["accuracy"] == pytest.approx(theirs["accuracy"])
        assert exported["pass_at_k"] == pytest.approx(theirs["pass_at_k"])
        assert len(set(theirs["ids"])) == len(theirs["ids"])  # version 4 (TB checks), and distinct
        assert theirs["ids"] == [r["id"] for r in exported["results"]] + [exported["id"]]
        # one folder per trial, named as TB's harness names them (attempts from 1), holding its results
        assert theirs["names"] == sorted(theirs["trials"]) == sorted(
            f"{t}.{i}-of-{TRIALS}.{arm}" for t in TASKS for i in range(1, TRIALS + 1))
        assert theirs["meta"] == [arm, TRIALS, pytest.approx(ours["accuracy"])]
        kind = next(a for a in config["experiment"]["arms"] if a["name"] == arm)["agent"]["kind"]
        assert theirs["lock"] == [arm, TRIALS, f"agentrig-{kind}", str(Path(config["data_root"]))]
        # TB's pytest parser reads our test output as we did (the TB1 task; Harbor's has a reward file)
        tb1 = [name for name in theirs["trials"] if name.startswith("write-marker.")]
        assert sorted(theirs["regraded"]) == sorted(tb1)
        assert all(mine == parsed for parsed, mine in theirs["regraded"].values())
    # exported again: the same ids (derived from the run, arm and trial), the folder replaced whole
    first = json.loads((tb_export / "noop" / "results.json").read_text())
    again = _agentrig("export", run_dir, "--format", "terminal-bench", "--arm", "noop")
    assert again.returncode == 0, again.stderr
    second = json.loads((tb_export / "noop" / "results.json").read_text())
    assert [r["id"] for r in second["results"]] + [second["id"]] == [r["id"] for r in first["results"]] + [first["id"]]
    assert sorted(p.name for p in tb_export.iterdir()) == sorted(ARMS)  # no staging folder left


def test_the_flaky_arm_has_mixed_outcomes(run_dir):
    """What makes the figures compared worth comparing: pass@k strictly between accuracy and 1."""
    ours = _ours(run_dir, "flaky-oracle")
    assert 0 < ours["accuracy"] < ours["pass_at_k"]["2"] < 1, ours


def test_tb_runs_summarize_and_status_read_the_export(run_dir, tb_cli):
    for arm in ARMS:
        ours = _ours(run_dir, arm)
        code, out = tb_cli["answers"][f"summarize {arm}"]
        assert code == 0, out[-3000:]
        assert f"Accuracy: {ours['accuracy']:.2%}" in out
        for k, v in ours["pass_at_k"].items():
            assert f"Pass@{k}: {v:.2%}" in out
        code, out = tb_cli["answers"][f"status {arm}"]
        assert code == 0, out[-3000:]
        assert f"Passed: {len(ours['passed'])}" in out and f"Failed: {len(ours['failed'])}" in out
        assert "Incomplete: 0" in out
        for task in ours["passed"]:
            assert f"✅ {task}" in out
        for task in ours["failed"]:
            assert f"❌ {task}" in out


def test_tb_runs_resume_stops_only_at_agentrigs_agent(tb_cli):
    """The lock and the folders pass Terminal-Bench's checks; playing needs the agent, agentrig's."""
    code, out = tb_cli["answers"]["resume noop"]
    assert code == 1
    assert "Failed to import agent from agentrig.bench.terminal.reference:NoopTerminalAgent" in out, out[-3000:]
    assert "lock" not in out.lower()
    assert tb_cli["resume_left_it"]  # nothing in the export changed


def test_a_trial_without_a_valid_attempt_is_an_incomplete_trial_for_tb(tb_cli):
    gap = tb_cli["gap"]
    folders = sorted(p.name for p in (gap / "noop" / "write-marker").iterdir())
    assert folders == [f"write-marker.{i}-of-{TRIALS}.noop" for i in range(1, TRIALS + 1)]
    assert not (gap / "noop" / "write-marker" / f"write-marker.2-of-{TRIALS}.noop" / "results.json").exists()
    code, out = tb_cli["answers"]["status gap"]
    assert code == 0, out[-3000:]
    assert "Incomplete: 1" in out and "⏳ write-marker" in out and "❌ harbor-dedupe-emails" in out


MINI_LOAD = r"""
import asyncio, json, sys
from pathlib import Path
from minisweagent.run.utilities.inspector import TrajectoryInspector
from harbor.agents.installed.mini_swe_agent import convert_mini_swe_agent_to_atif

files = sorted(Path(sys.argv[1]).rglob("*.traj.json"))
out = {"files": [str(f) for f in files], "inspector": [], "errors": [], "atif": {}}

async def inspect():
    app = TrajectoryInspector(files)
    errors = []
    app.notify = lambda message, **kw: errors.append(message)  # what the app shows on a bad file
    async with app.run_test() as pilot:
        for i in range(len(files)):
            app.i_trajectory = i
            await pilot.pause()
            app.update_content()
            out["inspector"].append({"file": str(files[i]), "messages": len(app.messages), "steps": app.n_steps,
                                     "title": app.title})
            app._load_current_trajectory()
    out["errors"] = errors

asyncio.run(inspect())
for f in files:
    atif = convert_mini_swe_agent_to_atif(json.loads(f.read_text()), session_id=f.stem)
    m = atif.final_metrics
    out["atif"][str(f)] = {"prompt": m.total_prompt_tokens, "completion": m.total_completion_tokens,
                           "cost": m.total_cost_usd, "agent_steps": sum(1 for s in atif.steps if s.source == "agent"),
                           "model": atif.agent.model_name}
print(json.dumps(out))
"""


def test_mini_swe_agents_inspector_and_harbors_converter_read_the_trajectories(anchors, run_dir, tmp_path):
    out = tmp_path / "mini"
    done = _agentrig("export", run_dir, "--format", "mini-swe-agent", "--out", out)
    assert done.returncode == 0, done.stderr
    doc = _load(anchors, MINI_LOAD, out)
    assert len(doc["files"]) == len(ARMS) * len(TASKS) * TRIALS and not doc["errors"], doc["errors"]
    for seen in doc["inspector"]:
        traj = json.loads(Path(seen["file"]).read_text())
        assert seen["messages"] == len(traj["messages"]) > 0 and seen["steps"] >= 1
        assert Path(seen["file"]).name in seen["title"]
    llm = 0
    for arm in ("bash-native", "bash-text"):
        for rec in records(run_dir, arm=arm, valid=True):
            k = rec.key
            atif = doc["atif"][str(out / arm / k.task_id / f"{k.task_id}.trial-{k.trial}.traj.json")]
            called = [rec.trajectory.model_calls[m.call] for m in rec.trajectory.messages
                      if m.role == "assistant" and m.call is not None]
            assert atif["prompt"] == sum(c.usage.prompt_tokens for c in called) > 0
            assert atif["completion"] == sum(c.usage.completion_tokens for c in called) > 0
            assert atif["agent_steps"] == len(called) and atif["model"] == "solution"
            llm += 1
    assert llm == 2 * len(TASKS) * TRIALS
