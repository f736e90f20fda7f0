"""The solution endpoint speaks each installed agent's protocol (issue 32 §4): mini-swe-agent (tool
and text mode), Codex CLI (``exec_command``) and Claude Code (``Bash``), recognised per request,
agentrig's own bash agent unchanged, and a user's own agent (``kind = "command"``) through whatever
shell-like tool it offers.

The requests are built here as the measuring proxy hands them on — chat bodies whose tools are
the agent's own (names and parameters as mini-swe-agent 2.4.6, Codex CLI 0.169.0 and Claude Code
2.1.328 declare them, descriptions shortened) and whose conversation grows as the agent's does.
Every test talks to a real SolutionEndpoint over HTTP, and the commands it answers are run for
real with bash, their output sent back in the agent's own shape. The last tests run the real
mini-swe-agent (the anchors' venv) and the example command agent (``examples/command_agent``)
against the endpoint.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from agentrig.agents.bash import parse_action
from agentrig.bench.terminal.scripted.agent_protocols import SIDE_REPLY, protocol_of
from agentrig.testing._noise import Noise
from agentrig.testing.fake_endpoint import ThreadedFakeEndpoint
from agentrig.bench.terminal.scripted.solution_endpoint import FINAL_TEXT, NOISE_COMMAND, SolutionEndpoint

from tests.bench.terminal.run_support import write_task

KEY = "sk-solution-agents-0123456789"
SENTINEL = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
_MINI_BLOCK = re.compile(r"```mswea_bash_command\s*\n(.*?)\n```", re.DOTALL)


def _fn(name: str, properties: dict, required: list[str], description: str = "") -> dict:
    return {"type": "function", "function": {"name": name, "description": description, "parameters": {
        "type": "object", "properties": properties, "required": required}}}


_S, _N, _B = {"type": "string"}, {"type": "number"}, {"type": "boolean"}
MINI_TOOLS = [_fn("bash", {"command": {"type": "string", "description": "The bash command to execute"}}, ["command"],
                  "Execute a bash command")]
CODEX_TOOLS = [
    _fn("exec_command", {"cmd": _S, "justification": _S, "login": _B, "max_output_tokens": _N,
                         "prefix_rule": {"type": "array", "items": _S}, "sandbox_permissions": _S, "shell": _S,
                         "tty": _B, "workdir": _S, "yield_time_ms": _N}, ["cmd"],
        "Runs a command in a PTY, returning output or a session ID for ongoing interaction."),
    _fn("write_stdin", {"chars": _S, "max_output_tokens": _N, "session_id": _N, "yield_time_ms": _N}, ["session_id"]),
    _fn("request_user_input", {"questions": {"type": "array"}}, ["questions"]),
    _fn("view_image", {"path": _S}, ["path"]),
    _fn("update_goal", {"status": _S}, ["status"]),
]
CLAUDE_TOOLS = [
    _fn("Agent", {"description": _S, "prompt": _S}, ["description", "prompt"]),
    _fn("Bash", {"command": _S, "timeout": _N, "description": _S, "run_in_background": _B,
                 "dangerouslyDisableSandbox": _B}, ["command"], "Executes a bash command and returns its output."),
    _fn("Edit", {"file_path": _S, "old_string": _S, "new_string": _S}, ["file_path", "old_string", "new_string"]),
    _fn("Read", {"file_path": _S}, ["file_path"]),
    _fn("Write", {"file_path": _S, "content": _S}, ["file_path", "content"]),
]
AGENTRIG_TOOLS = [_fn("bash", {"command": {"type": "string", "description": "the command, as typed at a bash prompt"}},
                      ["command"], "Run one shell command")]
# a user's own agent: the example command agent's one tool (examples/command_agent/agent.py), and an
# unusual one whose only clue is its schema (a `script` string), among tools that are no shell
GENERIC_TOOLS = [_fn("shell", {"cmd": {"type": "string", "description": "the command"}}, ["cmd"],
                     "Run a shell command in the task's machine and see its output.")]
UNUSUAL_TOOLS = [_fn("read_file", {"path": _S}, ["path"], "Read a file."),
                 _fn("run_command", {"script": _S, "timeout_s": _N}, ["script"]),
                 _fn("finish", {"summary": _S}, ["summary"], "Say the task is done.")]


def _prompts(agent: str, task: str) -> list[dict]:
    """The start of each agent's conversation, as the proxy hands it on (its real texts, cut short)."""
    if agent == "mini":
        return [{"role": "system", "content": "You are a helpful assistant that can interact with a computer."},
                {"role": "user", "content": f"Please solve this issue: {task}\n\n6. Submit your changes and finish your "
                                            f"work by issuing the following command: `echo {SENTINEL}`."}]
    if agent == "mini-text":
        return [{"role": "system", "content": "You are a helpful assistant that can interact with a computer.\n\n"
                                              "<format_example>\nTHOUGHT\n\n```mswea_bash_command\nyour_command_here\n```"
                                              "\n</format_example>"},
                {"role": "user", "content": f"Please solve this issue: {task}\n`echo {SENTINEL}`"}]
    if agent == "codex":  # the proxy turns Codex's developer messages into system messages
        return [{"role": "system", "content": "You are a coding agent running in the Codex CLI, a terminal-based coding "
                                              "assistant."},
                {"role": "system", "content": "<skills_instructions>\n## Skills\n</skills_instructions>"},
                {"role": "user", "content": "<environment_context>\n  <cwd>/app</cwd>\n  <shell>bash</shell>\n"
                                            "</environment_context>"},
                {"role": "user", "content": task}]
    if agent == "claude-code":
        return [{"role": "system", "content": "x-anthropic-billing-header: cc_version=2.1.328; cc_entrypoint=sdk-cli;\n"
                                              "You are a Claude agent, built on Anthropic's Claude Agent SDK."},
                {"role": "user", "content": f"<system-reminder>\n# Environment\n</system-reminder>\n{task}"}]
    return [{"role": "system", "content": "You run shell commands to solve a terminal task."},
            {"role": "user", "content": task}]


