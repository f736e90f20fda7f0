"""The channel against a real local HTTP server: replies, parsing, retries, fatal errors, headers."""

from __future__ import annotations

import time

import pytest

from agentrig.channel import Channel
from agentrig.errors import (
    AuthError,
    BadRequest,
    ContextOverflow,
    EndpointNotFound,
    ModelNotFound,
    QuotaExhausted,
    RetriesExhausted,
)
from agentrig.testing.fake_endpoint import Fault
from agentrig.types import CallContext

from .conftest import KEY_ENV, make_config

MSG = [{"role": "user", "content": "hello"}]
TOOLS = [{"type": "function", "function": {"name": "lookup", "description": "Look up.",
          "parameters": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}}}]


async def test_text_reply_usage_and_headers(fake, env):
    async with Channel(make_config(fake.base_url), run_id="run-1", env=env) as ch:
        c = await ch.complete("agent", MSG, context=CallContext(arm="base", domain="airline", task="7", trial=2))
    assert c.message.content == "OK" and c.message.tool_calls == []
    assert c.usage.prompt_tokens > 0 and c.usage.completion_tokens > 0 and len(c.attempts) == 1
    h = fake.requests[-1].headers
    assert (h["x-agentrig-run"], h["x-agentrig-arm"], h["x-agentrig-domain"], h["x-agentrig-task"],
            h["x-agentrig-trial"], h["x-agentrig-role"]) == ("run-1", "base", "airline", "7", "2", "agent")
    body = fake.requests[-1].json
    assert body["model"] == "fake-model" and body["messages"] == MSG
    summary = ch.usage.summary()["agent"]
    assert (summary.requests, summary.attempts, summary.retries) == (1, 1, 0)
    assert summary.cost_usd is None  # no price table: unknown, not an error


async def test_role_settings_and_extra_body_are_sent(fake, env):
    cfg = make_config(fake.base_url, temperature=0.3, max_tokens=99, seed=5, extra_body={"top_k": 4},
                      headers={"X-Team": "evals"})
    async with Channel(cfg, env=env) as ch:
        await ch.complete("agent", MSG)
    rec = fake.requests[-1]
    assert (rec.json["temperature"], rec.json["max_tokens"], rec.json["seed"], rec.json["top_k"]) == (0.3, 99, 5, 4)
    assert rec.headers["x-team"] == "evals"


async def test_tool_calls_parsed_defensively(fake, env):
    fake.push_reply(
        {"content": None, "tool_calls": [{"name": "lookup", "arguments": {"q": "abc"}},
                                         {"name": "lookup", "arguments": "{\"q\": \"unterminated"},
                                         {"name": "lookup", "arguments": "[1, 2]"},
                                         {"name": "lookup", "arguments": ""}],
         "reasoning_content": "thinking about it"})
    async with Channel(make_config(fake.base_url), env=env) as ch:
        c = await ch.complete("agent", MSG, tools=TOOLS)
    ok, bad_json, not_object, empty = c.message.tool_calls
    assert ok.arguments == {"q": "abc"} and ok.arguments_error is None
    assert bad_json.arguments is None and "not valid JSON" in bad_json.arguments_error
    assert bad_json.arguments_raw == "{\"q\": \"unterminated"
    assert not_object.arguments is None and "JSON object" in not_object.arguments_error
    assert empty.arguments == {}
    assert c.message.reasoning == "thinking about it"
    assert c.finish_reason == "tool_calls"


@pytest.mark.parametrize("fault, cause", [
    (Fault("rate_limit", retry_after_ms=50), "rate_limited"),
    (Fault("server_error"), "server_error"),
    (Fault("server_error", status=503), "server_error"),
    (Fault("request_timeout"), "request_timeout"),
    (Fault("conflict"), "conflict"),
    (Fault("malformed"), "malformed"),
    (Fault("not_completion"), "malformed"),
    (Fault("html"), "malformed"),
    (Fault("disconnect"), "connection"),
    (Fault("delay", delay_s=6.0), "timeout"),
])
async def test_transient_faults_are_retried(fake, env, fault, cause):
    fake.push(fault, fault)
    # the third attempt must answer within timeout_s: generous, for a loaded machine
    async with Channel(make_config(fake.base_url, timeout_s=1.5), env=env) as ch:
        c = await ch.complete("agent", MSG)
    assert c.message.content == "OK"
    assert [a.cause for a in c.attempts] == [cause, cause, None]
    assert ch.usage.summary()["agent"].retries_by_cause == {cause: 2}


