"""``agentrig export RUN --format atif`` (bench/terminal/export_atif.py), every file validated by
Harbor 0.26's own pydantic ATIF model (``harbor.models.trajectories.Trajectory``) in the anchors'
venv (``tests/anchors.py``: skipped when it cannot be made, failed under CI).

Two stored runs: one played by the built-in agents (bash in both tool modes, the no-op reference
agent) against the solution endpoint, and one whose trajectories came from installed agents' records
(``agents/installed/records.apply_record``: mini-swe-agent, Codex CLI, Claude Code), stored with
the first run's verdicts in a run directory of its own."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from agentrig.agents.installed.records import apply_record
from agentrig.store.store import Store
from agentrig.trial.context import TrialContext
from agentrig.types import ModelCall, TrialRecord, Usage
from tests.agents.installed_records_support import FINAL, claude_events, codex_events, mini_doc, replies_for, write_record
from tests.anchors import anchor_python

from .run_support import agentrig, records, solution_run
from .sandbox_support import needs_root_bwrap

pytestmark = needs_root_bwrap()

KEY_ENV = "AGENTRIG_ATIF_EXPORT_KEY"
KEY = "sk-atif-Zq4Wn7Lp2Xv9Kt3Rb8Hm"
INSTALLED = {"mini-swe-agent": mini_doc, "codex": codex_events, "claude-code": claude_events}

VALIDATE = r"""
import json, sys
from pathlib import Path
from harbor.models.trajectories import Trajectory

out = {}
for root in map(Path, sys.argv[1:]):
    for path in sorted(root.rglob("*.trajectory.json")):
        t = Trajectory.model_validate_json(path.read_text())
        out[str(path.relative_to(root))] = {
            "agent": t.agent.name, "version": t.agent.version, "model": t.agent.model_name,
            "sources": [s.source for s in t.steps],
            "tools": [c.function_name for s in t.steps for c in (s.tool_calls or [])],
            "results": [r.source_call_id for s in t.steps if s.observation for r in s.observation.results],
            "exit_codes": [(r.extra or {}).get("exit_code") for s in t.steps if s.observation for r in s.observation.results],
            "llm_calls": sum(s.llm_call_count or 0 for s in t.steps),
            "prompt_tokens": t.final_metrics.total_prompt_tokens, "total_steps": t.final_metrics.total_steps,
            "first_user": next((s.message for s in t.steps if s.source == "user"), None),
            "submission": t.extra["agentrig"]["submission"]}
