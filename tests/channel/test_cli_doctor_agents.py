"""`agentrig doctor --config` on a terminal experiment whose arms run installed agents (mini-swe-agent,
Codex CLI, Claude Code): each agent really runs once on this host, its first request (as its proxy
forwards it) is sent to the endpoint as it is, and a window too small for it fails with the
server's own flag. The real console script, real agents, real HTTP to the FakeEndpoint."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from agentrig.agents.base import AgentSettings
from agentrig.agents.installed import DEFAULT_VERSIONS, ensure_tool_root
from agentrig.bench.terminal.first_request import agent_env, first_request
from agentrig.channel.doctor.checks import RequestShape
from agentrig.channel.doctor.diagnose import diagnose
from agentrig.testing.fake_endpoint import ThreadedFakeEndpoint
from agentrig.testing.personalities import make_personality

from .conftest import KEY, KEY_ENV, make_config
from .test_cli_doctor import agentrig

ARMS = {"mini": "mini-swe-agent", "codex": "codex", "claude": "claude-code"}


@pytest.fixture(scope="module")
def tool_roots():
    """The three agents installed (once: the cached tool roots are reused)."""
    return {kind: ensure_tool_root(kind) for kind in DEFAULT_VERSIONS}


def experiment(tmp_path: Path, base_url: str) -> Path:
    arms = "".join(f'[[arms]]\nname = "{name}"\nagent = {{ kind = "{kind}" }}\n' for name, kind in ARMS.items())
    path = tmp_path / "exp.toml"
    path.write_text(f"""
