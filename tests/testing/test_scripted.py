"""The scripted endpoints' common part (``agentrig.testing._scripted``): the gold, solution and
AppWorld endpoints answer `agentrig doctor`'s probes, refuse a role they do not play and a request
without the task's headers with the same 400s, over real HTTP; and the played-actions count."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import openai
import pytest

from agentrig.testing._scripted import GoldRequestError, actions_played, offered_name
from agentrig.bench.appworld.scripted.appworld_endpoint import AppWorldEndpoint
from agentrig.testing.fake_endpoint import ThreadedFakeEndpoint
from agentrig.bench.tau.scripted.gold_endpoint import GoldEndpoint
from agentrig.bench.terminal.scripted.solution_endpoint import SolutionEndpoint

from tests.support import KEY

AGENTRIG = str(Path(sys.executable).with_name("agentrig"))
KEY_ENV = "AGENTRIG_SCRIPTED_BASE_KEY"

# (make the endpoint in tmp_path, its model, its name in messages, the roles it names, its task headers)
ENDPOINTS = {
    "gold": (lambda tmp: GoldEndpoint(None, api_key=KEY), "gold", "gold endpoint", "agent, user, memory and judge",
             {"X-Agentrig-Domain": "mock", "X-Agentrig-Task": "create_task_1"}),
    "solution": (lambda tmp: SolutionEndpoint(None, api_key=KEY), "solution", "solution endpoint", "agent and memory",
                 {"X-Agentrig-Task": "stale-lock"}),
    "appworld": (lambda tmp: AppWorldEndpoint(tmp, api_key=KEY), "appworld-solution", "AppWorld endpoint",
                 "agent and memory", {"X-Agentrig-Task": "7c3e2fa_1"}),
}


async def _bad(ep, model: str, headers: dict) -> str:
    c = openai.AsyncOpenAI(base_url=ep.base_url, api_key=KEY, max_retries=0)
    try:
        with pytest.raises(openai.BadRequestError) as info:
            await c.chat.completions.create(model=model, messages=[{"role": "user", "content": "x"}],
                                            extra_headers=headers)
    finally:
        await c.close()
    return info.value.message


@pytest.mark.parametrize("which", sorted(ENDPOINTS))
async def test_a_role_it_does_not_play_and_missing_task_headers_are_400s_naming_the_fix(tmp_path, which):
    make, model, name, roles, task_headers = ENDPOINTS[which]
    async with make(tmp_path) as ep:
        said = await _bad(ep, model, {**task_headers, "X-Agentrig-Role": "critic"})
        assert (f"{name}: X-Agentrig-Role is 'critic'; the {name} plays the roles {roles} "
                "(send requests through agentrig's channel)") in said
        said = await _bad(ep, model, {"X-Agentrig-Role": "agent"})
        one = len(task_headers) == 1
        assert (f"{name}: the request lacks the {' / '.join(task_headers)} header{'' if one else 's'} "
                f"that name{'s' if one else ''} the trial's task") in said


def test_doctor_passes_against_the_appworld_endpoint(tmp_path):
    """As against the gold and solution endpoints (tests/testing/test_scripted_doctor.py): the probes
    are answered as by a server that calls tools; no synthetic AppWorld data is needed for that."""
    with ThreadedFakeEndpoint(AppWorldEndpoint(tmp_path, api_key=KEY)) as srv:
        env = {k: v for k, v in os.environ.items() if not k.endswith("_PROXY")}
        env[KEY_ENV] = KEY
        p = subprocess.run([AGENTRIG, "doctor", "--base-url", srv.base_url, "--model", "appworld-solution",
                            "--api-key-env", KEY_ENV], capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "X-Agentrig-Role" not in p.stdout and "all endpoints ready" in p.stdout and "NO_TOOL" not in p.stdout


def test_actions_played_counts_tool_calls_natively_and_one_action_replies_in_text():
    call = lambda name: {"id": "c", "type": "function", "function": {"name": name, "arguments": "{}"}}  # noqa: E731
    convo = [{"role": "system", "content": "s"},
             {"role": "assistant", "content": None, "tool_calls": [call("bash"), call("bash"), call("other")]},
             {"role": "tool", "content": "ok"},
             {"role": "assistant", "content": "ACT"},
             {"role": "assistant", "content": "ACT ACT"},
             {"role": "user", "content": "ACT"},
             {"role": "assistant", "content": None}]
    one = lambda text: text.count("ACT") == 1  # noqa: E731
    assert actions_played(convo, True, "bash", one) == 2
    assert actions_played(convo, False, "bash", one) == 1
    assert actions_played([], True, "bash", one) == actions_played([], False, "bash", one) == 0
    # an MCP client's names count as the tool's: mcp__appworld__bash, ns.bash — not mybash
    mcp = [{"role": "assistant", "content": None,
            "tool_calls": [call("mcp__appworld__bash"), call("ns.bash"), call("mybash"), call("bash__x")]}]
    assert actions_played(mcp, True, "bash", one) == 2


def test_offered_name_is_the_tool_s_own_else_the_one_prefixed_by_an_mcp_client():
    tools = lambda *names: {"tools": [{"type": "function", "function": {"name": n}} for n in names]}  # noqa: E731
    assert offered_name("execute", tools("execute", "mcp__appworld__execute")) == "execute"
    assert offered_name("execute", tools("mcp__appworld__execute", "mcp__appworld__complete_task")) == \
        "mcp__appworld__execute"
    assert offered_name("execute", {"tools": [{"type": "function", "name": "appworld.execute"}]}) == "appworld.execute"
    assert offered_name("execute", tools("reexecute")) == offered_name("execute", None) == "execute"
    with pytest.raises(GoldRequestError, match="several tools"):
        offered_name("execute", tools("a__execute", "b__execute"))


def test_the_appworld_endpoint_calls_the_tools_an_mcp_agent_offers(tmp_path):
    """Codex / Claude Code offer execute and complete_task under their MCP prefix: each solution step
    is a call of the offered execute, counted under that name, then the offered complete_task."""
    from agentrig.bench.appworld.scripted.appworld_endpoint import AppWorldResponder

    (tmp_path / "synthetic.json").write_text('{"tasks": {"t1": {"steps": [["login", "a = 1\\n"], ["act", "b = 2\\n"]]}}}')
    responder = AppWorldResponder(tmp_path)
    tools = [{"type": "function", "function": {"name": f"mcp__appworld__{n}"}} for n in ("execute", "complete_task")]
    messages: list[dict] = [{"role": "user", "content": "the task"}]
    replies = []
    for _ in range(3):
        reply = responder.play("agent", {"model": "appworld-solution", "messages": messages, "tools": tools},
                               {"X-Agentrig-Task": "t1"})
        replies.append([(c["name"], c["arguments"]) for c in reply["tool_calls"]])
        messages.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": "{}"}}
            for c in reply["tool_calls"]]})
    assert replies == [[("mcp__appworld__execute", {"code": "a = 1\n"})], [("mcp__appworld__execute", {"code": "b = 2\n"})],
                       [("mcp__appworld__complete_task", {})]]
    # the code agent offers execute alone: after the steps, complete_task as code, as before
    only = [{"type": "function", "function": {"name": "execute"}}]
    late = [{"role": "assistant", "content": None, "tool_calls": [
        {"id": str(i), "type": "function", "function": {"name": "execute", "arguments": "{}"}}]} for i in range(2)]
    reply = responder.play("agent", {"model": "appworld-solution", "messages": late, "tools": only}, {"X-Agentrig-Task": "t1"})
    assert [(c["name"], c["arguments"]) for c in reply["tool_calls"]] == [("execute", {"code": "apis.supervisor.complete_task()\n"})]