print(json.dumps(out))
"""


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENTRIG_SOLUTION"))}
    env.update({KEY_ENV: KEY, "COLUMNS": "200"})
    return env


def _agentrig(*args, timeout: float = 900) -> subprocess.CompletedProcess:
    return agentrig(*args, timeout=timeout, env=_env())


def _validate(python: Path, *dirs: Path) -> dict:
    env = {k: v for k, v in _env().items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    done = subprocess.run([str(python), "-c", VALIDATE, *map(str, dirs)], capture_output=True, text=True,
                          timeout=300, env=env, cwd=python.parent)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def anchors() -> Path:
    return anchor_python()


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    return solution_run(tmp_path_factory.mktemp("atif"), "atif", KEY_ENV, _env(), run="trials = 1\nconcurrency = 2",
                        benchmark='task_ids = ["write-marker", "harbor-dedupe-emails"]')


@pytest.fixture(scope="module")
def installed_run(run_dir, tmp_path_factory) -> Path:
    """A run directory whose trials' trajectories came from installed agents' records."""
    out = tmp_path_factory.mktemp("atif-installed") / "run"
    out.mkdir()
    source = Store.open(run_dir / "trials.sqlite", create=False)
    config = json.loads(json.dumps(source.get_meta("config")))
    base = [r for r in source.records("bash-native", valid=True)]
    source.close()
    config["experiment"]["arms"] = [{"name": kind, "agent": {"kind": kind, "version": "pinned-1"}} for kind in INSTALLED]
    config["resolved"] = {kind: config["resolved"]["bash-native"] for kind in INSTALLED}
    store = Store.open(out / "trials.sqlite")
    store.set_meta("config", config)
    for kind, build in INSTALLED.items():
        for r in base:
            key = r.key.model_copy(update={"arm": kind})
            replies = replies_for(kind)
            ctx = TrialContext(key=key, task=type("Task", (), {"instruction": "Print hello and list a directory."})(),
                               seed=r.seed)
            now = time.time()
            for i in range(len(replies)):
                ctx.trajectory.model_calls.append(ModelCall(role="agent", purpose="agent", model="solution",
                                                            sent_at=now + i, latency_s=0.1,
                                                            usage=Usage(prompt_tokens=200 + i, completion_tokens=20)))
            record_dir = out.parent / "records" / kind / key.task_id
            write_record(kind, record_dir, build())
            apply_record(ctx, kind, record_dir, replies)
            ctx.trajectory.events.extend(e for e in r.trajectory.events if e.plugin == "verifier")
            store.append(TrialRecord(key=key, run_id=r.run_id, seed=r.seed, started_at=r.started_at,
                                     duration_s=r.duration_s, trajectory=ctx.trajectory, verdict=r.verdict))
    store.close()
    return out


def test_the_built_in_agents_runs_export_as_atif_harbor_reads(anchors, run_dir):
    done = _agentrig("export", run_dir, "--format", "atif")
    assert done.returncode == 0, done.stderr
    exported = _validate(anchors, run_dir / "exports" / "atif")
    stored = {(r.key.arm, r.key.task_id): r for r in records(run_dir, valid=True)}
    assert len(exported) == len(stored) == 6
    for (arm, task), r in stored.items():
        doc = exported[f"{arm}/{task}/{task}.trial-0.trajectory.json"]
        messages = r.trajectory.messages
        calls = [c for m in messages if m.role == "assistant" for c in m.tool_calls]
        assert doc["tools"] == [c.name for c in calls]
        assert doc["llm_calls"] == sum(1 for m in messages if m.role == "assistant" and m.call is not None)
        assert doc["prompt_tokens"] == sum(c.usage.prompt_tokens for c in r.trajectory.model_calls)
        assert doc["total_steps"] == len(doc["sources"])
        if arm.startswith("bash"):
            assert doc["agent"] == "agentrig-bash" and doc["model"] == "solution"
            assert doc["sources"][:2] == ["system", "user"] and "agent" in doc["sources"]
            commands = [e.data for e in r.trajectory.events if (e.plugin, e.kind) == ("sandbox", "command")]
            assert len(doc["results"]) == len(calls)  # every call's result, with its command's exit code
            assert doc["exit_codes"] == [e["exit_code"] for e in commands]
        else:
            assert doc["agent"] == "noop" and doc["llm_calls"] == 0


def test_an_installed_agents_trajectories_export_as_atif_harbor_reads(anchors, installed_run):
    done = _agentrig("export", installed_run, "--format", "atif")
    assert done.returncode == 0, done.stderr
    exported = _validate(anchors, installed_run / "exports" / "atif")
    assert len(exported) == 6
    tools = {"mini-swe-agent": "bash", "codex": "exec_command", "claude-code": "Bash"}
    for path, doc in exported.items():
        kind = path.split("/")[0]
        assert doc["agent"] == kind and doc["version"] == "pinned-1" and doc["model"] == "solution"
        assert doc["first_user"] == "Print hello and list a directory."
        assert set(doc["tools"]) == {tools[kind]}
        assert doc["exit_codes"][:2] == [0, 2]
        assert len(doc["results"]) == len(doc["tools"])
        assert doc["llm_calls"] == len(replies_for(kind))
        assert doc["submission"] == ("" if kind == "mini-swe-agent" else FINAL)


def test_analyze_and_the_report_read_an_installed_agents_run(installed_run, tmp_path):
    done = _agentrig("analyze", installed_run, "--json")
    assert done.returncode == 0, done.stderr
    arms = json.loads(done.stdout)["arms"]
    assert set(arms) == set(INSTALLED)
    assert all(a["overall"]["valid"] == 2 and a["overall"]["terminations"] == {"submitted": 2} for a in arms.values())
    out = tmp_path / "report.html"
    done = _agentrig("report", installed_run, "--out", out)
    assert done.returncode == 0, done.stderr
    html = out.read_text()
    assert '"exec_command":"cmd"' in html and '"Bash":"command"' in html  # the viewer shows their commands as code
    for call_id in ("call_chat_1", "call_resp_1", "toolu_1"):
        assert call_id in html


def test_the_other_terminal_exports_read_an_installed_agents_commands_and_model(installed_run):
    for fmt in ("terminal-bench", "mini-swe-agent"):
        done = _agentrig("export", installed_run, "--format", fmt)
        assert done.returncode == 0, done.stderr
    base = installed_run / "exports"
    for kind in INSTALLED:
        meta = json.loads((base / "terminal-bench" / kind / "run_metadata.json").read_text())
        assert meta["model_name"] == "solution"
        (commands,) = (base / "terminal-bench" / kind).rglob("write-marker.1-of-1.*/commands.txt")
        assert commands.read_text().splitlines()[:2] == ["echo hello-from-agent", "ls /nonexistent-dir-xyz"]
        doc = json.loads((base / "mini-swe-agent" / kind / "write-marker" / "write-marker.trial-0.traj.json").read_text())
        assert doc["info"]["config"]["model"]["model_name"] == "solution"
        actions = [a["command"] for m in doc["messages"] if m["role"] == "assistant" for a in m["extra"]["actions"]]
        assert actions[:2] == ["echo hello-from-agent", "ls /nonexistent-dir-xyz"]
