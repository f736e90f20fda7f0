"""Each doctor code from the matching fault, against a real local server."""

from __future__ import annotations

import socket

import pytest

from agentrig.channel.doctor.diagnose import diagnose, path_candidates
from agentrig.config import ChannelConfig, ChannelSettings
from agentrig.testing.fake_endpoint import Fault, FakeEndpoint

from .conftest import KEY, KEY_ENV


def rr(base_url: str, model: str = "fake-model", timeout_s: float = 3.0):
    return ChannelConfig(channel=ChannelSettings(base_url=base_url, api_key_env=KEY_ENV, model=model,
                                                 timeout_s=timeout_s)).resolve("agent", env={})


async def run(base_url: str, env=None, **kw):
    return await diagnose(rr(base_url, **kw), ["agent"], {KEY_ENV: KEY} if env is None else env)


def by_name(report):
    return {c.name: c for c in report.checks}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def test_healthy_endpoint_passes_every_check():
    async with FakeEndpoint(api_key=KEY, personality="openai-style") as fake:  # its model calls tools on "auto"
        report = await run(fake.base_url)
    assert [c.name for c in report.checks] == ["key", "base_url", "network", "models", "model", "chat", "server",
                                               "tools", "forced", "prompt", "window"]
    assert all(c.status == "pass" for c in report.checks), report.checks
    assert report.ok and report.skipped == []
    assert all(c.latency_ms is not None for c in report.checks
               if c.name in ("network", "models", "chat", "tools", "forced", "prompt"))
    key = by_name(report)["key"]
    assert f"{len(KEY)} characters" in key.message and KEY_ENV in key.message


async def test_key_missing(fake):
    report = await run(fake.base_url, env={})
    c = by_name(report)["key"]
    assert (c.status, c.code) == ("fail", "KEY_MISSING") and KEY_ENV in c.fix
    assert not report.ok and "models" not in by_name(report) and any(s.startswith("models") for s in report.skipped)


@pytest.mark.parametrize("value", [" " + KEY, KEY + "\n", f'"{KEY}"', "YOUR_API_KEY", "<your-key>", "sk-xxxxxxxxxxxxxxxx"])
async def test_key_malformed(fake, value):
    c = by_name(await run(fake.base_url, env={KEY_ENV: value}))["key"]
    assert (c.status, c.code) == ("fail", "KEY_MALFORMED")
    assert value.strip().strip('"') not in c.message  # the key is never shown


@pytest.mark.parametrize("url", ["127.0.0.1:8000/v1", "ftp://host/v1", "http://127.0.0.1:8000/v1?api_key=sk-secret-123",
                                 "https://platform.openai.com/docs", "http://localhost:8000/index.html"])
async def test_base_url_invalid(url):
    report = await run(url)
    c = by_name(report)["base_url"]
    assert (c.status, c.code) == ("fail", "BASE_URL_INVALID")
    assert "sk-secret-123" not in c.message and "network" not in by_name(report)


async def test_unreachable():
    c = by_name(await run(f"http://127.0.0.1:{free_port()}/v1"))["network"]
    assert (c.status, c.code) == ("fail", "UNREACHABLE") and "refused" in c.message


async def test_unreachable_mentions_proxy_settings(monkeypatch):
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.internal:3128")
    c = by_name(await run(f"http://127.0.0.1:{free_port()}/v1"))["network"]
    assert c.code == "UNREACHABLE" and "HTTPS_PROXY" in c.message


async def test_tls_error(fake):
    c = by_name(await run(fake.base_url.replace("http://", "https://")))["network"]
    assert (c.status, c.code) == ("fail", "TLS_ERROR") and "http://" in c.fix


async def test_auth_rejected_without_leaking_the_echoed_key(fake):
    wrong = "sk-wrong-9876543210fedcba"
    report = await run(fake.base_url, env={KEY_ENV: wrong})
    c = by_name(report)["models"]
    assert (c.status, c.code) == ("fail", "AUTH_REJECTED")
    text = report.model_dump_json()
    assert wrong not in text and wrong[-4:] + "." not in text and "***" not in text


@pytest.mark.parametrize("suffix, expected", [("", "/v1"), ("/v1/v1", "/v1"), ("/v1/chat/completions", "/v1")])
async def test_base_url_path_names_the_working_url(fake, suffix, expected):
    c = by_name(await run(fake.root_url + suffix))["models"]
    assert (c.status, c.code) == ("fail", "BASE_URL_PATH")
    assert f'base_url = "{fake.root_url}{expected}"' in c.fix


async def test_base_url_path_without_a_working_candidate():
    async with FakeEndpoint(api_key=KEY, prefix="/serving/v9") as fake:
        c = by_name(await run(fake.root_url + "/api/v3"))["models"]
    assert c.code == "BASE_URL_PATH" and "none of the usual corrections" in c.message


def test_path_candidates_cover_the_usual_mistakes():
    assert path_candidates("http://h/v1/chat/completions")[0] == "http://h/v1"
    assert path_candidates("http://h/v1/v1")[0] == "http://h/v1"
    assert path_candidates("http://h")[0] == "http://h/v1"


async def test_model_not_found_lists_closest(fake):
    report = await run(fake.base_url, model="fake-modle")
    c = by_name(report)["model"]
    assert (c.status, c.code) == ("fail", "MODEL_NOT_FOUND") and "fake-model" in c.message
    assert "tools" not in by_name(report)


@pytest.mark.parametrize("fault, code", [
    (Fault("rate_limit", retry_after=7), "RATE_LIMITED"),
    ("quota", "QUOTA_EXHAUSTED"),
    (Fault("delay", delay_s=6.0), "TIMEOUT"),
    ("malformed", "BAD_RESPONSE"),
    ("not_completion", "BAD_RESPONSE"),
    ("server_error", "SERVER_ERROR"),
])
async def test_chat_faults(fake, fault, code):
    fake.push(fault)
    report = await run(fake.base_url, timeout_s=1.5)  # generous: the other checks must answer in time
    c = by_name(report)["chat"]
    assert (c.status, c.code) == ("fail", code) and c.fix
    assert fake.chat_count == 1  # the doctor does not retry: it reports what it saw
    if code == "RATE_LIMITED":
        assert "7s" in c.message


@pytest.mark.parametrize("support", ["ignore", "reject"])
async def test_no_tool_support_is_a_warning(support):
    async with FakeEndpoint(api_key=KEY, tool_support=support) as fake:
        report = await run(fake.base_url)
    c = by_name(report)["forced"]
    assert (c.status, c.code) == ("warn", "NO_TOOL_SUPPORT") and report.ok
    agent = by_name(report)["tools"]  # the agent's own request: text back (ignore) or refused (reject)
    assert (agent.status, agent.code) == ("warn", "NO_TOOL_CALLS" if support == "ignore" else "NO_TOOL_SUPPORT")