TOOLS = {"mini": MINI_TOOLS, "mini-text": None, "codex": CODEX_TOOLS, "claude-code": CLAUDE_TOOLS,
         "agentrig": AGENTRIG_TOOLS, "agentrig-text": None, "generic": GENERIC_TOOLS, "unusual": UNUSUAL_TOOLS}
SHELL_TOOL = {"mini": "bash", "codex": "exec_command", "claude-code": "Bash", "agentrig": "bash", "generic": "shell",
              "unusual": "run_command"}
SHELL_ARG = {"codex": "cmd", "generic": "cmd", "unusual": "script"}  # else "command"
TEXT_FINISH = ("codex", "claude-code", "generic", "unusual")  # agents that end at a reply without a tool call


def _run(command: str, cwd: Path) -> tuple[int, str]:
    done = subprocess.run(["bash", "-c", command], cwd=cwd, capture_output=True, text=True, timeout=60)
    return done.returncode, done.stdout + done.stderr


def _observation(agent: str, code: int, output: str) -> str:
    """A command's result as the agent sends it back."""
    if agent == "mini":
        return json.dumps({"returncode": code, "output": output}, indent=2)
    if agent == "mini-text":
        return f"<returncode>{code}</returncode>\n<output>\n{output}</output>"
    if agent == "codex":
        return (f"Chunk ID: 1a2b3c\nWall time: 0.0100 seconds\nProcess exited with code {code}\n"
                f"Original token count: {len(output) // 4}\nOutput:\n{output}")
    if agent == "claude-code":
        return output.rstrip("\n") or "(Bash completed with no output)"
    return f"exit code: {code}\n{output}"


def _post(served: ThreadedFakeEndpoint, task: str, body: dict) -> dict:
    headers = {"Authorization": f"Bearer {KEY}", "X-Agentrig-Role": "agent", "X-Agentrig-Task": task}
    resp = httpx.post(f"{served.base_url}/chat/completions", json=body, headers=headers, timeout=30)
    assert resp.status_code == 200, resp.text
    return resp.json()["choices"][0]


