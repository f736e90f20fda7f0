"""What `agentrig doctor` prints, as a user reads it (the real console script against a real local
endpoint): no ``model None``; piped output keeps each check's message on one line (no hard wrap
at 80 columns); an endpoint only one arm uses names that arm's tools; the AppWorld check marks a
failure ``✗`` like every other check; the smoke check's role column always has a space after it."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from agentrig.testing.fake_endpoint import ThreadedFakeEndpoint

from .conftest import KEY, KEY_ENV

AGENTRIG = str(Path(sys.executable).with_name("agentrig"))


def agentrig(*args: str, env_extra: dict | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_PROXY") and k not in (KEY_ENV, "COLUMNS")}
    env.update(env_extra or {})
    return subprocess.run([AGENTRIG, *args], capture_output=True, text=True, env=env, timeout=120)


@pytest.fixture(scope="module")
def server():
    with ThreadedFakeEndpoint(api_key=KEY, personality="openai-style") as srv:
        yield srv


def test_no_model_is_not_printed_as_none(server):
    p = agentrig("doctor", "--base-url", server.base_url, "--api-key-env", KEY_ENV, env_extra={KEY_ENV: KEY})
    assert p.returncode == 1, p.stdout + p.stderr
    assert "None" not in p.stdout, p.stdout
    assert "model (none given)" in p.stdout and "no model is configured" in p.stdout


def test_piped_output_keeps_each_message_on_one_line(server):
    args = ("doctor", "--base-url", server.base_url, "--model", "fake-model", "--api-key-env", KEY_ENV)
    report = json.loads(agentrig(*args, "--json", env_extra={KEY_ENV: KEY}).stdout)
    messages = [c["message"] for c in report["endpoints"][0]["checks"]]
    assert max(len(m) for m in messages) > 80  # something a hard wrap at 80 columns would break
    p = agentrig(*args, env_extra={KEY_ENV: KEY})  # stdout is a pipe, no $COLUMNS
    assert p.returncode == 0, p.stdout + p.stderr
    lines = p.stdout.splitlines()
    for m in messages:
        assert any(m in line for line in lines), (m, p.stdout)


def test_an_arm_only_model_names_its_own_arm(server, tmp_path):
    exp = tmp_path / "ab.toml"
    exp.write_text(f"""
name = "ab"
[benchmark]
domains = ["bikeshop"]
[user]
kind = "scripted"
[judge]
nl_assertions = "never"
[channel]
base_url = "{server.base_url}"
api_key_env = "{KEY_ENV}"
[roles.agent]
model = "fake-model"
[[arms]]
name = "baseline"
[[arms]]
name = "candidate"
roles.agent = {{ model = "fake-model-mini" }}
""")
    p = agentrig("doctor", "--config", str(exp), "--json", env_extra={KEY_ENV: KEY})
    assert p.returncode == 0, p.stdout + p.stderr
    eps = {e["model"]: e for e in json.loads(p.stdout)["endpoints"]}
    assert eps["fake-model-mini"]["uses"] == ["candidate: agent"]
    tools = {m: next(c["message"] for c in e["checks"] if c["name"] == "tools") for m, e in eps.items()}
    assert "of arm candidate," in tools["fake-model-mini"] and "baseline" not in tools["fake-model-mini"], tools
    assert "of arm baseline," in tools["fake-model"] and "candidate" not in tools["fake-model"], tools


def test_appworld_doctor_marks_like_the_others(tmp_path):
    p = agentrig("doctor", "--bench", "appworld", env_extra={"APPWORLD_ROOT": str(tmp_path / "no-data")})
    assert p.returncode == 1, p.stdout + p.stderr
    assert "FAIL" not in p.stdout and "ok  " not in p.stdout
    assert "✗ data" in p.stdout and ("✓ environment" in p.stdout or "✗ environment" in p.stdout), p.stdout


def test_smoke_roles_are_spaced_from_their_error_code():
    from agentrig.commands.run import print_smoke
    from agentrig.run.smoke import ArmSmoke, RoleCheck, SmokeReport

    arm = ArmSmoke("a", "bikeshop/x", valid=True, reward=1.0, termination="agent_stop",
                   roles=[RoleCheck("analyst", "fail", "the endpoint refused it", "BAD_REQUEST", "look"),
                          RoleCheck("agent", "fail", "no", "TIMEOUT")])
    buf = io.StringIO()
    print_smoke(Console(file=buf, width=200, color_system=None), SmokeReport(Path("s"), [arm]))
    text = buf.getvalue()
    assert "✗ analyst BAD_REQUEST: the endpoint refused it" in text, text
    assert "analystBAD_REQUEST" not in text
