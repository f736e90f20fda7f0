"""The solution-scripting endpoint: stateless replies per task, both tool modes, faults, the CLI."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from agentrig.agents.base import AgentSettings
from agentrig.agents.bash import BashAgent, parse_action
from agentrig.agents.bash_prompts import ACTION_LABEL, SUBMIT_SENTINEL
from agentrig.bench.terminal.tasks.taskmodel import SolutionStep, TerminalTask
from agentrig.errors import BadRequest
from agentrig.bench.terminal.scripted.solution_endpoint import SolutionEndpoint, SolutionScript
from agentrig.types import CallContext

from tests.agents.terminal_harness import builtin_task, open_session, verify_session
from tests.support import KEY, make_channel

NATIVE_TOOLS = [{"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}}]


def _ctx(task: str, role: str = "agent") -> CallContext:
    return CallContext(run="r", arm="a", domain="terminal", task=task, trial=0, role=role)


def _task(tmp_path: Path, steps: list[SolutionStep] | None = None, script: str | None = None) -> TerminalTask:
    path = None
    if script is not None:
        path = tmp_path / "solution.sh"
        path.write_text(script)
    return TerminalTask(id="t", path=tmp_path, format="tb1", instruction="x", solution=steps, solution_script=path)


def test_scripts_from_solution_yaml_and_solution_sh(tmp_path):
    steps = [SolutionStep(command="echo a"), SolutionStep(command="vim f", append_enter=False),
             SolutionStep(command=":wq"), SolutionStep(command="python -m http.server", block=False)]
    s = SolutionScript.from_task(_task(tmp_path, steps))
    assert s.commands == ("echo a", "vim f:wq", "nohup bash -c 'python -m http.server' > /dev/null 2>&1 &")
    script = "#!/bin/bash\nset -e\necho 'AGENTRIG_SOLUTION_EOF'\n"
    (one,) = SolutionScript.from_task(_task(tmp_path, script=script)).commands
    assert one.startswith("bash <<'AGENTRIG_SOLUTION_EOF_'\n") and one.endswith("\nAGENTRIG_SOLUTION_EOF_")
    # a command holding ``` is fenced with a longer fence, and still parses as one action
    s = SolutionScript("t", ("printf '```\\n'",))
    reply = s.agent_reply([], native=False)["content"]
    assert parse_action(reply) == ("printf '```\\n'", None) and f"````{ACTION_LABEL}" in reply


async def test_replies_follow_the_conversation_statelessly():
    async with SolutionEndpoint(api_key=KEY, record=True) as ep:
        channel = make_channel(ep.base_url, model="solution")
        task = builtin_task("stale-lock")
        steps = [s.command for s in task.solution]
        system = [{"role": "system", "content": "s"}, {"role": "user", "content": "task"}]
        first = await channel.complete("agent", system, NATIVE_TOOLS, _ctx("stale-lock"))
        again = await channel.complete("agent", system, NATIVE_TOOLS, _ctx("stale-lock"))
        assert first.message.tool_calls[0].arguments == again.message.tool_calls[0].arguments == {"command": steps[0]}
        # native: two bash calls already made -> the third step
        convo = list(system)
        for i in range(2):
            convo += [{"role": "assistant", "content": None, "tool_calls": [
                {"id": f"c{i}", "type": "function", "function": {"name": "bash", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": f"c{i}", "content": "exit code: 0"}]
        third = await channel.complete("agent", convo, NATIVE_TOOLS, _ctx("stale-lock"))
        assert third.message.tool_calls[0].arguments == {"command": steps[2]}
        # text: a reply that was a format error does not count as a step played
        convo = system + [{"role": "assistant", "content": f"```{ACTION_LABEL}\nx\n```"}, {"role": "user", "content": "o"},
                          {"role": "assistant", "content": "no block"}, {"role": "user", "content": "Format error"}]
        reply = await channel.complete("agent", convo, None, _ctx("stale-lock"))
        assert parse_action(reply.message.content)[0] == steps[1]
        # everything played: the submit command, again and again
        convo = system + [{"role": "assistant", "content": f"```{ACTION_LABEL}\nx\n```"}] * 6
        reply = await channel.complete("agent", convo, None, _ctx("stale-lock"))
        assert parse_action(reply.message.content)[0].startswith(f"echo {SUBMIT_SENTINEL}")
        with pytest.raises(BadRequest, match="unknown task 'nope'"):
            await channel.complete("agent", system, None, _ctx("nope"))
        with pytest.raises(BadRequest, match="roles agent and memory"):
            await reply_for_role(ep, "user")
        await channel.aclose()


async def reply_for_role(ep, role):
    """A request sent as another role (the channel sets the role header from its role name)."""
    ch = make_channel(ep.base_url, roles=(role,), model="solution")
    try:
        await ch.complete(role, [{"role": "user", "content": "hi"}], None, _ctx("stale-lock"))
    finally:
        await ch.aclose()


@pytest.mark.skipif(os.geteuid() != 0, reason="the bwrap sandbox enters namespaces with setns: needs root")
async def test_with_twenty_percent_faults_every_trial_is_solved_and_retries_are_counted(tmp_path):
    ids = ["write-marker", "stale-lock", "harbor-dedupe-emails", "fix-python-bug"]
    async with SolutionEndpoint(api_key=KEY, fault_rate=0.2, seed=11) as ep:
        channel = make_channel(ep.base_url, model="solution", max_attempts=8)

        async def one(task_id, mode):
            s = await open_session(builtin_task(task_id), channel, tmp_path / f"{task_id}-{mode}")
            try:
                await BashAgent(AgentSettings(tool_mode=mode, step_limit=30), s).run(s)
                return s, await verify_session(s)
            finally:
                await s.sandbox.close()

        results = await asyncio.gather(*(one(t, m) for t in ids for m in ("native", "text")))
        await channel.aclose()
    assert all(s.submitted and r.resolved for s, r in results)
    retries = sum(c.retries for s, _ in results for c in s.ctx.trajectory.model_calls)
    causes = {a.cause for s, _ in results for c in s.ctx.trajectory.model_calls for a in c.attempts if a.cause}
    assert retries > 0 and causes <= {"rate_limited", "server_error", "malformed"} and len(causes) >= 2
    assert all(c.error is None for s, _ in results for c in s.ctx.trajectory.model_calls)


async def test_memory_role_gets_the_gold_style_replies():
    async with SolutionEndpoint(api_key=KEY) as ep:
        ch = make_channel(ep.base_url, roles=("memory",), model="solution")
        tools = [{"type": "function", "function": {"name": "memory_save_knowledge", "parameters": {"type": "object"}}}]
        done = await ch.complete("memory", [{"role": "user", "content": "bank: (empty)"}], tools, _ctx("write-marker"))
        await ch.aclose()
    (tc,) = done.message.tool_calls
    assert tc.name == "memory_save_knowledge" and "run: bash <<'AGENTRIG_SOLUTION_EOF'" in tc.arguments["content"]


def _post(url: str, body: dict, headers: dict) -> tuple[int, dict]:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json", **headers})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_cli_serves_until_sigterm_and_refuses_a_bad_tasks_dir(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    bad = subprocess.run([sys.executable, "-m", "agentrig.bench.terminal.scripted.solution_endpoint", "--tasks", str(tmp_path / "none")],
                         capture_output=True, text=True, env=env, timeout=30)
    assert bad.returncode == 2 and "--tasks" in bad.stderr and "Traceback" not in bad.stderr
    proc = subprocess.Popen([sys.executable, "-m", "agentrig.bench.terminal.scripted.solution_endpoint", "--no-auth", "--reasoning"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        base = proc.stdout.readline().strip()
        assert base.startswith("http://127.0.0.1:"), proc.stderr.read()
        body = {"model": "solution", "messages": [{"role": "user", "content": "go"}]}
        status, out = _post(base + "/chat/completions", body,
                            {"X-Agentrig-Task": "write-marker", "X-Agentrig-Role": "agent"})
        msg = out["choices"][0]["message"]
        assert status == 200 and parse_action(msg["content"])[0].startswith("bash <<'AGENTRIG_SOLUTION_EOF'")
        assert msg["reasoning_content"] == "Reasoning for step 1 of task write-marker."
        status, out = _post(base + "/chat/completions", body, {"X-Agentrig-Role": "agent"})
        assert status == 400 and "X-Agentrig-Task" in out["error"]["message"]
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()



async def test_mini_flavor_speaks_mini_swe_agents_conventions():
    """flavor="mini": mini-SWE-agent's fence label, its count of played actions, its submit sentinel."""
    import re

    mini_regex = r"```mswea_bash_command\s*\n(.*?)\n```"  # mini-SWE-agent 2.x's text-mode action regex
    steps = [s.command for s in builtin_task("stale-lock").solution]
    async with SolutionEndpoint(api_key=KEY, flavor="mini") as ep:
        channel = make_channel(ep.base_url, model="solution")
        convo = [{"role": "system", "content": "s"}, {"role": "user", "content": "task"}]
        for i, step in enumerate(steps):
            reply = (await channel.complete("agent", convo, None, _ctx("stale-lock"))).message.content
            assert re.findall(mini_regex, reply, re.DOTALL) == [step] and ACTION_LABEL not in reply
            convo += [{"role": "assistant", "content": reply}, {"role": "user", "content": f"<returncode>0</returncode>{i}"},
                      {"role": "assistant", "content": "two blocks are a format error: ```mswea_bash_command\na\n```"
                                                       "\n```mswea_bash_command\nb\n```"},
                      {"role": "user", "content": "Please always provide EXACTLY ONE action"}]
        reply = (await channel.complete("agent", convo, None, _ctx("stale-lock"))).message.content
        (submit,) = re.findall(mini_regex, reply, re.DOTALL)
        assert submit.startswith("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT &&")
        out = subprocess.run(["bash", "-c", submit], capture_output=True, text=True).stdout
        assert out.splitlines()[0] == "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
        native = await channel.complete("agent", convo[:2], NATIVE_TOOLS, _ctx("stale-lock"))  # native: unchanged
        assert native.message.tool_calls[0].arguments == {"command": steps[0]}
        await channel.aclose()
    with pytest.raises(ValueError, match="flavor 'swe'"):
        SolutionEndpoint(flavor="swe")