name = "agents"
[benchmark]
kind = "terminal"
task_ids = ["write-marker"]
[sandbox]
kind = "bwrap"
[channel]
base_url = "{base_url}"
api_key_env = "{KEY_ENV}"
model = "fake-model"
timeout_s = 20
{arms}""")
    return path


def doctor(tmp_path: Path, personality: str, window: int | None):
    """(the process, its checks by arm for `agent` and `window`, the endpoint's request bodies with tools)."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    extra = {KEY_ENV: KEY, "TMPDIR": str(scratch), "COLUMNS": "200"}
    with ThreadedFakeEndpoint(api_key=KEY, personality=make_personality(personality, window=window)) as srv:
        p = agentrig("doctor", "--config", str(experiment(tmp_path, srv.base_url)), "--json", env_extra=extra,
                     timeout=600)
        bodies = [r.json for r in srv.endpoint.requests if r.json and r.json.get("tools")]
    assert "Traceback" not in p.stderr, p.stderr
    assert KEY not in p.stdout + p.stderr
    # the agents' temporary directories are gone, and none of their processes is left
    assert list(scratch.iterdir()) == []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cwd = os.readlink(f"/proc/{pid}/cwd")
        except OSError:
            continue
        assert not cwd.startswith(str(scratch)), f"process {pid} still runs in {cwd}"
    checks: dict[str, dict] = {}
    for c in json.loads(p.stdout)["endpoints"][0]["checks"]:
        if c["name"] in ("agent", "window"):
            arm = next((a for a in ARMS if f"arm {a}" in c["message"]), "any")
            checks[f"{c['name']} {arm}"] = c
    return p, checks, bodies


def names(body: dict) -> set[str]:
    return {t["function"]["name"] for t in body["tools"]}


def test_a_small_llama_cpp_window_fails_for_codex_and_claude_code_and_names_the_flag(tmp_path, tool_roots):
    p, checks, bodies = doctor(tmp_path, "llama-cpp-overflow", 4096)
    assert p.returncode == 1, p.stdout
    # each agent's own request went to the endpoint: its tools, with their schemas
    mini = next(b for b in bodies if names(b) == {"bash"})
    codex = next(b for b in bodies if "exec_command" in names(b))
    claude = next(b for b in bodies if {"Bash", "Read", "Edit", "Write"} <= names(b))
    bash = next(t["function"] for t in claude["tools"] if t["function"]["name"] == "Bash")
    assert "command" in bash["parameters"]["properties"]
    assert codex["tool_choice"] == "auto" and codex["parallel_tool_calls"] is True  # as Codex sends them
    assert len(json.dumps(claude)) > 30_000 and len(json.dumps(codex)) > 15_000  # their own system prompts
    assert checks["agent mini"]["status"] == "pass" and "called bash" in checks["agent mini"]["message"]
    assert checks["window mini"]["status"] == "pass"
    for arm, label in (("codex", "Codex CLI"), ("claude", "Claude Code")):
        for name in ("agent", "window"):
            c = checks[f"{name} {arm}"]
            assert (c["status"], c["code"]) == ("fail", "CONTEXT_TOO_SMALL"), c
            assert f"too small for {label}" in c["message"] and "4096" in c["message"]
            assert "-c <tokens> (--ctx-size)" in c["fix"]


def test_ollama_cutting_the_prompt_fails_with_its_own_setting(tmp_path, tool_roots):
    p, checks, _ = doctor(tmp_path, "ollama-small-window", 2048)
    assert p.returncode == 1
    c = checks["agent claude"]
    assert (c["status"], c["code"]) == ("fail", "CONTEXT_TOO_SMALL") and "cut the agent's prompt" in c["message"]
    assert "OLLAMA_CONTEXT_LENGTH" in c["fix"] and "num_ctx" in c["fix"]
    assert checks["window codex"]["status"] == "fail" and "would be cut" in checks["window codex"]["message"]


def test_vllm_with_a_max_model_len_too_small_for_claude_code_only(tmp_path, tool_roots):
    p, checks, bodies = doctor(tmp_path, "vllm", 10500)  # Codex's first request ~9,300 tokens, Claude Code's ~12,100
    assert p.returncode == 1
    for arm in ("mini", "codex"):
        assert checks[f"agent {arm}"]["status"] == "pass" and checks[f"window {arm}"]["status"] == "pass"
    c = checks["agent claude"]
    assert (c["status"], c["code"]) == ("fail", "CONTEXT_TOO_SMALL") and "too small for Claude Code" in c["message"]
    assert "--max-model-len" in c["fix"] and "--max-model-len" in checks["window claude"]["fix"]
    claude = next(b for b in bodies if "Bash" in names(b))
    assert claude["tool_choice"] == "auto"  # Claude Code sends none: the role's, as a trial's channel sends it
    assert "the role's \"auto\" sent" in c["message"]


def test_a_big_window_passes_for_every_agent(tmp_path, tool_roots):
    p, checks, bodies = doctor(tmp_path, "llama-cpp-overflow", 65536)
    assert p.returncode == 0, p.stdout
    for arm in ARMS:
        assert checks[f"agent {arm}"]["status"] == "pass", checks[f"agent {arm}"]
        assert checks[f"window {arm}"]["status"] == "pass", checks[f"window {arm}"]
        assert "called" in checks[f"agent {arm}"]["message"]
    assert len(bodies) >= 4  # the tools check, the forced call, and one request per agent


async def test_an_agent_not_installed_is_named_with_the_install_command_and_not_installed(tmp_path, monkeypatch):
    """(The doctor installs an arm's agent when it loads the experiment, as a run does, saying so on
    stderr; the capture itself never installs: it says what to run.)"""
    empty = tmp_path / "agents"
    monkeypatch.setenv("AGENTRIG_AGENTS_DIR", str(empty))
    req = await first_request("codex", AgentSettings(kind="codex"), "fake-model")
    assert req.problem_code == "AGENT_NOT_INSTALLED" and "Codex CLI 0.169.0 is not installed" in req.problem
    assert req.fix.startswith("agentrig agents install codex") and req.messages == [] and not empty.exists()
    shape = RequestShape(where=req.where, first_request_tokens=0, agent=req.agent, problem=req.problem,
                         problem_code=req.problem_code, fix=req.fix)
    with ThreadedFakeEndpoint(api_key=KEY, personality="openai-style") as srv:
        rr = make_config(srv.base_url).resolve("agent", {KEY_ENV: KEY})
        report = await diagnose(rr, ["agent"], {KEY_ENV: KEY}, None, ["codex: agent"], [shape])
    c = next(c for c in report.checks if c.name == "agent")
    assert (c.status, c.code) == ("warn", "AGENT_NOT_INSTALLED") and report.ok
    assert c.fix.startswith("agentrig agents install codex")


def test_the_agents_environment_holds_the_throwaway_token_never_the_key(tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    for kind in ARMS.values():
        home = tmp_path / kind
        home.mkdir()
        env = agent_env(AgentSettings(kind=kind), "m", home, tmp_path, "http://127.0.0.1:9", "agentrig-throwaway")
        assert KEY not in json.dumps(env) and KEY_ENV not in env
        assert env["OPENAI_API_KEY"] == env["ANTHROPIC_API_KEY"] == "agentrig-throwaway"
        assert env["HOME"] == str(home) and all(not v.startswith("/run/agentrig") for v in env.values())