def _play(served: ThreadedFakeEndpoint, agent: str, task: str, workdir: Path, *, limit: int = 12,
          extra: dict | None = None) -> tuple[list[str], dict, int]:
    """The agent's loop against the endpoint: commands run for real, results sent back in its shape,
    until its own end (mini: the sentinel's output; Codex / Claude Code: a reply without a tool call;
    agentrig: its submit sentinel). Returns the commands run, the last choice and the calls made."""
    messages = _prompts(agent, "Solve the task.")
    tools = TOOLS[agent]
    ran: list[str] = []
    for calls in range(1, limit + 1):
        body = {"model": "solution", "messages": messages, **({"tools": tools} if tools else {}), **(extra or {})}
        choice = _post(served, task, body)
        msg = choice["message"]
        if tools is None:  # text mode: one fenced block a reply
            blocks = _MINI_BLOCK.findall(msg["content"]) if agent == "mini-text" else [parse_action(msg["content"])[0]]
            assert len(blocks) == 1 and blocks[0], msg["content"]
            code, out = _run(blocks[0], workdir)
            ran.append(blocks[0])
            messages = messages + [{"role": "assistant", "content": msg["content"]},
                                   {"role": "user", "content": _observation(agent, code, out)}]
            if out.splitlines()[:1] in ([SENTINEL], ["AGENTRIG_SUBMIT"]):
                return ran, choice, calls
            continue
        if not msg.get("tool_calls"):
            assert agent in TEXT_FINISH, f"{agent} got a reply without a tool call: {msg}"
            return ran, choice, calls
        (call,) = msg["tool_calls"]
        assert call["function"]["name"] == SHELL_TOOL[agent]
        args = json.loads(call["function"]["arguments"])
        command = args[SHELL_ARG.get(agent, "command")]
        assert isinstance(command, str)
        code, out = _run(command, workdir)
        ran.append(command)
        messages = messages + [{"role": "assistant", "content": msg["content"], "tool_calls": msg["tool_calls"]},
                               {"role": "tool", "tool_call_id": call["id"], "content": _observation(agent, code, out)}]
        if out.splitlines()[:1] in ([SENTINEL], ["AGENTRIG_SUBMIT"]):
            return ran, choice, calls
    raise AssertionError(f"{agent} did not finish in {limit} calls: {ran}")


@pytest.fixture(scope="module")
def tasks(tmp_path_factory) -> tuple[Path, Path]:
    """Two tasks whose solutions write under ``out``: three solution.yaml steps; a solution.sh
    with quotes, a dollar and backticks (sent inline as a heredoc)."""
    root = tmp_path_factory.mktemp("agent-tasks")
    out = root / "out"
    steps = "\n".join(f"- command: {json.dumps(c)}\n  block: true\n  append_enter: true" for c in (
        f"mkdir -p {out}/steps", f"echo one > {out}/steps/log.txt", f"echo two >> {out}/steps/log.txt"))
    write_task(root / "tasks", "three-steps", solution=None, solution_yaml=steps)
    script = f"#!/bin/bash\nset -e\nmkdir -p {out}/script\ncat > {out}/script/marker.txt <<'EOF'\nok \"q\" $HOME `t`\nEOF\necho written\n"
    write_task(root / "tasks", "script", solution=script)
    return root / "tasks", out


@pytest.fixture(scope="module")
def served(tasks):
    with ThreadedFakeEndpoint(endpoint=SolutionEndpoint(tasks[0], api_key=KEY, record=True)) as s:
        yield s


@pytest.mark.parametrize("agent", ["mini", "mini-text", "codex", "claude-code", "agentrig", "agentrig-text", "generic",
                                   "unusual"])
def test_each_agent_plays_the_whole_solution_then_finishes_its_own_way(agent, served, tasks, tmp_path):
    out = tasks[1]
    ran, last, calls = _play(served, agent, "three-steps", tmp_path)
    steps = [f"mkdir -p {out}/steps", f"echo one > {out}/steps/log.txt", f"echo two >> {out}/steps/log.txt"]
    assert (out / "steps" / "log.txt").read_text() == "one\ntwo\n"
    if agent in TEXT_FINISH:  # a final text, no tool call: the agent's turn ends
        assert ran == steps and calls == len(steps) + 1
        assert last["finish_reason"] == "stop" and last["message"]["content"]
    else:  # the submit command, its sentinel on the first output line
        sentinel = SENTINEL if agent.startswith("mini") else "AGENTRIG_SUBMIT"
        assert ran[:-1] == steps and ran[-1].startswith(f"echo {sentinel} &&") and calls == len(steps) + 1
    # the solution.sh, inline: the script's text reaches the file untouched, whoever runs it
    ran, _, calls = _play(served, agent, "script", tmp_path)
    assert ran[0].startswith("bash <<'AGENTRIG_SOLUTION_EOF'") and calls == 2
    assert (out / "script" / "marker.txt").read_text() == 'ok "q" $HOME `t`\n'


