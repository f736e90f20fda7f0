"""`agentrig doctor --config` on a τ² experiment whose arms run agents we did not write (a Python
agent from examples/python_agents/, Codex CLI, Claude Code): each agent really plays the first step
of the first task on this host against a stub, its first request (as its proxy forwards it: the
domain's tools over MCP or the Python agent's own list) is sent to the endpoint as it is, and a
vLLM ``--max-model-len`` too small for it fails naming the arm and the flag. The real console
script, real agents, real HTTP to the FakeEndpoint."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest

from agentrig.agents.installed import ToolInstallError, ensure_tool_root
from agentrig.bench.tau.cli_agent import CLI_KINDS
from agentrig.testing.fake_endpoint import ThreadedFakeEndpoint
from agentrig.testing.personalities import make_personality

from .conftest import KEY, KEY_ENV
from .test_cli_doctor import agentrig

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "python_agents"
ARMS = {"py": '{ kind = "python", entry = "openai_agent:make", path = ["%s"] }' % EXAMPLES,
        "codex": '{ kind = "codex" }', "claude": '{ kind = "claude-code" }'}
LABELS = {"py": "Python agent openai_agent:make", "codex": "Codex CLI", "claude": "Claude Code"}


@pytest.fixture(scope="module")
def tool_roots():
    try:
        return {kind: ensure_tool_root(kind) for kind in CLI_KINDS}
    except ToolInstallError:
        pytest.skip("Codex and Claude Code cannot be installed here (npm's registry unreachable)")


def experiment(tmp_path: Path, base_url: str, root: Path) -> Path:
    arms = "".join(f'[[arms]]\nname = "{name}"\nagent = {agent}\n' for name, agent in ARMS.items())
    path = tmp_path / "exp.toml"
    path.write_text(f"""
name = "tau-agents"
[benchmark]
data = "{root}"
domains = ["airline"]
task_ids = {{ airline = ["0"] }}
[channel]
base_url = "{base_url}"
api_key_env = "{KEY_ENV}"
model = "fake-model"
timeout_s = 20
{arms}""")
    return path


def doctor(tmp_path: Path, root: Path, window: int):
    """(the process, its checks by arm for `agent` and `window`, the endpoint's request bodies with tools)."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    extra = {KEY_ENV: KEY, "TMPDIR": str(scratch), "COLUMNS": "200"}
    with ThreadedFakeEndpoint(api_key=KEY, personality=make_personality("vllm", window=window)) as srv:
        p = agentrig("doctor", "--config", str(experiment(tmp_path, srv.base_url, root)), "--json", env_extra=extra,
                     timeout=600)
        bodies = [r.json for r in srv.endpoint.requests if r.json and r.json.get("tools")]
    assert "Traceback" not in p.stderr, p.stderr
    assert KEY not in p.stdout + p.stderr
    assert list(scratch.iterdir()) == []  # the agents' homes are gone, and none of their processes is left
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cwd = os.readlink(f"/proc/{pid}/cwd")
        except OSError:
            continue
        assert not cwd.startswith(str(scratch)), f"process {pid} still runs in {cwd}"
    checks: dict[str, dict] = {}
    for c in json.loads(p.stdout)["endpoints"][0]["checks"]:
        if c["name"] in ("agent", "window"):
            arm = next((a for a in ARMS if f"arm {a}," in c["message"]), "any")
            checks[f"{c['name']} {arm}"] = c
    return p, checks, bodies


def names(body: dict) -> set[str]:
    return {t["function"]["name"] for t in body["tools"]}


def test_a_small_vllm_window_fails_for_each_agent_naming_the_arm_and_the_flag(tmp_path, tau2_root, tool_roots):
    p, checks, bodies = doctor(tmp_path, tau2_root, 2048)
    assert p.returncode == 1, p.stdout
    # each agent's own first request went to the endpoint, with the airline domain's tools
    assert sum(1 for b in bodies if "book_reservation" in " ".join(names(b))) >= 3, [sorted(names(b)) for b in bodies]
    for arm, label in LABELS.items():
        c = checks[f"agent {arm}"]
        assert (c["status"], c["code"]) == ("fail", "CONTEXT_TOO_SMALL"), c
        assert f"arm {arm}, domain airline, task 0" in c["message"] and label in c["message"]
        assert "--max-model-len" in c["fix"]


def test_a_big_vllm_window_passes_for_every_agent(tmp_path, tau2_root, tool_roots):
    p, checks, _ = doctor(tmp_path, tau2_root, 65536)
    assert p.returncode == 0, p.stdout
    for arm in ARMS:
        assert checks[f"agent {arm}"]["status"] == "pass", checks[f"agent {arm}"]
        assert checks[f"window {arm}"]["status"] == "pass", checks[f"window {arm}"]


def test_a_python_agent_that_sends_nothing_is_a_warning_and_never_sees_the_key(tmp_path, tau2_root, monkeypatch):
    """Its process runs with agentrig's environment minus the keys the real channel reads (the
    throwaway trial's own stub key is not the one to hide): it writes what it got, then fails."""
    (tmp_path / "silent_agent.py").write_text(
        "import json, os\n\n\ndef make(settings, client, model):\n"
        "    with open(settings['probe'], 'w') as f:\n        json.dump(dict(os.environ), f)\n"
        "    raise RuntimeError('this agent never calls its model')\n")
    probe = tmp_path / "env.json"
    for name in list(ARMS):
        monkeypatch.delitem(ARMS, name)
    monkeypatch.setitem(ARMS, "silent", '{ kind = "python", entry = "silent_agent:make", path = ["%s"], '
                                        'settings = { probe = "%s" } }' % (tmp_path, probe))
    p, checks, _ = doctor(tmp_path, tau2_root, 65536)
    assert p.returncode == 0, p.stdout
    c = checks["agent silent"]
    assert (c["status"], c["code"]) == ("warn", "AGENT_NOT_CHECKED"), c
    assert "arm silent, domain airline, task 0: Python agent silent_agent:make sent no model request" in c["message"] and "agentrig run --smoke" in c["fix"]
    seen = json.loads(probe.read_text())
    assert KEY not in json.dumps(seen) and KEY_ENV not in seen
    assert seen["OPENAI_BASE_URL"].startswith("http://127.0.0.1:")


def test_codex_not_installed_is_named_with_the_install_command_and_not_installed(tmp_path, tau2_root, monkeypatch):
    """The capture never installs (loading the experiment for a run does): it says what to run."""
    from agentrig.bench.tau.first_request import first_request
    from agentrig.run.experiment import load

    monkeypatch.delitem(ARMS, "py")
    monkeypatch.delitem(ARMS, "claude")
    r = load(experiment(tmp_path, "http://127.0.0.1:9/v1", tau2_root))  # (installs into the usual cache)
    empty = tmp_path / "agents"
    monkeypatch.setenv("AGENTRIG_AGENTS_DIR", str(empty))
    arm = next(a for a in r.arms if a.name == "codex")
    req = asyncio.run(first_request(r, r.benchmark, arm))
    assert req.problem_code == "AGENT_NOT_INSTALLED" and req.messages == [] and not empty.exists()
    assert req.problem.startswith("arm codex, domain airline, task 0: Codex CLI") and "is not installed" in req.problem
    assert req.fix.startswith("agentrig agents install codex")
