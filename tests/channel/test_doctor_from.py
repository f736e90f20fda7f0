"""`agentrig doctor --from FORMAT:PATH`: an exported file comes back clean against a real endpoint;
each mistake planted in a client's file is found, named, and fixed in that file's own terms; the key
never shows."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentrig.channel.clients.doctor import doctor_from
from agentrig.channel.clients.export import export_client_file
from agentrig.config import ChannelConfig, ChannelSettings
from agentrig.testing.fake_endpoint import ThreadedFakeEndpoint

from .conftest import KEY, KEY_ENV
from .messages_gateway import MessagesGateway

AGENTRIG = str(Path(sys.executable).with_name("agentrig"))
SUFFIX = {"codex": "config.toml", "claude-code": "settings.json", "mini-swe-agent": "model.yaml", "env": ".env"}


def codes(report, status: str | None = None) -> set[str]:
    return {c.code for c in report.checks if c.code and (status is None or c.status == status)}


def write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_bytes(text.encode())
    return p


async def check(fmt: str, path: Path, env: dict | None = None, **kw):
    return await doctor_from(f"{fmt}:{path}", {KEY_ENV: KEY} if env is None else env, timeout_s=5, **kw)


# ---------------------------------------------------------------------------------- round trip
@pytest.mark.parametrize("fmt", ["codex", "claude-code", "mini-swe-agent", "env"])
async def test_export_then_doctor_from_finds_no_problem(tmp_path, fmt):
    gw = MessagesGateway(api_key=KEY)  # serves /v1/messages too, for Claude Code
    await gw.start()
    try:
        rr = ChannelConfig(channel=ChannelSettings(base_url=gw.base_url, api_key_env=KEY_ENV, model="fake-model")).resolve("agent", {})
        path = write(tmp_path, SUFFIX[fmt], export_client_file(fmt, rr).text)
        env = {KEY_ENV: KEY, "OPENAI_API_KEY": KEY}  # the key command printed for mini-swe-agent and env was run
        report = await check(fmt, path, env)
    finally:
        await gw.stop()
    assert [c for c in report.checks if c.status != "pass"] == [], report.checks
    assert report.endpoint is not None and not [c for c in report.endpoint.checks if c.status == "fail"], report.endpoint.checks
    assert report.ok
    assert {c.name for c in report.endpoint.checks} >= {"key", "models", "model", "chat"}
    if fmt == "claude-code":
        assert gw.messages_calls == 1 and codes(report) == set() and report.checks[-1].name == "wire"
    dumped = report.model_dump_json()
    assert KEY not in dumped and "fingerprint" in dumped


# ------------------------------------------------------------------------- planted mistakes
CODEX = """model = "fake-model"
model_provider = "gw"
[model_providers.gw]
name = "gw"
base_url = "{base}"
env_key = "{var}"
{extra}
"""


def codex(base: str, var: str = KEY_ENV, extra: str = 'wire_api = "chat"') -> str:
    return CODEX.format(base=base, var=var, extra=extra)


async def test_anthropic_key_variable_in_codex(tmp_path, fake):
    path = write(tmp_path, "config.toml", codex(fake.base_url, var="ANTHROPIC_API_KEY"))
    report = await check("codex", path, {"ANTHROPIC_API_KEY": KEY})
    assert "CLIENT_VARS_MISMATCH" in codes(report, "fail") and not report.ok


async def test_openai_variables_in_claude_code(tmp_path, fake):
    path = write(tmp_path, "settings.json", json.dumps({"env": {"OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": KEY,
                                                                 "ANTHROPIC_MODEL": "fake-model"}}))
    report = await check("claude-code", path)
    c = next(c for c in report.checks if c.code == "CLIENT_VARS_MISMATCH")
    assert c.status == "fail" and "api.anthropic.com" in c.message and "ANTHROPIC_BASE_URL" in c.fix


async def test_codex_env_key_absent_from_the_environment(tmp_path, fake):
    path = write(tmp_path, "config.toml", codex(fake.base_url, var="GATEWAY_KEY_NOT_EXPORTED"))
    report = await check("codex", path)
    c = next(c for c in report.checks if c.code == "KEY_NOT_PASSED")
    assert "export GATEWAY_KEY_NOT_EXPORTED=" in c.fix and "docker run -e GATEWAY_KEY_NOT_EXPORTED" in c.fix
    assert not report.ok


async def test_dotenv_key_without_export_does_not_reach_children(tmp_path, fake):
    path = write(tmp_path, ".env", f"OPENAI_BASE_URL={fake.base_url}\nOPENAI_MODEL=fake-model\nOPENAI_API_KEY={KEY}\n")
    report = await check("env", path, {})  # the shell that ran us did not export it
    c = next(c for c in report.checks if c.code == "KEY_NOT_EXPORTED")
    assert c.status == "warn" and "no `export`" in c.message and "set -a" in c.fix
    assert report.ok  # the file's key itself works: the usual checks passed with it
    assert KEY not in report.model_dump_json()


@pytest.fixture
async def chat_only():
    """A fake endpoint that serves chat completions only (no /responses, no /messages)."""
    from agentrig.testing.fake_endpoint import FakeEndpoint

    ep = FakeEndpoint(api_key=KEY, wires=())
    await ep.start()
    yield ep
    await ep.stop()


@pytest.mark.parametrize("wire_line", ['wire_api = "responses"', ""])  # "" = Codex's default, responses
async def test_codex_wire_api_the_endpoint_does_not_serve(tmp_path, chat_only, wire_line):
    path = write(tmp_path, "config.toml", codex(chat_only.base_url, extra=wire_line))
    report = await check("codex", path)
    c = next(c for c in report.checks if c.code == "WIRE_API_UNSERVED")
    assert "/responses answered 404" in c.message and 'wire = "chat"' in c.message
    assert report.endpoint is not None and report.endpoint.ok  # chat completions work: only the wire is wrong
    assert not report.ok


async def test_placeholder_key_in_dotenv(tmp_path, fake):
    path = write(tmp_path, ".env", f"export OPENAI_BASE_URL={fake.base_url}\nexport OPENAI_MODEL=fake-model\n"
                                   "export OPENAI_API_KEY=your-api-key-here\n")
    report = await check("env", path)
    c = next(c for c in report.checks if c.code == "KEY_MALFORMED")
    assert "placeholder" in c.message and not report.ok


@pytest.mark.parametrize("model", ["/data/ckpt/checkpoint-1200", "./qwen2.5-7b-instruct-q4_k_m.gguf"])
async def test_model_id_that_is_a_local_path(tmp_path, fake, model):
    path = write(tmp_path, "mini.yaml", f"model:\n  model_name: openai/{model}\n  model_kwargs:\n    api_base: {fake.base_url}\n")
    report = await check("mini-swe-agent", path, {"OPENAI_API_KEY": KEY})
    c = next(c for c in report.checks if c.code == "MODEL_LOOKS_LOCAL")
    assert model in c.message and "--served-model-name" in c.fix
    assert not report.ok


async def test_doubled_v1_in_codex(tmp_path, fake):
    path = write(tmp_path, "config.toml", codex(fake.base_url + "/v1"))
    report = await check("codex", path)
    c = next(c for c in report.checks if c.code == "BASE_URL_DOUBLED_V1")
    assert c.fix == f'[model_providers.gw] base_url = "{fake.base_url}"'


async def test_missing_v1_in_dotenv_is_found_by_probing(tmp_path, fake):
    path = write(tmp_path, ".env", f"OPENAI_BASE_URL={fake.root_url}\nOPENAI_MODEL=fake-model\n")
    report = await check("env", path, {"OPENAI_API_KEY": KEY})
    c = next(c for c in report.checks if c.code == "BASE_URL_NO_V1")
    assert c.fix == f'in {path}: OPENAI_BASE_URL = "{fake.base_url}"'


async def test_v1_in_claude_codes_base_url(tmp_path, fake):
    path = write(tmp_path, "settings.json", json.dumps({"apiKeyHelper": f"echo ${KEY_ENV}",
                                                         "env": {"ANTHROPIC_BASE_URL": fake.base_url, "ANTHROPIC_MODEL": "fake-model"}}))
    report = await check("claude-code", path)
    c = next(c for c in report.checks if c.code == "BASE_URL_DOUBLED_V1")
    assert "/v1/v1/messages" not in c.fix and c.fix == f'env.ANTHROPIC_BASE_URL = "{fake.root_url}"'


@pytest.mark.parametrize(("fmt", "name", "text"), [
    ("claude-code", "settings.json", json.dumps({"env": {"ANTHROPIC_BASE_URL": "http://127.0.0.1:9", "ANTHROPIC_MODEL": "m",
                                                          "ANTHROPIC_AUTH_TOKEN": KEY + "\n"}})),
    ("env", ".env", f'OPENAI_BASE_URL=http://127.0.0.1:9/v1\nOPENAI_MODEL=m\nOPENAI_API_KEY="{KEY} "\n'),
])
async def test_key_with_trailing_whitespace(tmp_path, fmt, name, text):
    report = await check(fmt, write(tmp_path, name, text))
    c = next(c for c in report.checks if c.code == "KEY_MALFORMED")
    assert ("newline" if fmt == "claude-code" else "spaces") in c.message
    assert KEY not in report.model_dump_json()


async def test_crlf_dotenv(tmp_path, fake):
    path = write(tmp_path, ".env", f"OPENAI_BASE_URL={fake.base_url}\r\nOPENAI_MODEL=fake-model\r\nOPENAI_API_KEY={KEY}\r\n")
    report = await check("env", path, {"OPENAI_API_KEY": KEY})
    c = next(c for c in report.checks if c.code == "KEY_MALFORMED")
    assert "Windows line endings" in c.message and "sed -i" in c.fix
    assert report.endpoint is not None and report.endpoint.ok  # python-dotenv itself reads the key fine


async def test_key_pasted_into_codex_env_key(tmp_path, fake):
    path = write(tmp_path, "config.toml", codex(fake.base_url, var=KEY))  # "sk-fake-…": a key, not a name
    report = await check("codex", path)
    assert "KEY_NOT_A_NAME" in codes(report, "fail") and report.endpoint is None
    assert KEY not in report.model_dump_json()


async def test_litellm_model_without_provider_prefix(tmp_path, fake):
    path = write(tmp_path, "mini.yaml", f"model:\n  model_name: fake-model\n  model_kwargs:\n    api_base: {fake.base_url}\n")
    report = await check("mini-swe-agent", path, {"OPENAI_API_KEY": KEY})
    c = next(c for c in report.checks if c.code == "MODEL_NO_PREFIX")
    assert c.fix == "write model.model_name: openai/fake-model"


async def test_claude_code_key_helper_that_runs_a_command_is_not_run(tmp_path, fake):
    marker = tmp_path / "ran"
    path = write(tmp_path, "settings.json", json.dumps({"apiKeyHelper": f"touch {marker}; printf %s ${KEY_ENV}",
                                                         "env": {"ANTHROPIC_BASE_URL": fake.root_url, "ANTHROPIC_MODEL": "fake-model"}}))
    report = await check("claude-code", path)
    assert not marker.exists()  # agentrig never runs a command from a client's file
    assert any("does not run" in n for n in report.file.notes) and "KEY_NOT_PASSED" not in codes(report)


async def test_codex_provider_table_missing(tmp_path):
    path = write(tmp_path, "config.toml", 'model = "m"\nmodel_provider = "gateway"\n')
    report = await check("codex", path)
    assert "PROVIDER_MISSING" in codes(report, "fail") and not report.ok


# ------------------------------------------------------------------------------ the command
def agentrig(*args: str, env_extra: dict | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_PROXY") and k not in (KEY_ENV, "OPENAI_API_KEY")}
    env.update(env_extra or {})
    return subprocess.run([AGENTRIG, *args], capture_output=True, text=True, env=env, timeout=90)


@pytest.mark.parametrize(("spec", "needle"), [
    ("cursor:settings.json", "expected FORMAT:PATH"),
    ("codex", "expected FORMAT:PATH"),
    ("codex:/nonexistent/config.toml", "/nonexistent/config.toml: no such file"),
    ("codex:{bad_toml}", "not valid TOML"),
    ("claude-code:{bad_json}", "not valid JSON"),
    ("mini-swe-agent:{no_model}", "no `model:` section"),
])
def test_bad_path_or_format_is_one_clear_error(tmp_path, spec, needle):
    files = {"bad_toml": write(tmp_path, "c.toml", "model = \n"), "bad_json": write(tmp_path, "s.json", "{env: 1}"),
             "no_model": write(tmp_path, "m.yaml", "agent:\n  step_limit: 3\n")}
    p = agentrig("doctor", "--from", spec.format(**files))
    assert p.returncode == 1 and needle in p.stderr, p.stderr
    assert "Traceback" not in p.stderr


def test_no_key_in_any_output(tmp_path):
    with ThreadedFakeEndpoint(api_key=KEY) as srv:
        files = {
            "codex": write(tmp_path, "config.toml", codex(srv.base_url + "/v1", extra='wire_api = "responses"')),
            "claude-code": write(tmp_path, "settings.json", json.dumps({"env": {"ANTHROPIC_BASE_URL": srv.base_url, "ANTHROPIC_MODEL": "fake-model",
                                                                                "ANTHROPIC_AUTH_TOKEN": KEY + "\n", "OPENAI_API_KEY": KEY}})),
            "mini-swe-agent": write(tmp_path, "mini.yaml", f"model:\n  model_name: openai/fake-model\n  model_kwargs:\n    api_base: {srv.base_url}\n"
                                                           f"    api_key: {KEY}\n"),
            "env": write(tmp_path, ".env", f"OPENAI_BASE_URL={srv.root_url}\nOPENAI_API_KEY={KEY}\nANTHROPIC_API_KEY={KEY}\n"),
        }
        outputs = []
        for fmt, path in files.items():
            for extra in ([], ["--json"]):
                p = agentrig("doctor", "--from", f"{fmt}:{path}", "--model", "fake-model", *extra, env_extra={KEY_ENV: KEY})
                assert p.returncode in (0, 1) and "Traceback" not in p.stderr, p.stderr
                outputs.append(p.stdout + p.stderr)
        pasted = agentrig("doctor", "--from", f"codex:{write(tmp_path, 'pasted.toml', codex(srv.base_url, var=KEY))}")
        outputs.append(pasted.stdout + pasted.stderr)
    assert all(KEY not in o and KEY[:12] not in o for o in outputs)
    assert "fingerprint" in outputs[0] and "CLIENT_VARS_MISMATCH" in outputs[-2]


async def test_a_codex_file_with_wire_api_chat_says_which_codex_takes_it(tmp_path, fake):
    path = write(tmp_path, "config.toml", codex(fake.base_url))  # wire_api = "chat"
    report = await check("codex", path)
    assert any("Codex 0.94 and older take wire_api = \"chat\"" in n for n in report.file.notes)
