"""The doctor against real servers' personalities: it sends what the agent sends, names the
server, and checks the context window (over real HTTP on 127.0.0.1)."""

from __future__ import annotations

import pytest

from agentrig.channel.client import build_params
from agentrig.channel.doctor.diagnose import diagnose
from agentrig.channel.doctor.checks import REPRESENTATIVE_TOOLS, RequestShape
from agentrig.config import ChannelConfig, ChannelSettings
from agentrig.testing.fake_endpoint import FakeEndpoint
from agentrig.testing.personalities import make_personality

from .conftest import KEY, KEY_ENV


def role(base_url: str, **settings):
    return ChannelConfig(channel=ChannelSettings(base_url=base_url, api_key_env=KEY_ENV, model="fake-model",
                                                 timeout_s=5, **settings)).resolve("agent", env={})


async def doctor(personality, shape=None, window=None, **settings):
    async with FakeEndpoint(api_key=KEY, personality=make_personality(personality, window)) as fake:
        report = await diagnose(role(fake.base_url, **settings), ["agent"], {KEY_ENV: KEY}, shape)
        agent_bodies = [r.json for r in fake.requests if r.path.endswith("/chat/completions") and r.json
                        and len(r.json.get("tools") or []) > 1]
    return {c.name: c for c in report.checks}, report, agent_bodies


def test_build_params_sends_the_roles_tool_choice_whenever_tools_are_sent():
    tools = REPRESENTATIVE_TOOLS[:2]
    msgs = [{"role": "user", "content": "hi"}]
    assert build_params(role("http://x/v1"), msgs, tools)["tool_choice"] == "auto"  # the default, explicit
    assert build_params(role("http://x/v1", tool_choice="required"), msgs, tools)["tool_choice"] == "required"
    assert "tool_choice" not in build_params(role("http://x/v1", tool_choice="omit"), msgs, tools)
    assert "tool_choice" not in build_params(role("http://x/v1"), msgs, None)  # no tools, no tool_choice
    forced = {"type": "function", "function": {"name": "calculate"}}
    assert build_params(role("http://x/v1", tool_choice="omit"), msgs, tools, forced)["tool_choice"] == forced


async def test_vllm_without_auto_tool_choice_fails_while_the_forced_call_works():
    checks, report, bodies = await doctor("vllm-no-auto-tool-choice")
    assert not report.ok
    c = checks["tools"]
    assert (c.status, c.code) == ("fail", "AUTO_TOOL_CHOICE_OFF")
    assert "--enable-auto-tool-choice" in c.message and "vLLM" in c.message
    assert "--enable-auto-tool-choice --tool-call-parser" in c.fix
    assert checks["forced"].status == "pass"  # the old check alone would have passed
    assert checks["server"].message.startswith("vLLM") and "8192" in checks["server"].message
    # the doctor sent the agent's shape: tool_choice "auto" and a tool list as large as a τ² domain's
    assert bodies and bodies[0]["tool_choice"] == "auto" and len(bodies[0]["tools"]) == len(REPRESENTATIVE_TOOLS)


async def test_vllm_with_its_flags_passes():
    checks, report, _ = await doctor("vllm")
    assert report.ok and checks["tools"].status == "pass" and "called" in checks["tools"].message


async def test_llama_cpp_python_without_tool_choice_makes_no_tool_calls():
    checks, report, bodies = await doctor("llama-cpp-python-chatml", tool_choice="omit")
    c = checks["tools"]
    assert (c.status, c.code) == ("warn", "NO_TOOL_CALLS") and report.ok
    assert "no tool_choice" in c.message and 'tool_choice = "auto"' in c.fix and "chatml-function-calling" in c.fix
    assert checks["forced"].status == "pass"  # what the doctor said before issue 17
    assert checks["server"].message.startswith("llama-cpp-python")
    assert len(bodies) == 3 and all("tool_choice" not in b for b in bodies)  # three tries, as the agent sends


async def test_llama_cpp_python_honours_auto_and_refuses_required():
    checks, _, _ = await doctor("llama-cpp-python-chatml")
    assert checks["tools"].status == "pass"
    checks, report, _ = await doctor("llama-cpp-python-chatml", tool_choice="required")
    c = checks["tools"]
    assert c.status == "fail" and not report.ok and 'tool_choice = "auto"' in c.fix


async def test_a_model_that_calls_tools_only_when_forced():
    checks, report, _ = await doctor("forced-tools-only")
    c = checks["tools"]
    assert (c.status, c.code) == ("warn", "NO_TOOL_CALLS") and 'tool_mode = "text"' in c.fix
    assert checks["forced"].status == "pass" and checks["server"].message.startswith("an OpenAI-compatible")


