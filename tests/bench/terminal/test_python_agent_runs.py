"""A user's own Python agent (``kind = "python"``) on terminal tasks through the real stack:
experiment TOML → `agentrig run` (a subprocess) → the agent's own process on the host (the real
``openai`` SDK) → the measuring proxy → the channel → the solution endpoint (its own process, with
faults) — and its commands, over the socket, in the task's bwrap sandbox → the verifier → the store.

- examples/python_agents/terminal_agent.py beside the bash agent on built-in tasks at 20 % channel
  faults: every trial valid once and solved, the retries counted over both arms as stored, each
  command a ``sandbox``/``command`` event and a ``bash`` call with its result in the conversation,
  the same commands as the bash agent's, the key nowhere;
- an agent that raises: ``agent_error``, its traceback in an ``agent``/``error`` event; an agent
  running more commands than ``max_steps``: ``limits_exceeded``; an agent whose command outlives
  the agent's time: ``agent_timeout`` — each a valid trial, the verifier run, the process ended.
"""

from __future__ import annotations

import json
import os
import textwrap
from collections import Counter
from pathlib import Path

import pytest

from agentrig.store.store import Store

from .run_support import BUILTIN_TASKS, experiment, records, write_task
from .sandbox_support import needs_root_bwrap
from .test_bash_runs import KEY_ENV, SolutionServer, _agentrig, _run, assert_no_key, assert_solved_once

pytestmark = needs_root_bwrap()

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "python_agents"
TASKS = ["write-marker", "fix-python-bug", "merge-json-config", "csv-region-totals"]
ARMS = ("python", "bash")


def channel(base_url: str) -> str:
    return f"""
[channel]
base_url = "{base_url}"
api_key_env = "{KEY_ENV}"
model = "solution"
timeout_s = 60
max_attempts = 12
backoff_base_s = 0.01
backoff_max_s = 0.1
"""


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("python-terminal-cache")


def commands_of(record) -> list[str]:
    return [e.data["command"] for e in record.trajectory.events if (e.plugin, e.kind) == ("sandbox", "command")]


def test_the_example_agent_solves_builtin_tasks_under_faults_as_the_bash_agent_does(tmp_path, cache):
    server = SolutionServer("--fault-rate", "0.2", "--fault-kinds", "rate_limit,server_error,malformed", "--seed", "7")
    arms = f"""
[[arms]]
name = "python"
agent = {{ kind = "python", entry = "terminal_agent:make", path = ["{EXAMPLES}"] }}

[[arms]]
name = "bash"
agent = {{ kind = "bash", tool_mode = "native" }}
"""
    try:
        toml = experiment(tmp_path, "pyterm", channel(server.base_url) + arms, cache=cache,
                          run="trials = 1\nconcurrency = 4", benchmark=f"task_ids = {json.dumps(TASKS)}")
        doc = _run(toml)
    finally:
        server.stop()
    run_dir = Path(doc["run_dir"])
    assert doc["status"] == "done"
    valid = assert_solved_once(run_dir, {(a, t, 0) for a in ARMS for t in TASKS})
    assert not records(run_dir, valid=False)  # the channel's retries absorbed every fault
    with Store.open(run_dir / "trials.sqlite", create=False) as store:
        calls = store.model_call_rows()
    stored = sum(c["retries"] for c in calls)
    causes = Counter(c for row in calls for c in (row["retry_causes"] or "").split(",") if c)
    assert stored > 0 and causes, causes
    assert sum(doc["arms"][a]["retries"] for a in ARMS) == stored
    by_task = {(r.key.arm, r.key.task_id): r for r in valid}
    for task in TASKS:
        py, bash = by_task[("python", task)], by_task[("bash", task)]
        # the same solution commands, run the same way; the bash agent's last one is its submit command
        assert commands_of(py) == commands_of(bash)[:-1] and commands_of(py), task
        messages = py.trajectory.messages
        instruction = next(t for t in BUILTIN_TASKS if t.id == task).instruction
        assert (messages[0].role, messages[0].content) == ("user", instruction)
        calls_ = [(m, c) for m in messages for c in m.tool_calls]
        assert [c.arguments["command"] for _, c in calls_] == commands_of(py)
        assert all(c.name == "bash" and m.call is not None for m, c in calls_)
        results = {m.tool_call_id: m.content for m in messages if m.role == "tool"}
        assert all(results[c.id].startswith("exit code: 0\n") for _, c in calls_), task
        assert py.trajectory.counters["commands"] == len(calls_)
        assert any((e.plugin, e.kind) == ("agent", "submit") for e in py.trajectory.events)
        assert messages[-1].role == "assistant" and messages[-1].content  # its final note
    assert_no_key(run_dir)


