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


def _ab_experiment(tmp_path, server, candidate_model: str):
    exp = tmp_path / "ab.toml"
    exp.write_text(f"""
name = "ab"
[benchmark]
domains = ["bikeshop"]
[user]
kind = "llm"
[judge]
nl_assertions = "never"
[channel]
base_url = "{server.base_url}"
api_key_env = "{KEY_ENV}"
model = "fake-model-mini"        # the user role inherits it: no [roles.user]
[roles.agent]
model = "fake-model"
[[arms]]
name = "baseline"
[[arms]]
name = "candidate"
roles.agent = {{ model = "{candidate_model}" }}
""")
    return exp


def test_config_probes_every_model_of_every_arm_and_role(server, tmp_path):
    """Issue 23.1: an arm's model override and a role inheriting [channel] model are both probed."""
    p = agentrig("doctor", "--config", str(_ab_experiment(tmp_path, server, "m1-typo")), "--json",
                 env_extra={KEY_ENV: KEY})
    assert p.returncode == 1, p.stdout + p.stderr
    eps = {e["model"]: e for e in json.loads(p.stdout)["endpoints"]}
    assert set(eps) == {"fake-model", "fake-model-mini", "m1-typo"}
    assert eps["m1-typo"]["uses"] == ["candidate: agent"] and eps["m1-typo"]["wire"] == "chat"
    assert any(c["code"] == "MODEL_NOT_FOUND" for c in eps["m1-typo"]["checks"])
    assert eps["fake-model-mini"]["roles"] == ["user"]
    assert sorted(eps["fake-model-mini"]["uses"]) == ["baseline: user", "candidate: user"]
    assert eps["fake-model"]["uses"] == ["baseline: agent"]


def test_config_lists_what_it_checks(server, tmp_path):
    p = agentrig("doctor", "--config", str(_ab_experiment(tmp_path, server, "fake-model")),
                 env_extra={KEY_ENV: KEY, "COLUMNS": "200"})
    assert p.returncode == 0, p.stdout + p.stderr
    assert "2 (endpoint, model, wire) to check" in p.stdout
    assert "used by baseline: agent, candidate: agent" in p.stdout
    assert "used by baseline: user, candidate: user" in p.stdout