def test_the_agents_own_arguments(served):
    """Codex's ``cmd`` is one string (with the longest wait before it answers); Claude Code's
    ``Bash`` gets a description and the longest foreground timeout."""
    codex = _post(served, "three-steps", {"model": "solution", "messages": _prompts("codex", "t"), "tools": CODEX_TOOLS})
    args = json.loads(codex["message"]["tool_calls"][0]["function"]["arguments"])
    assert set(args) == {"cmd", "yield_time_ms"} and isinstance(args["cmd"], str) and args["yield_time_ms"] == 30000
    claude = _post(served, "three-steps", {"model": "solution", "messages": _prompts("claude-code", "t"), "tools": CLAUDE_TOOLS})
    args = json.loads(claude["message"]["tool_calls"][0]["function"]["arguments"])
    assert set(args) == {"command", "description", "timeout"} and args["timeout"] == 600000


def test_codex_waits_for_a_command_still_running_and_the_wait_is_no_step(served, tasks):
    out = tasks[1]
    convo = _prompts("codex", "t") + [
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {
            "name": "exec_command", "arguments": json.dumps({"cmd": "x"})}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "Chunk ID: 9\nWall time: 30.0 seconds\n"
                                                          "Process running with session ID 4242\nOutput:\n"}]
    wait = _post(served, "three-steps", {"model": "solution", "messages": convo, "tools": CODEX_TOOLS})["message"]
    (call,) = wait["tool_calls"]
    assert call["function"]["name"] == "write_stdin"
    assert json.loads(call["function"]["arguments"]) == {"session_id": 4242, "chars": "", "yield_time_ms": 300000}
    convo += [{"role": "assistant", "content": None, "tool_calls": wait["tool_calls"]},
              {"role": "tool", "tool_call_id": call["id"], "content": "Chunk ID: 10\nProcess exited with code 0\nOutput:\n"}]
    nxt = _post(served, "three-steps", {"model": "solution", "messages": convo, "tools": CODEX_TOOLS})["message"]
    assert json.loads(nxt["tool_calls"][0]["function"]["arguments"])["cmd"] == f"echo one > {out}/steps/log.txt"


def test_side_requests_get_a_short_text_and_never_count_as_a_command(served):
    played = _prompts("claude-code", "t") + [
        {"role": "assistant", "content": None, "tool_calls": [{"id": "b1", "type": "function", "function": {
            "name": "Bash", "arguments": json.dumps({"command": "x"})}}]},
        {"role": "tool", "tool_call_id": "b1", "content": "done"}]
    sides = [
        {"messages": [{"role": "user", "content": "quota"}], "max_tokens": 1},  # a quota check
        {"messages": [{"role": "system", "content": "x-anthropic-billing-header: cc_version=2.1.328;\nGenerate a "
                                                    "concise title for this conversation."},
                      {"role": "user", "content": "Solve the task."}], "max_tokens": 512},  # a title
        {"messages": _prompts("codex", "t"), "tools": [t for t in CODEX_TOOLS if t["function"]["name"] != "exec_command"]},
        {"messages": played, "tools": [t for t in CLAUDE_TOOLS if t["function"]["name"] != "Bash"]},
    ]
    for side in sides:
        choice = _post(served, "three-steps", {"model": "solution", **side})
        assert choice["message"]["content"] == SIDE_REPLY and not choice["message"].get("tool_calls")
    # the agent's own requests around them: unchanged (one command played -> the second)
    nxt = _post(served, "three-steps", {"model": "solution", "messages": played, "tools": CLAUDE_TOOLS})["message"]
    assert json.loads(nxt["tool_calls"][0]["function"]["arguments"])["command"].startswith("echo one >")
    # agentrig's text mode, whose prompts name no agent: still a bash-action block
    plain = _post(served, "three-steps", {"model": "solution", "messages": [{"role": "user", "content": "task"}]})
    assert parse_action(plain["message"]["content"])[0].startswith("mkdir -p")