async def test_llama_cpp_without_jinja_names_the_flag():
    checks, report, _ = await doctor("llama-cpp-no-jinja")
    c = checks["tools"]
    assert (c.status, c.code) == ("fail", "NO_TOOL_SUPPORT") and "--jinja" in c.fix
    assert checks["server"].message.startswith("llama.cpp")


async def test_ollama_small_window_is_prompt_truncated():
    checks, report, _ = await doctor("ollama-small-window")
    c = checks["prompt"]
    assert (c.status, c.code) == ("fail", "PROMPT_TRUNCATED") and not report.ok
    assert "2048, a round number" in c.message and "window is 2048 tokens" in c.message
    assert "OLLAMA_CONTEXT_LENGTH" in c.fix and "num_ctx" in c.fix
    s = checks["server"].message
    assert s.startswith("Ollama 0.6.2") and "api/version" in s and "window 2048" in s


async def test_ollama_behind_a_gateway_is_prompt_truncated_from_usage_alone():
    """No route tells the server or its window; the counts alone show the cut (the rule the run
    uses too: channel/servers.py's stopped_growing)."""
    checks, report, _ = await doctor("ollama-behind-gateway")
    c = checks["prompt"]
    assert (c.status, c.code) == ("fail", "PROMPT_TRUNCATED") and not report.ok
    assert "2048, a round number" in c.message and "window is" not in c.message
    assert checks["server"].message.startswith("an OpenAI-compatible server (not one agentrig recognises")


@pytest.mark.parametrize("name", ["llama-cpp-overflow", "llama-cpp-overflow-old"])
async def test_llama_cpp_window_from_props_and_context_too_small(name):
    shape = RequestShape(where="arm a, domain retail", tools=[], first_request_tokens=3000, max_tokens=1500)
    checks, report, _ = await doctor(name, shape=shape, window=4096)
    c = checks["window"]
    assert (c.status, c.code) == ("warn", "CONTEXT_TOO_SMALL") and report.ok
    assert "~4500 tokens" in c.message and "4096" in c.message and "n_ctx in GET /props" in c.message
    assert "-c <tokens>" in c.fix and "4500" in c.fix
    assert checks["prompt"].status == "pass" and "refused" in checks["prompt"].message  # an overflow, not a cut
    small = RequestShape(where="arm a, domain mock", first_request_tokens=1000)
    checks, _, _ = await doctor(name, shape=small, window=4096)
    assert checks["window"].status == "pass" and "fits the 4096-token window" in checks["window"].message


async def test_vllm_window_from_the_model_list():
    shape = RequestShape(where="arm a, domain airline", first_request_tokens=7000, max_tokens=2000)
    checks, _, _ = await doctor("vllm", shape=shape)
    c = checks["window"]
    assert c.code == "CONTEXT_TOO_SMALL" and "max_model_len" in c.message and "--max-model-len" in c.fix


async def test_the_experiments_tools_are_sent():
    tools = REPRESENTATIVE_TOOLS[3:6]
    shape = RequestShape(where="w", tools=tools, tools_where="arm b, domain retail", first_request_tokens=100)
    checks, _, bodies = await doctor("vllm", shape=shape)
    assert "3 tools of arm b, domain retail" in checks["tools"].message
    assert [t["function"]["name"] for t in bodies[0]["tools"]] == [t["function"]["name"] for t in tools]


async def test_every_role_sends_its_own_tool_choice_through_the_channel():
    """The agents, the memory plug-in and a user simulator with tools all call Channel.complete."""
    from agentrig.channel.client import Channel
    from agentrig.config import RoleConfig

    async with FakeEndpoint(api_key=KEY, personality="llama-cpp-python-chatml") as fake:
        cfg = ChannelConfig(channel=ChannelSettings(base_url=fake.base_url, api_key_env=KEY_ENV, model="fake-model",
                                                    timeout_s=5),
                            roles={"agent": RoleConfig(), "user": RoleConfig(tool_choice="omit"),
                                   "judge": RoleConfig()})
        channel = Channel(cfg, env={KEY_ENV: KEY})
        tools = REPRESENTATIVE_TOOLS[:3]
        msgs = [{"role": "user", "content": "please use get_user_details"}]
        try:
            agent = await channel.complete("agent", msgs, tools)
            user = await channel.complete("user", msgs, tools)
            await channel.complete("judge", msgs)
        finally:
            await channel.aclose()
        sent = {r.headers.get("x-agentrig-role"): r.json for r in fake.requests if r.json}
    assert sent["agent"]["tool_choice"] == "auto" and [c.name for c in agent.message.tool_calls] == ["get_user_details"]
    assert "tool_choice" not in sent["user"] and not user.message.tool_calls  # the server hid the tools
    assert "tool_choice" not in sent["judge"] and "tools" not in sent["judge"]
