"""Issue 14 §1 acceptance: every agent kind, the user simulator, the judge and the memory plug-in
play τ² tasks through each wire format (`[channel] wire = "responses" | "anthropic"`), and the
bash agent a terminal task, against the gold- and solution-scripting endpoints (real HTTP on
127.0.0.1, their /v1/responses and /v1/messages routes), through the real `agentrig run`.

The scripted endpoints answer every wire from the same script, so each trial must earn the
reward it earns over chat completions, with every request on the wire's own route."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentrig.cli import app
from agentrig.store.store import Store
from agentrig.testing.fake_endpoint import ThreadedFakeEndpoint
from agentrig.bench.tau.scripted.gold_endpoint import GoldEndpoint
from agentrig.bench.terminal.scripted.solution_endpoint import SolutionEndpoint

KEY = "sk-wire-run-test-9c8b7a6f5e4d3c2b"
KEY_ENV = "AGENTRIG_WIRE_RUN_KEY"
PATH = {"responses": "/v1/responses", "anthropic": "/v1/messages"}
# the user simulator makes tool calls on its phone here (user tools through the wire, roles flipped)
TELECOM_TASK = "[mms_issue]break_app_sms_permission|data_mode_off[PERSONA:None]"


def run(path: Path) -> dict:
    res = CliRunner(env={KEY_ENV: KEY}).invoke(app, ["run", str(path), "--json"])
    assert "Traceback" not in res.output, res.output[-3000:]
    assert res.exit_code == 0, res.output[-3000:]
    return json.loads(res.stdout)


def model_requests(server: ThreadedFakeEndpoint) -> list:
    return [r for r in server.endpoint.requests if r.method == "POST" and not r.path.startswith("/_fake")]


def check_run(doc: dict, server: ThreadedFakeEndpoint, wire: str, arms: tuple[str, ...], planned: int) -> None:
    assert doc["status"] == "done"
    for arm in arms:
        s = doc["arms"][arm]
        assert (s["planned"], s["valid"], s["invalid"]) == (planned, planned, 0), (arm, s)
        assert s["mean_reward"] == 1.0, (arm, s)
    reqs = model_requests(server)
    assert reqs and {r.path for r in reqs} == {PATH[wire]}  # nothing went to /chat/completions
    assert all(r.auth_ok for r in reqs)
    assert not any(KEY in json.dumps(r.json) or KEY in json.dumps(r.headers) for r in reqs)


@pytest.mark.parametrize("wire", list(PATH))
def test_tau2_agents_user_judge_and_memory_through_each_wire(tmp_path, tau2_root, wire):
    with ThreadedFakeEndpoint(GoldEndpoint(tau2_root, api_key=KEY, record=True)) as server:
        text = f"""
        name = "wire-{wire}"
        [benchmark]
        data = "{tau2_root}"
        domains = ["mock", "telecom"]
        [benchmark.task_ids]
        mock = ["create_task_1", "create_task_1_nl_eval"]
        telecom = ["{TELECOM_TASK}"]
        [run]
        trials = 1
        seed = 7
        concurrency = 4
        [user]
        kind = "llm"
        [judge]
        nl_assertions = "auto"
        [channel]
        base_url = "{server.base_url}"
        api_key_env = "{KEY_ENV}"
        wire = "{wire}"
        model = "gold"
        max_attempts = 3
        backoff_base_s = 0.01
        [roles.judge]
        model = "gold"
        [roles.memory]
        model = "gold"
        [[arms]]
        name = "native"
        agent = {{ kind = "llm", tool_mode = "native" }}
        [[arms]]
        name = "memory"
        agent = {{ kind = "llm", tool_mode = "native" }}
        plugins = [{{ kind = "memory", mode = "selective", interval = 1, window = 8, injection = "transient_system" }}]
        """
        path = tmp_path / "exp.toml"
        path.write_text(textwrap.dedent(text), encoding="utf-8")
        doc = run(path)
        check_run(doc, server, wire, ("native", "memory"), 3)
        roles = {r.headers.get("x-agentrig-role") for r in model_requests(server)}
    assert roles == {"agent", "user", "judge", "memory"}
    with Store.open(Path(doc["run_dir"]) / "trials.sqlite", create=False) as store:
        records = list(store.records())
    judged = [r for r in records if r.trajectory and any(c.purpose.startswith("judge") for c in r.trajectory.model_calls)]
    assert judged, "the NL judge was called for the task with NL assertions"
    user_calls = [m for r in records for m in r.trajectory.messages if m.role == "user" and m.tool_calls]
    assert {c.name for m in user_calls for c in m.tool_calls} >= {"grant_app_permission", "toggle_data"}
    calls = [c for r in records for c in r.trajectory.model_calls]
    assert calls and all(c.error is None and c.usage.prompt_tokens > 0 for c in calls)  # usage from the wire


def text_agent(body: dict) -> dict:
    """The τ² text agent's side of mock task create_task_1, in its JSON action format: the gold
    call, then a closing reply (the gold endpoint speaks native tool calls only)."""
    done = any('"action": "create_task"' in (m.get("content") or "") for m in body["messages"] if m["role"] == "assistant")
    if done:
        return {"content": json.dumps({"action": "respond", "content": "The task 'Important Meeting' is created."})}
    return {"content": json.dumps({"action": "create_task", "arguments": {"user_id": "user_1", "title": "Important Meeting"}})}


@pytest.mark.parametrize("wire", list(PATH))
def test_the_text_mode_agent_through_each_wire(tmp_path, tau2_root, wire):
    with ThreadedFakeEndpoint(api_key=KEY, models=("fake-model",), responder=text_agent, record=True) as server:
        text = f"""
        name = "wire-text-{wire}"
        [benchmark]
        data = "{tau2_root}"
        domains = ["mock"]
        task_ids = ["create_task_1"]
        [run]
        trials = 2
        seed = 7
        [user]
        kind = "scripted"
        [channel]
        base_url = "{server.base_url}"
        api_key_env = "{KEY_ENV}"
        wire = "{wire}"
        model = "fake-model"
        [[arms]]
        name = "text"
        agent = {{ kind = "llm", tool_mode = "text" }}
        """
        path = tmp_path / "exp.toml"
        path.write_text(textwrap.dedent(text), encoding="utf-8")
        doc = run(path)
        check_run(doc, server, wire, ("text",), 2)
        assert not any(r.json.get("tools") for r in model_requests(server))  # text mode: no tools parameter


@pytest.mark.skipif(os.geteuid() != 0, reason="the bwrap sandbox enters namespaces with setns: needs root")
@pytest.mark.parametrize("wire", list(PATH))
def test_the_bash_agent_plays_a_terminal_task_through_each_wire(tmp_path, wire):
    with ThreadedFakeEndpoint(SolutionEndpoint(api_key=KEY, record=True, reasoning=True)) as server:
        text = f"""
        name = "wire-bash-{wire}"
        [benchmark]
        kind = "terminal"
        task_ids = ["write-marker"]
        [sandbox]
        cache_dir = "{tmp_path / 'cache'}"
        [run]
        trials = 1
        concurrency = 2
        [channel]
        base_url = "{server.base_url}"
        api_key_env = "{KEY_ENV}"
        wire = "{wire}"
        model = "solution"
        max_attempts = 3
        backoff_base_s = 0.01
        [[arms]]
        name = "native"
        agent = {{ kind = "bash", tool_mode = "native" }}
        [[arms]]
        name = "text"
        agent = {{ kind = "bash", tool_mode = "text" }}
        """
        path = tmp_path / "bash.toml"
        path.write_text(textwrap.dedent(text), encoding="utf-8")
        doc = run(path)
        check_run(doc, server, wire, ("native", "text"), 1)
        later = [r.json for r in model_requests(server)][1:]
    # reasoning came back with each reply and went back with the assistant turns
    if wire == "anthropic":
        assert any(b.get("type") == "thinking" for q in later for t in q["messages"] if t["role"] == "assistant"
                   for b in t["content"])
    else:
        assert any(i.get("type") == "reasoning" for q in later for i in q["input"])