def test_the_agent_is_recognised_from_the_request_alone():
    def body(agent, **kw):
        return {"messages": _prompts(agent, "t"), **({"tools": TOOLS[agent]} if TOOLS[agent] else {}), **kw}

    assert [protocol_of(body(a)).name for a in TOOLS] == ["mini", "mini", "codex", "claude-code", "agentrig", "agentrig",
                                                          "generic", "generic"]
    assert protocol_of(body("mini")).native and not protocol_of(body("mini-text")).native
    # mini's tool is named like agentrig's: its prompts tell them apart; the endpoint's flavor forces mini
    assert protocol_of(body("agentrig")).sentinel == "AGENTRIG_SUBMIT"
    assert protocol_of(body("agentrig"), "mini").name == "mini"
    # a mini config of the user's own that names no sentinel: its tool (set in mini's code) tells
    assert protocol_of({"messages": _prompts("agentrig", "t"), "tools": MINI_TOOLS}).name == "mini"
    assert protocol_of(body("agentrig-text", max_tokens=8)) is None
    # the proxy may hand on a Responses tool flat (name at the top): read too
    flat = {"messages": [], "tools": [{"type": "function", "name": "exec_command", "parameters": {}}]}
    assert protocol_of(flat).name == "codex"


def test_a_users_own_agent_is_played_through_its_shell_like_tool():
    """A request whose tools are none of the known agents' but hold a shell-like tool — by its name,
    by its description, or by its only required parameter being a string ``cmd``/``command``/``script``
    — is a user's own agent: its tool and argument (from the schema) carry the commands, and it
    finishes with a text. Tools that are no shell keep a request a side request."""
    def generic(*tools):
        found = protocol_of({"messages": _prompts("generic", "t"), "tools": list(tools)})
        return found and (found.name, found.tool, found.arguments("ls", 0, 1), found.finish)

    assert generic(*GENERIC_TOOLS) == ("generic", "shell", {"cmd": "ls"}, "text")
    assert generic(*UNUSUAL_TOOLS) == ("generic", "run_command", {"script": "ls"}, "text")
    # by its name (the argument: its one required string, whatever it is called)
    assert generic(_fn("RunInTerminal", {"input": _S, "cwd": _S}, ["input"])) == (
        "generic", "RunInTerminal", {"input": "ls"}, "text")
    # by its description's first sentence, the argument its only string property
    assert generic(_fn("act", {"line": _S, "wait": _B}, [], "Executes the given bash command line.\nReturns output."))[2] == {
        "line": "ls"}
    # by its schema alone: a command-named string among its properties
    assert generic(_fn("x", {"command": _S}, ["command"]))[1:3] == ("x", {"command": "ls"})
    # a name or description that says shell wins over a script-taking tool listed before it
    assert generic(_fn("run_python", {"script": _S}, ["script"], "Run Python code."), *GENERIC_TOOLS)[1] == "shell"
    # no shell among the tools: a side request, as before
    not_shell = [_fn("python", {"code": _S}, ["code"], "Run Python code and see what it prints."),
                 _fn("read_file", {"path": _S}, ["path"], "Read a file."),
                 _fn("Agent", {"description": _S, "prompt": _S}, ["description", "prompt"],
                     "Launch a new agent to handle complex, multi-step tasks. Agent types: Bash, for running bash "
                     "commands in a terminal."),
                 _fn("shell_state", {"session": _N, "verbose": _B}, ["session"])]  # shell-named, no string to fill
    assert generic(*not_shell) is None
    # a known product's request without its own shell tool stays a side request (Claude Code's
    # SlashCommand takes one `command` string but runs no shell)
    slash = _fn("SlashCommand", {"command": _S}, ["command"], "Execute a slash command within the main conversation")
    assert protocol_of({"messages": _prompts("claude-code", "t"), "tools": [slash]}) is None
    assert protocol_of({"messages": _prompts("generic", "t"), "tools": [slash]}).name == "generic"
    # the known agents first, unchanged, whatever else is offered
    assert protocol_of({"messages": _prompts("codex", "t"), "tools": GENERIC_TOOLS + CODEX_TOOLS}).name == "codex"
    assert protocol_of({"messages": _prompts("claude-code", "t"), "tools": GENERIC_TOOLS + CLAUDE_TOOLS}).name == "claude-code"
    assert protocol_of({"messages": _prompts("agentrig", "t"), "tools": UNUSUAL_TOOLS + AGENTRIG_TOOLS}).name == "agentrig"


