"""The role's `tool_choice` in a real run: `agentrig run` against llama-cpp-python's behaviour
(chatml-function-calling shows the model its tools only when the request carries a tool_choice)
and vLLM's (without --enable-auto-tool-choice, "auto" is refused)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentrig.cli import app
from agentrig.testing.fake_endpoint import ThreadedFakeEndpoint

KEY = "sk-tool-choice-run-0123456789abcd"
KEY_ENV = "AGENTRIG_TOOL_CHOICE_KEY"


def experiment(tmp_path: Path, base_url: str, tool_choice: str | None) -> Path:
    setting = f'tool_choice = "{tool_choice}"' if tool_choice else ""
    path = tmp_path / "exp.toml"
    path.write_text(textwrap.dedent(f"""
        name = "tc"
        [benchmark]
        domains = ["bikeshop"]
        task_ids = ["rent_city_bike"]
        [run]
        trials = 1
        max_steps = 12
        [user]
        kind = "scripted"
        [judge]
        nl_assertions = "never"
        [channel]
        base_url = "{base_url}"
        api_key_env = "{KEY_ENV}"
        max_attempts = 1
        timeout_s = 10
        [roles.agent]
        model = "fake-model"
        {setting}
        [[arms]]
        name = "llm"
        """), encoding="utf-8")
    return path


def run(tmp_path: Path, personality: str, tool_choice: str | None):
    with ThreadedFakeEndpoint(api_key=KEY, personality=personality) as srv:
        res = CliRunner(env={KEY_ENV: KEY}).invoke(app, ["run", str(experiment(tmp_path, srv.base_url, tool_choice)),
                                                         "--json"])
        agent = [r.json for r in srv.endpoint.requests
                 if r.path.endswith("/chat/completions") and r.headers.get("x-agentrig-role") == "agent"]
    return res, agent


@pytest.mark.parametrize("tool_choice, sent", [(None, "auto"), ("auto", "auto"), ("required", "required")])
def test_auto_is_sent_explicitly_and_the_agent_calls_tools(tmp_path, tool_choice, sent):
    personality = "llama-cpp-python-chatml" if tool_choice != "required" else "vllm-no-auto-tool-choice"
    res, agent = run(tmp_path, personality, tool_choice)
    assert res.exit_code == 0, res.output
    assert agent and all(b["tool_choice"] == sent and b["tools"] for b in agent)
    # the model called tools: their results come back in the agent's later requests
    assert any(m.get("role") == "tool" for b in agent for m in b["messages"])
    # the tool-call turns go back with a string content: llama-cpp-python answers null with a 500
    assert all(isinstance(m.get("content"), str) for b in agent for m in b["messages"] if m.get("role") == "assistant")
    doc = json.loads(res.stdout)
    assert doc["arms"]["llm"]["valid"] == 1


def test_omit_on_llama_cpp_python_means_no_tool_calls(tmp_path):
    res, agent = run(tmp_path, "llama-cpp-python-chatml", "omit")
    assert res.exit_code == 0, res.output
    assert agent and all("tool_choice" not in b and b["tools"] for b in agent)
    assert not any(m.get("role") == "tool" for b in agent for m in b["messages"])  # the model never saw its tools


def test_auto_on_vllm_without_the_flags_stops_the_run(tmp_path):
    res, agent = run(tmp_path, "vllm-no-auto-tool-choice", "auto")
    assert res.exit_code == 1 and len(agent) == 1  # a 400 is fatal: not retried, the run stops
    assert "--enable-auto-tool-choice" in " ".join(res.output.split())
