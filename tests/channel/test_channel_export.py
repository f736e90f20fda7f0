"""`agentrig channel export`: each client's file, parsed by that client's format and checked against
the fields its documentation names; the base URL in the form that client appends paths to; no key."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

from agentrig.channel.clients.export import client_base, export_client_file
from agentrig.channel.clients.files import parse_dotenv
from agentrig.config import ChannelConfig, ChannelSettings, RoleConfig

from .conftest import KEY, KEY_ENV

AGENTRIG = str(Path(sys.executable).with_name("agentrig"))
BASE = "https://gw.example/api/v1"


def role(base: str = BASE, model: str = "org/model-7b", **kw):
    cfg = ChannelConfig(channel=ChannelSettings(base_url=base, api_key_env=KEY_ENV, **kw), roles={"agent": RoleConfig(model=model)})
    return cfg.resolve("agent", {})


def agentrig(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, KEY_ENV: KEY}  # the key is in the environment; it must not reach any output
    return subprocess.run([AGENTRIG, *args], capture_output=True, text=True, env=env, timeout=60, cwd=cwd)


@pytest.mark.parametrize(("fmt", "base", "expected"), [
    ("codex", "https://gw.example/api/v1/", "https://gw.example/api/v1"),
    ("env", "http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1"),
    ("mini-swe-agent", "https://gw.example/v1", "https://gw.example/v1"),
    ("claude-code", "https://gw.example/api/v1", "https://gw.example/api"),
    ("claude-code", "https://gw.example/v1/", "https://gw.example"),
    ("claude-code", "https://gw.example/anthropic", "https://gw.example/anthropic"),
])
def test_each_clients_base_url_rule(fmt, base, expected):
    assert client_base(fmt, base) == expected


def test_codex_config_toml_has_the_documented_provider_fields():
    text = export_client_file("codex", role(headers={"X-Team": "evals"}, headers_from_env={"X-Org": "ORG_ID"})).text
    data = tomllib.loads(text)
    assert data["model"] == "org/model-7b"
    provider = data["model_providers"][data["model_provider"]]
    assert provider["base_url"] == BASE  # with /v1: Codex appends /chat/completions or /responses
    assert provider["env_key"] == KEY_ENV  # the variable's NAME
    assert provider["wire_api"] == "responses"  # the only value Codex after 0.94 accepts
    assert provider["http_headers"] == {"X-Team": "evals"} and provider["env_http_headers"] == {"X-Org": "ORG_ID"}
    assert KEY not in text


def test_codex_export_writes_what_current_codex_accepts_and_says_which_version_takes_chat():
    chat = export_client_file("codex", role())  # agentrig reaches this endpoint by chat completions
    assert tomllib.loads(chat.text)["model_providers"]["agentrig"]["wire_api"] == "responses"
    assert "Codex 0.94 or older" in chat.text and 'wire_api = "chat"' in chat.text  # said plainly, commented
    assert "doctor --from codex:" in chat.text
    note = " ".join(chat.notes)
    assert "only value current Codex accepts" in note and f"POST {BASE}/responses" in note and "Codex 0.94 or older" in note
    # the commented alternative sits in the provider's table: uncommented, it replaces wire_api there
    swapped = chat.text.replace('wire_api = "responses"\n# wire_api = "chat"', 'wire_api = "chat"\n#')
    assert tomllib.loads(swapped)["model_providers"]["agentrig"]["wire_api"] == "chat"
    responses = export_client_file("codex", role(), wire="responses")  # a channel that speaks the Responses API
    assert tomllib.loads(responses.text)["model_providers"]["agentrig"]["wire_api"] == "responses"
    assert '"chat"' not in responses.text and not responses.notes


def test_claude_code_settings_json_names_the_variable_and_its_helper_prints_the_key(tmp_path):
    text = export_client_file("claude-code", role()).text
    data = json.loads(text)
    assert data["env"]["ANTHROPIC_BASE_URL"] == "https://gw.example/api"  # the SDK appends /v1/messages
    assert data["env"]["ANTHROPIC_MODEL"] == "org/model-7b"
    assert KEY not in text and f"${KEY_ENV}" in data["apiKeyHelper"]
    # Claude Code runs apiKeyHelper with /bin/sh and sends what it prints: exactly the key, no newline
    out = subprocess.run(["/bin/sh", "-c", data["apiKeyHelper"]], capture_output=True, text=True, env={KEY_ENV: KEY}, check=True)
    assert out.stdout == KEY


def test_mini_swe_agent_yaml_uses_litellms_openai_provider():
    ex = export_client_file("mini-swe-agent", role(headers={"X-Team": "evals"}))
    model = yaml.safe_load(ex.text)["model"]
    assert model["model_name"] == "openai/org/model-7b"  # the provider prefix, then the id as served
    assert model["model_kwargs"] == {"api_base": BASE, "extra_headers": {"X-Team": "evals"}}
    assert "api_key" not in model["model_kwargs"] and KEY not in ex.text
    assert ex.key_command == f'export OPENAI_API_KEY="${KEY_ENV}"'  # litellm reads OPENAI_API_KEY


def test_env_file_as_the_sdk_and_a_shell_read_it(tmp_path):
    ex = export_client_file("env", role())
    pairs = parse_dotenv(ex.text)
    assert pairs["OPENAI_BASE_URL"][0] == BASE and pairs["OPENAI_MODEL"][0] == "org/model-7b"
    assert "OPENAI_API_KEY" not in pairs  # a commented placeholder only, and the command that sets it
    assert "# OPENAI_API_KEY=<your key>" in ex.text and f'export OPENAI_API_KEY="${KEY_ENV}"' in ex.text
    f = tmp_path / ".env"
    f.write_text(ex.text)
    shell = subprocess.run(["bash", "-c", f'set -a; . "{f}"; set +a; python3 -c "import os; print(os.environ[\'OPENAI_BASE_URL\'])"'],
                           capture_output=True, text=True, check=True)
    assert shell.stdout.strip() == BASE


def test_cli_exports_a_roles_channel_from_an_experiment(tmp_path):
    exp = tmp_path / "exp.toml"
    exp.write_text(f'[channel]\nbase_url = "http://127.0.0.1:9/v1/"\napi_key_env = "{KEY_ENV}"\n'
                   '[roles.agent]\nmodel = "agent-m"\n[roles.user]\nmodel = "user-m"\n')
    out = tmp_path / "codex" / "config.toml"
    p = agentrig("channel", "export", "--format", "codex", "--config", str(exp), "--role", "user", "--out", str(out))
    assert p.returncode == 0, p.stderr
    data = tomllib.loads(out.read_text())
    assert data["model"] == "user-m" and data["model_providers"]["agentrig"]["base_url"] == "http://127.0.0.1:9/v1"
    assert f"export {KEY_ENV}=" in p.stderr  # the one command that makes the key reach Codex
    again = agentrig("channel", "export", "--format", "codex", "--config", str(exp), "--out", str(out))
    assert again.returncode == 1 and "--force" in again.stderr and "Traceback" not in again.stderr
    for q in (p, again):
        assert KEY not in q.stdout + q.stderr
    assert KEY not in out.read_text()


@pytest.mark.parametrize(("args", "needle"), [
    (["--format", "cursor", "--base-url", "http://x/v1", "--model", "m"], "unknown --format 'cursor'"),
    (["--format", "codex", "--base-url", "http://x/v1"], "no model for role 'agent'"),
    (["--format", "env", "--base-url", "http://x/v1", "--model", "m", "--api-key-env", "sk-live-abc123"], "NAME of an environment variable"),
    (["--format", "env", "--config", "missing.toml"], "missing.toml: no such file"),
    (["--format", "env", "--model", "m", "--role", "critic"], "unknown --role 'critic'"),
])
def test_bad_export_input_is_one_clear_error(tmp_path, args, needle):
    p = agentrig("channel", "export", *args, cwd=tmp_path)
    assert p.returncode == 1, p.stdout
    assert needle in p.stderr and "Traceback" not in p.stderr
    assert p.stdout == ""