def test_a_generic_agents_whole_history_counts_its_own_shell_calls_only(served, tasks):
    """A user's own agent sends its whole history each time, tool results as ``tool`` messages: its
    calls of its shell tool are the commands played (its model's ids, not the endpoint's), its
    other tools' calls are not."""
    out = tasks[1]

    def call(i, name, args):
        return {"role": "assistant", "content": None, "tool_calls": [{"id": f"call_{i}", "type": "function", "function": {
            "name": name, "arguments": json.dumps(args)}}]}

    history = _prompts("unusual", "t") + [
        call("a", "run_command", {"script": "mkdir -p x"}), {"role": "tool", "tool_call_id": "call_a", "content": "ok"},
        call("b", "read_file", {"path": "x"}), {"role": "tool", "tool_call_id": "call_b", "content": "a dir"}]
    nxt = _post(served, "three-steps", {"model": "solution", "messages": history, "tools": UNUSUAL_TOOLS})["message"]
    assert nxt["tool_calls"][0]["function"]["name"] == "run_command"
    assert json.loads(nxt["tool_calls"][0]["function"]["arguments"]) == {"script": f"echo one > {out}/steps/log.txt"}
    history += [call("c", "run_command", {"script": "2"}), {"role": "tool", "tool_call_id": "call_c", "content": ""},
                call("d", "run_command", {"script": "3"}), {"role": "tool", "tool_call_id": "call_d", "content": ""}]
    for _ in range(2):  # every later request: the final text again
        done = _post(served, "three-steps", {"model": "solution", "messages": history, "tools": UNUSUAL_TOOLS})
        assert done["finish_reason"] == "stop" and done["message"]["content"] == FINAL_TEXT
        assert not done["message"].get("tool_calls")

def _resample(served, agent: str, task: str, played: int, n: int, **extra) -> set[str]:
    """The distinct commands answered at decision step ``played`` over ``n`` sampled requests."""
    convo = _prompts(agent, "t")
    for i in range(played):
        convo += [{"role": "assistant", "content": "", "tool_calls": [{"id": f"c{i}", "type": "function", "function": {
            "name": SHELL_TOOL[agent], "arguments": "{}"}}]}, {"role": "tool", "tool_call_id": f"c{i}", "content": "{}"}]
    seen = set()
    for seed in range(n):
        msg = _post(served, task, {"model": "solution", "messages": convo, "tools": TOOLS[agent], "temperature": 0.7,
                                   "seed": seed, **extra})["message"]
        seen.add(msg["tool_calls"][0]["function"]["arguments"] if msg.get("tool_calls") else msg["content"])
    return seen


def test_noise_in_mini_tool_mode_the_injected_steps_and_only_they_fork(tasks):
    """``agentrig instability`` flags a step whose resampled decisions differ: in mini's tool mode the
    noisy endpoint's injected steps, and only they, fork (precision and recall 1 on these steps);
    at temperature 0 nothing is noisy; a guideline's ``<<do:LABEL>>`` restores the step."""
    injected = {("three-steps", 1), ("script", 1)}  # script's step 1 is its submit step
    noise = Noise(p=0.5, seed=3, steps={f"terminal/{t}": (s,) for t, s in injected})
    with ThreadedFakeEndpoint(endpoint=SolutionEndpoint(tasks[0], api_key=KEY, noise=noise)) as noisy:
        flagged = {(task, step) for task, total in (("three-steps", 4), ("script", 2)) for step in range(total)
                   if len(_resample(noisy, "mini", task, step, 10)) > 1}
        assert flagged == injected
        (wrong,) = _resample(noisy, "mini", "three-steps", 1, 10) - _resample(noisy, "mini", "three-steps", 1, 1, temperature=0)
        assert json.loads(wrong)["command"] == NOISE_COMMAND
        guided = _prompts("mini", "t")
        guided[0] = {"role": "system", "content": guided[0]["content"] + "\n<<do:echo>>"}
        convo = guided + [{"role": "assistant", "content": "", "tool_calls": [{"id": "c0", "type": "function", "function": {
            "name": "bash", "arguments": "{}"}}]}, {"role": "tool", "tool_call_id": "c0", "content": "{}"}]
        for seed in range(10):
            msg = _post(noisy, "three-steps", {"model": "solution", "messages": convo, "tools": MINI_TOOLS, "temperature": 0.7,
                                               "seed": seed})["message"]
            assert json.loads(msg["tool_calls"][0]["function"]["arguments"])["command"].startswith("echo one >")


