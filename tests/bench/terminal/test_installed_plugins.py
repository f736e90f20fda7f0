"""The memory plug-in with an agent we did not write on terminal tasks (issue 35, item 4): real
terminal trials (``episode.play_trial``) of a ``kind = "command"`` agent of this test's own — a
Python script run inside the bwrap sandbox, its model calls made over HTTP to the trial's measuring
proxy — against the solution endpoint (an HTTP server playing each task's solution for the agent
and answering the memory role), every role through one real Channel, in two arms: without
plug-ins and with the memory plug-in.

The proxy asks the plug-in before each of the agent's calls (``before_call`` →
``session.transient(n)``): one ``memory.trigger`` per call, numbered as the bash agent's steps;
the memory model reads the conversation so far (the instruction, the agent's commands and the
outputs it sent back) although the agent's own record is read only after it ends. The endpoint
ignores reminders, so both arms play the same commands and earn the same reward; what reaches the
endpoint for the agent differs by each call's reminder only, and the trial's final conversation is
the same in both arms."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest

from agentrig.agents.base import AgentSettings
from agentrig.bench.terminal.episode import play_trial
from agentrig.bench.terminal.sandbox import SandboxSettings
from agentrig.bench.terminal.scripted.solution_endpoint import SolutionEndpoint, SolutionScript
from agentrig.bench.terminal.tasks.taskfile import builtin_tasks_dir, load_task
from agentrig.benchmark import Limits
from agentrig.plugins.base import PluginSettings
from agentrig.plugins.memory.prompts import REMINDER_HEAD
from agentrig.trial.context import TrialContext
from agentrig.types import TrialKey

from tests.support import KEY, make_channel

from .sandbox_support import needs_root_bwrap

pytestmark = needs_root_bwrap()

TASKS = ("stale-lock", "write-marker")  # four solution commands, then one
TOOL = "shell"

# the test's own agent: a shell tool, one command per call, done when a reply has no tool call
AGENT = r'''
import json, os, subprocess, sys, urllib.request

TOOLS = [{"type": "function", "function": {"name": "shell", "description": "Run one shell command in the task's machine.",
          "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}}]


def ask(messages):
    body = json.dumps({"model": os.environ["AGENTRIG_MODEL"], "messages": messages, "tools": TOOLS}).encode()
    request = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions", data=body, headers={
        "Authorization": "Bearer " + os.environ["OPENAI_API_KEY"], "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=300) as answer:
        return json.load(answer)["choices"][0]["message"]


messages = [{"role": "system", "content": "Work in the shell, one command per call; reply without a call when done."},
            {"role": "user", "content": sys.argv[1]}]
for _ in range(20):
    reply = ask(messages)
    calls = reply.get("tool_calls") or []
    messages.append({"role": "assistant", "content": reply.get("content"), **({"tool_calls": calls} if calls else {})})
    if not calls:
        print(reply.get("content") or "")
        sys.exit(0)
    for call in calls:
        command = json.loads(call["function"]["arguments"])["command"]
        done = subprocess.run(["bash", "-c", command], capture_output=True, text=True)
        messages.append({"role": "tool", "tool_call_id": call["id"],
                         "content": f"exit code {done.returncode}\n{done.stdout}{done.stderr}"[-4000:]})
sys.exit(1)
'''


def agent_settings(tmp_path: Path) -> AgentSettings:
    mount = tmp_path / "my_agent"
    mount.mkdir(parents=True, exist_ok=True)
    (mount / "agent.py").write_text(AGENT, encoding="utf-8")
    return AgentSettings(kind="command", run="python3 {tool}/agent.py {instruction}", mount=str(mount))


async def play(channel, tmp_path: Path, arm: str, task_id: str, plugins: list[PluginSettings]):
    task = load_task(builtin_tasks_dir() / task_id)
    ctx = TrialContext(key=TrialKey(arm=arm, domain="terminal", task_id=task.id, trial=0), task=task, seed=5,
                       channel=channel, run_id="run-test")
    sandbox = SandboxSettings(kind="bwrap", cache_dir=tmp_path / "cache")
    return await play_trial(ctx, task, agent=agent_settings(tmp_path), sandbox=sandbox, limits=Limits(max_steps=50),
                            plugins=plugins)


def bodies(ep, arm: str, task_id: str, role: str) -> list[dict]:
    return [r.json for r in ep.requests if r.method == "POST" and r.headers.get("x-agentrig-arm") == arm
            and r.headers.get("x-agentrig-task") == task_id and r.headers.get("x-agentrig-role") == role]


def with_hint(body: dict, text: str | None, placement: str) -> dict:
    """A request with one call's reminder added as agentrig's own agents add it."""
    out = copy.deepcopy(body)
    if not text:
        return out
    if placement == "user_append":
        last = max(i for i, m in enumerate(out["messages"]) if m["role"] == "user")
        out["messages"][last]["content"] += "\n\n" + text
    else:
        out["messages"].append({"role": "system", "content": text})
    return out


_MTIME = re.compile(r"\b(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) [ \d]\d \d\d:\d\d\b")


def steady(x):
    """``x`` with the modification times of ``ls -l`` made one: the two arms play one after the
    other, and a minute may turn between them (it did, on a loaded machine)."""
    if isinstance(x, str):
        return _MTIME.sub("<mtime>", x)
    return json.loads(_MTIME.sub("<mtime>", json.dumps(x)))


def conversation(record) -> list[tuple]:
    return [(m.role, m.content and steady(m.content), [(c.name, c.arguments) for c in m.tool_calls], m.tool_call_id)
            for m in record.trajectory.messages]


@pytest.mark.parametrize("memory", [{"mode": "always_inject"}, {"mode": "selective", "injection": "user_append"}],
                         ids=["always_inject", "selective-user_append"])
async def test_the_memory_plugin_reaches_a_command_agent_on_terminal_tasks(tmp_path, memory):
    placement = "user_append" if memory.get("injection") == "user_append" else "system"
    arms = {"baseline": [], "memory": [PluginSettings(kind="memory", **memory)]}
    reminded = 0
    async with SolutionEndpoint(api_key=KEY, record=True) as ep:
        channel = make_channel(ep.base_url, ("agent", "memory"), model="solution", timeout_s=60)
        try:
            for task_id in TASKS:
                base, mem = [await play(channel, tmp_path, arm, task_id, plugins) for arm, plugins in arms.items()]
                # the endpoint ignores reminders: the same commands, the solution's reward in both arms
                for rec in (base, mem):
                    assert rec.verdict.valid and rec.verdict.termination == "submitted", (task_id, rec.verdict)
                assert base.verdict.reward == mem.verdict.reward == 1.0, task_id
                commands = [e.data["command"] for e in mem.trajectory.events if (e.plugin, e.kind) == ("sandbox", "command")]
                assert commands == list(SolutionScript.from_task(load_task(builtin_tasks_dir() / task_id)).commands)
                assert commands == [e.data["command"] for e in base.trajectory.events if e.kind == "command"]
                # the final conversation is the agent's record's, the same in both arms (the live one is gone)
                assert conversation(base) == conversation(mem) and conversation(mem)[0][0] == "user"

                # one trigger before every agent call, numbered as the bash agent numbers its steps
                calls = len(commands) + 1  # each command, then the agent's final reply
                triggers = [e.data for e in mem.trajectory.events if e.kind == "memory.trigger"]
                assert [t["step"] for t in triggers] == list(range(calls)), task_id
                assert not any(e.plugin == "memory" for e in base.trajectory.events)
                assert not any(c.role == "memory" for c in base.trajectory.model_calls)

                # upstream: the memory arm's request of each call is the baseline's plus that call's reminder
                b_agent, m_agent = bodies(ep, "baseline", task_id, "agent"), bodies(ep, "memory", task_id, "agent")
                assert len(b_agent) == len(m_agent) == calls
                for step, (b, m, t) in enumerate(zip(b_agent, m_agent, triggers)):
                    assert steady(m) == steady(with_hint(b, t["injected"], placement)), (task_id, step)
                    assert REMINDER_HEAD not in json.dumps(b)
                    reminded += bool(t["injected"])
                if memory["mode"] == "always_inject":
                    assert all(t["injected"] for t in triggers)
                hinted = [e.data for e in mem.trajectory.events if (e.plugin, e.kind) == ("proxy", "hints")]
                agent_calls = [c for c, mc in enumerate(mem.trajectory.model_calls) if mc.role == "agent"]
                assert [h["call"] for h in hinted] == [c for c, t in zip(agent_calls, triggers) if t["injected"]]
                assert all(h["sources"] == ["memory"] and h["placements"] == [placement] for h in hinted)

                # what the memory model read before call k: the instruction, and the agent's
                # commands with the outputs it sent back, up to call k - 1 (mid-run, before any record)
                edits = [b for b in bodies(ep, "memory", task_id, "memory") if b.get("tools")]
                assert len(edits) == calls
                shown = [b["messages"][-1]["content"] for b in edits]
                instruction = load_task(builtin_tasks_dir() / task_id).instruction
                assert all(instruction in s for s in shown)
                assert f"agent calls {TOOL}(" not in shown[0]
                replies = [m for m in mem.trajectory.messages if m.role == "assistant"]
                results = [m.content for m in mem.trajectory.messages if m.role == "tool"]
                for k in range(1, calls):
                    raw = replies[k - 1].tool_calls[0].arguments_raw.strip()
                    assert f"agent calls {TOOL}({raw[:200]}" in shown[k], (task_id, k)
                    assert f"result of {TOOL}: {results[k - 1][:200]}" in shown[k], (task_id, k)
                    assert shown[k].count(f"] result of {TOOL}: ") == k, (task_id, k)  # nothing from later calls
        finally:
            await channel.aclose()
    assert reminded > 0