async def test_retry_after_is_honoured(fake, env):
    fake.push(Fault("rate_limit", retry_after_ms=400))
    async with Channel(make_config(fake.base_url), env=env) as ch:
        t0 = time.perf_counter()
        c = await ch.complete("agent", MSG)
        elapsed = time.perf_counter() - t0
    assert elapsed >= 0.4 and c.attempts[0].wait_s == pytest.approx(0.4)  # lower bound only, not a time bound
    fake.push(Fault("rate_limit", retry_after=1))  # the seconds form of the header
    async with Channel(make_config(fake.base_url), env=env) as ch:
        t0 = time.perf_counter()
        c = await ch.complete("agent", MSG)
    assert 1.0 <= time.perf_counter() - t0  # lower bound only, not a time bound: the wait happened
    assert c.attempts[0].wait_s == pytest.approx(1.0)  # one second, not 1,000


async def test_retry_after_beyond_the_deadline_gives_up_early(fake, env):
    fake.push(Fault("rate_limit", retry_after=30))
    async with Channel(make_config(fake.base_url, deadline_s=2), env=env) as ch:
        with pytest.raises(RetriesExhausted) as exc:
            await ch.complete("agent", MSG)
    assert exc.value.code == "RATE_LIMITED" and "asked to wait 30" in str(exc.value)
    # gave up at once: one attempt, no wait scheduled (not slept 30 s, nor until the deadline)
    assert fake.chat_count == 1 and [a.wait_s for a in exc.value.attempts] == [0.0]


async def test_attempts_are_bounded(fake, env):
    fake.push(*["server_error"] * 10)
    async with Channel(make_config(fake.base_url, max_attempts=3), env=env) as ch:
        with pytest.raises(RetriesExhausted) as exc:
            await ch.complete("agent", MSG)
        s = ch.usage.summary()["agent"]
    assert len(exc.value.attempts) == 3 and fake.chat_count == 3
    assert exc.value.code == "SERVER_ERROR"
    assert (s.failed, s.attempts, s.retries) == (1, 3, 2)


async def test_deadline_bounds_a_call(fake, env):
    fake.push(*[Fault("delay", delay_s=0.5)] * 10)
    async with Channel(make_config(fake.base_url, timeout_s=0.3, deadline_s=1.0, max_attempts=50), env=env) as ch:
        with pytest.raises(RetriesExhausted) as exc:
            await ch.complete("agent", MSG)
    # every attempt takes its 0.3 s timeout, so the 1 s deadline allows at most 4 of the 50 (a slow machine: fewer)
    assert exc.value.code == "TIMEOUT" and 1 <= len(exc.value.attempts) <= 4 and "deadline_s=1" in str(exc.value)


@pytest.mark.parametrize("fault, error, code", [
    ("unauthorized", AuthError, "AUTH_REJECTED"),
    ("forbidden", AuthError, "AUTH_REJECTED"),
    ("quota", QuotaExhausted, "QUOTA_EXHAUSTED"),
    ("context_overflow", ContextOverflow, "CONTEXT_OVERFLOW"),
    ("bad_request", BadRequest, "BAD_REQUEST"),
    ("unprocessable", BadRequest, "BAD_REQUEST"),
])
async def test_fatal_errors_are_not_retried(fake, env, fault, error, code):
    fake.push(fault, fault)
    async with Channel(make_config(fake.base_url), env=env) as ch:
        with pytest.raises(error) as exc:
            await ch.complete("agent", MSG)
    assert exc.value.code == code and fake.chat_count == 1 and len(exc.value.attempts) == 1
    assert exc.value.diagnosis.fix


async def test_unknown_model_and_wrong_path_are_fatal(fake, env):
    async with Channel(make_config(fake.base_url, model="no-such-model"), env=env) as ch:
        with pytest.raises(ModelNotFound) as exc:
            await ch.complete("agent", MSG)
    assert "no-such-model" in str(exc.value)
    async with Channel(make_config(fake.base_url + "/v1"), env=env) as ch:
        with pytest.raises(EndpointNotFound) as exc:
            await ch.complete("agent", MSG)
    assert exc.value.code == "BASE_URL_PATH"
    assert fake.chat_count == 1  # the 404 on the wrong path never reached the chat route


async def test_wrong_key_is_fatal_and_missing_key_needs_no_network(fake):
    async with Channel(make_config(fake.base_url), env={KEY_ENV: "sk-wrong-key-000000000"}) as ch:
        with pytest.raises(AuthError) as exc:
            await ch.complete("agent", MSG)
    assert exc.value.code == "AUTH_REJECTED" and KEY_ENV in str(exc.value)
    async with Channel(make_config(fake.base_url), env={}) as ch:
        with pytest.raises(AuthError) as exc:
            await ch.complete("agent", MSG)
    assert exc.value.code == "KEY_MISSING" and len(fake.requests) == 1


async def test_connection_refused_is_retried_then_unreachable(env):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    async with Channel(make_config(f"http://127.0.0.1:{port}/v1", max_attempts=2), env=env) as ch:
        with pytest.raises(RetriesExhausted) as exc:
            await ch.complete("agent", MSG)
    assert exc.value.code == "UNREACHABLE" and [a.cause for a in exc.value.attempts] == ["connection"] * 2