# --------------------------------------------------------------------------------- how it ends

AGENTS = '''
import os, time

ROOT = os.path.dirname(os.path.abspath(__file__))


class Raises:
    def respond(self, turn):
        turn.run("echo before-the-error > /app/seen.txt")
        raise ValueError("the agent broke on purpose")


class Loops:
    def respond(self, turn):
        while True:
            turn.run("echo again")


class Sleeps:
    def respond(self, turn):
        with open(os.path.join(ROOT, "pid-" + str(os.getpid())), "w"):
            pass
        turn.run("sleep 600")
        return "never here"


def raises(settings, client, model):
    return Raises()


def loops(settings, client, model):
    return Loops()


def sleeps(settings, client, model):
    return Sleeps()
'''


def _pid_gone(pid: int) -> bool:
    return not os.path.exists(f"/proc/{pid}") or "zombie" in Path(f"/proc/{pid}/status").read_text().lower()


def test_an_agent_that_raises_or_runs_past_the_command_limit_ends_as_the_bash_agent_would(tmp_path, cache):
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "ends.py").write_text(AGENTS)
    server = SolutionServer()
    arms = "".join(f'\n[[arms]]\nname = "{n}"\nagent = {{ kind = "python", entry = "ends:{n}", path = ["{tmp_path / "agents"}"] }}\n'
                   for n in ("raises", "loops"))
    try:
        toml = experiment(tmp_path, "ends", channel(server.base_url) + arms, cache=cache,
                          run="trials = 1\nmax_steps = 3", benchmark='task_ids = ["write-marker"]')
        doc = _run(toml)
    finally:
        server.stop()
    recs = {r.key.arm: r for r in records(Path(doc["run_dir"]), valid=True)}
    assert set(recs) == {"raises", "loops"} and not records(Path(doc["run_dir"]), valid=False)
    raised = recs["raises"]
    assert (raised.verdict.termination, raised.verdict.reward) == ("agent_error", 0.0)
    (error,) = [e.data for e in raised.trajectory.events if (e.plugin, e.kind) == ("agent", "error")]
    assert "the agent broke on purpose" in error["error"]
    assert "ValueError" in error["traceback"] and "ends.py" in error["traceback"] and "respond" in error["traceback"]
    assert commands_of(raised) == ["echo before-the-error > /app/seen.txt"]
    looped = recs["loops"]
    assert looped.verdict.termination == "limits_exceeded"
    assert commands_of(looped) == ["echo again"] * 3  # max_steps commands ran, the next one ended the phase
    for r in recs.values():
        assert any((e.plugin, e.kind) == ("verifier", "result") for e in r.trajectory.events)
        (start,) = [e.data for e in r.trajectory.events if (e.plugin, e.kind) == ("agent", "start")]
        assert _pid_gone(start["pid"])


def test_a_command_past_the_agents_time_ends_the_trial_agent_timeout(tmp_path, cache):
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "ends.py").write_text(AGENTS)
    tasks = tmp_path / "tasks"
    write_task(tasks, "short-clock", agent_timeout=6)
    server = SolutionServer()
    arms = f'\n[[arms]]\nname = "sleeps"\nagent = {{ kind = "python", entry = "ends:sleeps", path = ["{tmp_path / "agents"}"] }}\n'
    try:
        toml = experiment(tmp_path, "clock", channel(server.base_url) + arms, cache=cache, tasks=tasks, run="trials = 1")
        doc = _run(toml)
    finally:
        server.stop()
    assert not records(Path(doc["run_dir"]), valid=False)
    (rec,) = records(Path(doc["run_dir"]), valid=True)
    assert (rec.verdict.termination, rec.verdict.reward) == ("agent_timeout", 0.0)
    # the command was asked for; its event is there when its timeout (cut to the time left) came
    # before the phase's own end cancelled it, as for the bash agent
    assert [c.arguments["command"] for m in rec.trajectory.messages for c in m.tool_calls] == ["sleep 600"]
    assert commands_of(rec) in ([], ["sleep 600"])
    assert any((e.plugin, e.kind) == ("verifier", "result") for e in rec.trajectory.events)
    (pid_file,) = (tmp_path / "agents").glob("pid-*")
    assert _pid_gone(int(pid_file.name.split("-")[1]))


