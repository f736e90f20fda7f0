"""`agentrig doctor` as a user runs it (the console script, real HTTP) against server personalities."""

from __future__ import annotations

import json
from pathlib import Path

from agentrig.testing.fake_endpoint import ThreadedFakeEndpoint
from agentrig.testing.personalities import make_personality

from .conftest import KEY, KEY_ENV
from .test_cli_doctor import agentrig


def experiment(tmp_path: Path, base_url: str, agent_role: str = "") -> Path:
    """A τ²-bench experiment on the built-in bikeshop domain: a native and a text-mode arm."""
    path = tmp_path / "exp.toml"
    path.write_text(f"""
name = "bk"
[benchmark]
domains = ["bikeshop"]
[user]
kind = "scripted"
[judge]
nl_assertions = "never"
[channel]
base_url = "{base_url}"
api_key_env = "{KEY_ENV}"
timeout_s = 10
[roles.agent]
model = "fake-model"
max_tokens = 512
{agent_role}
[[arms]]
name = "native"
[[arms]]
name = "text"
agent = {{ kind = "llm", tool_mode = "text" }}
""")
    return path


def checks_of(stdout: str) -> dict[str, dict]:
    return {c["name"]: c for c in json.loads(stdout)["endpoints"][0]["checks"]}


def test_vllm_without_auto_tool_choice_exit_1_with_the_flags():
    with ThreadedFakeEndpoint(api_key=KEY, personality="vllm-no-auto-tool-choice") as srv:
        p = agentrig("doctor", "--base-url", srv.base_url, "--model", "fake-model", "--api-key-env", KEY_ENV,
                     env_extra={KEY_ENV: KEY})
    assert p.returncode == 1 and "Traceback" not in p.stderr
    out = " ".join(p.stdout.split())  # the console wraps long lines
    assert "AUTO_TOOL_CHOICE_OFF" in out and "--enable-auto-tool-choice --tool-call-parser" in out
    assert "vLLM (recognised by GET /models" in out and KEY not in p.stdout + p.stderr


def test_config_sends_the_experiments_tools_and_compares_the_window(tmp_path):
    endpoint = ThreadedFakeEndpoint(api_key=KEY, personality=make_personality("llama-cpp-overflow", window=3000))
    with endpoint as srv:
        p = agentrig("doctor", "--config", str(experiment(tmp_path, srv.base_url)), "--json",
                     env_extra={KEY_ENV: KEY})
        bodies = [r.json for r in srv.endpoint.requests if r.json and len(r.json.get("tools") or []) > 1]
    assert p.returncode == 0, p.stdout + p.stderr
    checks = checks_of(p.stdout)
    assert checks["tools"]["status"] == "pass" and "18 tools of arm native, domain bikeshop" in checks["tools"]["message"]
    assert bodies[0]["tool_choice"] == "auto" and len(bodies[0]["tools"]) == 18  # bikeshop's agent tools
    w = checks["window"]
    assert (w["status"], w["code"]) == ("warn", "CONTEXT_TOO_SMALL")
    assert "arm native, domain bikeshop" in w["message"] and "+ max_tokens 512" in w["message"]
    assert "3000 tokens (n_ctx in GET /props)" in w["message"] and "-c <tokens>" in w["fix"]
    assert checks["server"]["message"].startswith("llama.cpp")


def test_config_with_tool_choice_omit_on_llama_cpp_python(tmp_path):
    with ThreadedFakeEndpoint(api_key=KEY, personality="llama-cpp-python-chatml") as srv:
        exp = experiment(tmp_path, srv.base_url, 'tool_choice = "omit"')
        p = agentrig("doctor", "--config", str(exp), "--json", env_extra={KEY_ENV: KEY})
    assert p.returncode == 0, p.stdout + p.stderr  # a warning: the run would go on, making no tool calls
    c = checks_of(p.stdout)["tools"]
    assert c["code"] == "NO_TOOL_CALLS" and "no tool_choice" in c["message"] and 'tool_choice = "auto"' in c["fix"]


def test_ollama_truncation_exit_1(tmp_path):
    with ThreadedFakeEndpoint(api_key=None, personality="ollama-small-window") as srv:
        p = agentrig("doctor", "--config", str(experiment(tmp_path, srv.base_url)), "--json",
                     env_extra={KEY_ENV: "ollama"})
    assert p.returncode == 1
    checks = checks_of(p.stdout)
    assert checks["prompt"]["code"] == "PROMPT_TRUNCATED" and "OLLAMA_CONTEXT_LENGTH" in checks["prompt"]["fix"]
    assert checks["window"]["code"] == "CONTEXT_TOO_SMALL" and "GET /api/ps" in checks["window"]["message"]
    # Ollama cuts the first request to its window: the run would keep no trial, so the doctor fails it
    assert checks["window"]["status"] == "fail" and "every such trial would be invalid" in checks["window"]["message"]


def test_a_bad_tool_choice_is_one_clear_error(tmp_path):
    exp = experiment(tmp_path, "http://127.0.0.1:9/v1", 'tool_choice = "sometimes"')
    p = agentrig("doctor", "--config", str(exp))
    assert p.returncode == 1 and "Traceback" not in p.stderr
    assert "tool_choice" in p.stderr and "auto" in p.stderr and str(exp) in p.stderr
