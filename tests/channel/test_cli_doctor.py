"""`agentrig doctor` as a user runs it: the real console script in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentrig.testing.fake_endpoint import ThreadedFakeEndpoint

from .conftest import KEY, KEY_ENV

AGENTRIG = str(Path(sys.executable).with_name("agentrig"))


def agentrig(*args: str, env_extra: dict | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_PROXY") and k != KEY_ENV}
    env.update(env_extra or {})
    return subprocess.run([AGENTRIG, *args], capture_output=True, text=True, env=env, timeout=timeout)


@pytest.fixture(scope="module")
def server():
    with ThreadedFakeEndpoint(api_key=KEY, personality="openai-style") as srv:  # its model calls tools on "auto"
        yield srv


def test_healthy_json_exit_0(server):
    p = agentrig("doctor", "--base-url", server.base_url, "--model", "fake-model", "--api-key-env", KEY_ENV, "--json",
                 env_extra={KEY_ENV: KEY})
    assert p.returncode == 0, p.stderr
    report = json.loads(p.stdout)
    assert report["ok"] is True and len(report["endpoints"]) == 1
    ep = report["endpoints"][0]
    assert set(ep) >= {"base_url", "model", "roles", "checks"}
    for c in ep["checks"]:
        assert set(c) >= {"name", "status", "code", "message", "fix", "latency_ms"} and c["status"] == "pass"
    assert KEY not in p.stdout + p.stderr


def test_doubled_v1_exit_1_names_working_url(server):
    p = agentrig("doctor", "--base-url", server.base_url + "/v1", "--model", "fake-model", "--api-key-env", KEY_ENV,
                 env_extra={KEY_ENV: KEY})
    assert p.returncode == 1
    assert "BASE_URL_PATH" in p.stdout and f'base_url = "{server.base_url}"' in p.stdout
    assert "Traceback" not in p.stderr


def test_config_checks_every_distinct_endpoint_and_model(server, tmp_path):
    exp = tmp_path / "exp.toml"
    exp.write_text(f"""
[channel]
base_url = "{server.base_url}"
api_key_env = "{KEY_ENV}"

[roles.agent]
model = "fake-model"
[roles.user]
model = "fake-model-mini"
[roles.judge]
model = "fake-model"
""")
    p = agentrig("doctor", "--config", str(exp), "--json", env_extra={KEY_ENV: KEY})
    assert p.returncode == 0, p.stdout + p.stderr
    eps = json.loads(p.stdout)["endpoints"]
    assert sorted((e["model"], tuple(e["roles"])) for e in eps) == [("fake-model", ("agent", "judge")), ("fake-model-mini", ("user",))]


def test_bad_config_is_one_clear_error(tmp_path):
    exp = tmp_path / "exp.toml"
    exp.write_text('[channel]\nbase_ur1 = "http://x/v1"\n')
    p = agentrig("doctor", "--config", str(exp))
    assert p.returncode == 1 and "Traceback" not in p.stderr
    assert str(exp) in p.stderr and "channel.base_ur1" in p.stderr


def test_missing_key_human_output(server):
    p = agentrig("doctor", "--base-url", server.base_url, "--model", "fake-model", "--api-key-env", KEY_ENV)
    assert p.returncode == 1 and "KEY_MISSING" in p.stdout and f"export {KEY_ENV}=" in p.stdout