# --------------------------------------------------------------------------------- plug-ins


async def test_the_memory_plugin_reaches_each_model_call_of_a_python_agent(tmp_path):
    """The proxy asks the arm's plug-in before each of the agent's calls (``before_call``): one
    ``memory.trigger`` per call, numbered as the bash agent's steps, its reminder in that call's
    request as it reached the endpoint; the memory model reads the commands recorded so far."""
    from agentrig.agents.base import AgentSettings
    from agentrig.bench.terminal.episode import play_trial
    from agentrig.bench.terminal.sandbox import SandboxSettings
    from agentrig.bench.terminal.scripted.solution_endpoint import SolutionEndpoint
    from agentrig.bench.terminal.tasks.taskfile import builtin_tasks_dir, load_task
    from agentrig.benchmark import Limits
    from agentrig.plugins.base import PluginSettings
    from agentrig.plugins.memory.prompts import REMINDER_HEAD
    from agentrig.trial.context import TrialContext
    from agentrig.types import TrialKey

    from tests.support import KEY, make_channel

    task = load_task(builtin_tasks_dir() / "stale-lock")
    agent = AgentSettings(kind="python", entry="terminal_agent:make", path=[str(EXAMPLES)])
    async with SolutionEndpoint(api_key=KEY, record=True) as ep:
        channel = make_channel(ep.base_url, ("agent", "memory"), model="solution", timeout_s=60)
        try:
            ctx = TrialContext(key=TrialKey(arm="memory", domain="terminal", task_id=task.id, trial=0), task=task,
                               seed=5, channel=channel, run_id="run-test")
            rec = await play_trial(ctx, task, agent=agent, sandbox=SandboxSettings(kind="bwrap", cache_dir=tmp_path / "c"),
                                   limits=Limits(max_steps=50), plugins=[PluginSettings(kind="memory", mode="always_inject")])
        finally:
            await channel.aclose()
    assert rec.verdict.valid and (rec.verdict.termination, rec.verdict.reward) == ("submitted", 1.0)
    commands = commands_of(rec)
    calls = len(commands) + 1  # a call per command, then the one whose reply says done
    triggers = [e.data for e in rec.trajectory.events if e.kind == "memory.trigger"]
    assert [t["step"] for t in triggers] == list(range(calls)) and all(t["injected"] for t in triggers)
    agent_calls = [c for c, mc in enumerate(rec.trajectory.model_calls) if mc.role == "agent"]
    hinted = [e.data for e in rec.trajectory.events if (e.plugin, e.kind) == ("proxy", "hints")]
    assert [h["call"] for h in hinted] == agent_calls and all(h["sources"] == ["memory"] for h in hinted)
    sent = [r.json for r in ep.requests if r.method == "POST" and r.headers.get("x-agentrig-role") == "agent"]
    assert len(sent) == calls and all(REMINDER_HEAD in json.dumps(b) for b in sent)
    # what the memory model read before the last call: the agent's commands, recorded as they ran
    edits = [r.json for r in ep.requests if r.method == "POST" and r.headers.get("x-agentrig-role") == "memory"
             and r.json.get("tools")]
    assert len(edits) == calls
    last = edits[-1]["messages"][-1]["content"]
    assert task.instruction.strip()[:80] in last
    raws = [c.arguments_raw for m in rec.trajectory.messages for c in m.tool_calls]
    assert len(raws) == len(commands) and all(f"agent calls bash({raw[:100]}" in last for raw in raws), last


# --------------------------------------------------------------------------------- settings

@pytest.mark.parametrize("agent, said", [
    ('{ kind = "python" }', 'agent kind "python" needs `entry`'),
    ('{ kind = "python", entry = "no_such_agent_module:make" }', "agent.entry 'no_such_agent_module:make'"),
    ('{ kind = "bash", entry = "terminal_agent:make" }', 'agent.entry is for kind "python"'),
], ids=["no-entry", "cannot-import", "entry-on-bash"])
def test_bad_python_agent_settings_stop_the_run_before_any_trial(tmp_path, cache, agent, said):
    toml = experiment(tmp_path, "bad", channel("http://127.0.0.1:9/v1") + f'\n[[arms]]\nname = "a"\nagent = {agent}\n',
                      cache=cache, run="trials = 1", benchmark='task_ids = ["write-marker"]')
    done = _agentrig("run", toml)
    assert done.returncode == 1, done.stderr[-2000:]
    assert said in done.stderr and "fix:" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "runs" / "bad" / "trials.sqlite").exists()