def test_over_the_responses_and_anthropic_wires(served, tasks):
    """The same replies reach Codex and Claude Code in their own wires (the FakeEndpoint's, not
    streaming): an ``exec_command`` function call, a ``Bash`` tool use, then the final text."""
    headers = {"Authorization": f"Bearer {KEY}", "X-Agentrig-Role": "agent", "X-Agentrig-Task": "script",
               "anthropic-version": "2023-06-01"}
    flat = [{"type": "function", "name": t["function"]["name"], "description": t["function"]["description"],
             "parameters": t["function"]["parameters"], "strict": False} for t in CODEX_TOOLS]
    first = [{"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "You are Codex."}]},
             {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Solve the task."}]}]
    r = httpx.post(f"{served.base_url}/responses", headers=headers, json={
        "model": "solution", "input": first, "tools": flat, "tool_choice": "auto", "parallel_tool_calls": True}).json()
    call = next(o for o in r["output"] if o["type"] == "function_call")
    assert call["name"] == "exec_command" and json.loads(call["arguments"])["cmd"].startswith("bash <<'AGENTRIG")
    done = first + [dict(call), {"type": "function_call_output", "call_id": call["call_id"],
                                 "output": "Process exited with code 0\nOutput:\nwritten\n"}]
    r = httpx.post(f"{served.base_url}/responses", headers=headers, json={"model": "solution", "input": done, "tools": flat}).json()
    assert [o["type"] for o in r["output"]] == ["message"]
    tools = [{"name": t["function"]["name"], "description": t["function"]["description"],
              "input_schema": t["function"]["parameters"]} for t in CLAUDE_TOOLS]
    system = [{"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.328;"},
              {"type": "text", "text": "You are a Claude agent, built on Anthropic's Claude Agent SDK."}]
    turns = [{"role": "user", "content": [{"type": "text", "text": "Solve the task."}]}]
    m = httpx.post(f"{served.base_url}/messages", headers=headers, json={
        "model": "solution", "max_tokens": 32000, "system": system, "messages": turns, "tools": tools}).json()
    use = next(b for b in m["content"] if b["type"] == "tool_use")
    assert m["stop_reason"] == "tool_use" and use["name"] == "Bash" and use["input"]["command"].startswith("bash <<")
    turns += [{"role": "assistant", "content": m["content"]},
              {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use["id"], "content": "written"}]}]
    m = httpx.post(f"{served.base_url}/messages", headers=headers, json={
        "model": "solution", "max_tokens": 32000, "system": system, "messages": turns, "tools": tools}).json()
    assert m["stop_reason"] == "end_turn" and [b["type"] for b in m["content"]] == ["text"]


@pytest.mark.parametrize("config", ["mini.yaml", "mini_textbased.yaml"])
def test_the_real_mini_swe_agent_solves_the_tasks_against_the_endpoint(config, tasks, tmp_path):
    """mini-swe-agent 2.4.6 itself (its CLI, its own config, tool mode and text mode), talking Chat
    Completions straight to the endpoint with the task header as ``extra_headers``: each task's
    solution played, then mini's submit — no flavor set, the endpoint reads mini from its requests."""
    from tests.anchors import anchor_python

    mini = anchor_python().parent / "mini"
    if not mini.exists():
        pytest.skip(f"mini-swe-agent is not in the anchors' venv ({mini})")
    out = tasks[1]
    with ThreadedFakeEndpoint(endpoint=SolutionEndpoint(tasks[0], api_key=KEY, record=True)) as ep:
        for task, files, commands in (("three-steps", {"steps/log.txt": "one\ntwo\n"}, 3),
                                      ("script", {"script/marker.txt": 'ok "q" $HOME `t`\n'}, 1)):
            for name in files:
                (out / name).unlink(missing_ok=True)
            start = len(ep.endpoint.requests)
            cfg = tmp_path / f"{task}.yaml"
            cfg.write_text(json.dumps({"model": {
                **({"model_class": "litellm_textbased"} if "textbased" in config else {}),
                "model_kwargs": {"api_base": ep.base_url, "api_key": KEY,
                                 "extra_headers": {"X-Agentrig-Task": task, "X-Agentrig-Role": "agent"}}}}))
            env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
            env.update(MSWEA_CONFIGURED="true", MSWEA_GLOBAL_CONFIG_DIR=str(tmp_path / "mini-config"),
                       MSWEA_COST_TRACKING="ignore_errors", LITELLM_LOCAL_MODEL_COST_MAP="True", OPENAI_API_KEY=KEY)
            traj = tmp_path / f"{task}.traj.json"
            done = subprocess.run([str(mini), "-m", "openai/solution", "-t", "Solve the task.", "--yolo",
                                   "--exit-immediately", "-l", "0", "-c", config, "-c", str(cfg), "-o", str(traj)],
                                  cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
                                  stdin=subprocess.DEVNULL)
            assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
            info = json.loads(traj.read_text())["info"]
            assert info["exit_status"] == "Submitted" and info["submission"] == "solution played\n"
            for name, text in files.items():
                assert (out / name).read_text() == text
            assert len(ep.endpoint.requests) - start == commands + 1 == info["model_stats"]["api_calls"]


class _TaskHeaderShim:
    """A tiny HTTP forwarder that adds the ``X-Agentrig-Task`` / ``X-Agentrig-Role`` headers the
    endpoint needs, as agentrig's measuring proxy does in a real trial (the example agent, like any
    agent of one's own, sends only its Authorization)."""

    def __init__(self, target_root: str, task: str):
        shim = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                headers = {"Authorization": self.headers.get("Authorization", ""), "Content-Type": "application/json",
                           "X-Agentrig-Task": shim.task, "X-Agentrig-Role": "agent"}
                answer = httpx.post(target_root + self.path, content=body, headers=headers, timeout=60)
                self.send_response(answer.status_code)
                self.send_header("Content-Type", answer.headers.get("content-type", "application/json"))
                self.send_header("Content-Length", str(len(answer.content)))
                self.end_headers()
                self.wfile.write(answer.content)

            def log_message(self, *args):
                pass

        self.task = task
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


def test_the_example_command_agent_plays_the_solution_then_stops(tmp_path):
    """examples/command_agent/agent.py itself, run on the host as ``kind = "command"`` runs it (its
    environment: OPENAI_BASE_URL, OPENAI_API_KEY, AGENTRIG_MODEL), from a scratch copy of the
    built-in task write-marker whose solution writes in the agent's working directory (a
    ``solution.sh``: one command) and from a three-step ``solution.yaml``: each command run by the
    agent, then its final text and exit 0 — one model call per command plus one."""
    from agentrig.bench.terminal.tasks.taskfile import builtin_tasks_dir

    agent = Path(__file__).resolve().parents[2] / "examples" / "command_agent" / "agent.py"
    work = tmp_path / "work"
    work.mkdir()
    tasks = tmp_path / "tasks"
    shutil.copytree(builtin_tasks_dir() / "write-marker", tasks / "write-marker")
    solution = tasks / "write-marker" / "solution.sh"
    solution.write_text(solution.read_text().replace("/app", str(work)))
    steps = "\n".join(f"- command: {json.dumps(c)}\n  block: true\n  append_enter: true"
                      for c in ("mkdir -p steps", "echo one > steps/log.txt", "echo two >> steps/log.txt"))
    write_task(tasks, "three-steps", solution=None, solution_yaml=steps)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_", "AGENTRIG_"))}
    with ThreadedFakeEndpoint(endpoint=SolutionEndpoint(tasks, api_key=KEY, record=True)) as ep:
        for task, files, commands in (("write-marker", {"marker.txt": "agentrig-ok\n"}, 1),
                                      ("three-steps", {"steps/log.txt": "one\ntwo\n"}, 3)):
            start = len(ep.endpoint.requests)
            with _TaskHeaderShim(ep.root_url, task) as shim:
                done = subprocess.run([sys.executable, str(agent), "Solve the task."], cwd=work, capture_output=True,
                                      text=True, timeout=120, stdin=subprocess.DEVNULL,
                                      env={**env, "OPENAI_BASE_URL": shim.base_url, "OPENAI_API_KEY": KEY,
                                           "AGENTRIG_MODEL": "solution"})
            assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
            assert done.stdout.strip() == FINAL_TEXT
            for name, text in files.items():
                assert (work / name).read_text() == text
            assert len(ep.endpoint.requests) - start == commands + 1
