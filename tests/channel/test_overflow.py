"""Context overflow as each server words it: fatal ``CONTEXT_OVERFLOW`` (never retried), with the
sizes the server names; through the channel against the fake endpoint's server personalities."""

from __future__ import annotations

import json

import pytest

from agentrig.channel import Channel
from agentrig.channel.faults import classify_status
from agentrig.errors import ContextOverflow, RetriesExhausted
from agentrig.testing.fake_endpoint import FakeEndpoint
from agentrig.testing.personalities import make_personality

from .conftest import make_config

# (status, body, prompt tokens named, window named) — the servers' own shapes
OVERFLOWS = [
    pytest.param(400, {"error": {"code": 400, "type": "exceed_context_size_error", "n_prompt_tokens": 5012,
                                 "n_ctx": 4096, "message": "request (5012 tokens) exceeds the available context "
                                                           "size (4096 tokens), try increasing it"}},
                 5012, 4096, id="llama.cpp-400"),
    pytest.param(400, {"error": {"code": 400, "type": "exceed_context_size_error", "n_prompt_tokens": 9000,
                                 "n_ctx": 8192,
                                 "message": "the request exceeds the available context size, try increasing it"}},
                 9000, 8192, id="llama.cpp-400-no-numbers-in-text"),
    pytest.param(500, {"error": {"code": 500, "type": "server_error", "message": "Context size has been exceeded."}},
                 None, None, id="llama.cpp-old-500"),
    pytest.param(500, {"error": {"message": "Requested tokens (9123) exceed context window of 8192",
                                 "type": "internal_server_error"}},
                 9123, 8192, id="llama-cpp-python-raw"),
    pytest.param(400, {"error": {"message": "This model's maximum context length is 8192 tokens. However, you "
                                            "requested 9300 tokens (8800 in the messages, 500 in the completion). "
                                            "Please reduce the length of the messages or completion.",
                                 "type": "invalid_request_error", "param": "messages",
                                 "code": "context_length_exceeded"}},
                 9300, 8192, id="llama-cpp-python-server"),
    pytest.param(400, {"object": "error", "message": "This model's maximum context length is 4096 tokens. However, "
                                                     "your request has 5200 input tokens. Please reduce the length "
                                                     "of the input messages.", "type": "BadRequestError",
                       "param": None, "code": 400},
                 5200, 4096, id="vllm"),
    pytest.param(400, {"error": {"message": "'max_tokens' or 'max_completion_tokens' is too large: 2048. This "
                                            "model's maximum context length is 4096 tokens and your request has "
                                            "3000 input tokens (2048 > 4096 - 3000).", "type": "BadRequestError",
                                 "param": None, "code": 400}},
                 3000, 4096, id="vllm-max-tokens"),
    pytest.param(400, {"error": {"message": "The decoder prompt (length 9001) is longer than the maximum model "
                                            "length of 8192. Make sure that `max_model_len` is no smaller than the "
                                            "number of text tokens.", "type": "BadRequestError", "code": 400}},
                 9001, 8192, id="vllm-v1-decoder"),
    pytest.param(400, {"error": {"message": "This model's maximum context length is 128000 tokens. However, your "
                                            "messages resulted in 130512 tokens. Please reduce the length of the "
                                            "messages.", "type": "invalid_request_error", "param": "messages",
                                 "code": "context_length_exceeded"}},
                 130512, 128000, id="openai"),
    pytest.param(400, {"error": {"message": "The input (9000 tokens) is longer than the model's context length "
                                            "(8192 tokens).", "type": "BadRequestError", "code": 400}},
                 9000, 8192, id="sglang"),
]


@pytest.mark.parametrize("status, body, prompt, window", OVERFLOWS)
@pytest.mark.parametrize("as_text", [False, True], ids=["parsed", "raw"])
def test_every_server_overflow_is_context_overflow(status, body, prompt, window, as_text):
    sent = json.dumps(body) if as_text else body
    fault = classify_status(status, sent, {}, model="m", key_env="K", base_url="http://x/v1")
    assert not fault.retryable and fault.cause == "fatal"
    assert isinstance(fault.fatal, ContextOverflow) and fault.fatal.code == "CONTEXT_OVERFLOW"
    assert (fault.fatal.prompt_tokens, fault.fatal.window) == (prompt, window)
    if window is not None:
        assert f"a window of {window:,} tokens" in fault.fatal.diagnosis.message
    assert "ctx-size" in fault.fatal.diagnosis.fix and "num_ctx" in fault.fatal.diagnosis.fix


@pytest.mark.parametrize("status, body", [
    (500, {"error": {"message": "CUDA out of memory", "type": "server_error"}}),
    (503, {"error": {"message": "Service unavailable: loading model"}}),
])
def test_other_server_errors_stay_retryable(status, body):
    fault = classify_status(status, body, {}, model="m", key_env="K", base_url="http://x/v1")
    assert fault.retryable and fault.cause == "server_error"


@pytest.mark.parametrize("name, status, window", [
    ("llama-cpp-overflow", 400, 300),
    ("llama-cpp-overflow-old", 500, None),
    ("llama-cpp-python-chatml", 400, 300),
    ("vllm", 400, 300),
])
async def test_overflow_through_the_channel_is_one_attempt(env, name, status, window):
    long = [{"role": "user", "content": "word " * 2000}]  # ~2,500 tokens at 4 chars a token
    async with FakeEndpoint(personality=make_personality(name, window=300)) as fake:
        async with Channel(make_config(fake.base_url, max_attempts=4), env=env) as ch:
            with pytest.raises(ContextOverflow) as caught:
                await ch.complete("agent", long)
            summary = ch.usage.summary()["agent"]
        assert len(fake.requests) == 1  # never retried, also the 500 form
    err = caught.value
    assert err.status == status and len(err.attempts) == 1 and err.attempts[0].cause == "fatal"
    assert err.window == window
    assert (summary.requests, summary.failed, summary.retries) == (1, 1, 0)


async def test_a_plain_500_is_still_retried(env):
    async with FakeEndpoint(personality="llama-cpp-overflow") as fake:
        from agentrig.testing.fake_endpoint import Fault

        fake.push(Fault("server_error"))
        async with Channel(make_config(fake.base_url, max_attempts=3), env=env) as ch:
            c = await ch.complete("agent", [{"role": "user", "content": "short"}])
    assert c.message.content and len(c.attempts) == 2 and c.attempts[0].cause == "server_error"


async def test_retries_exhausted_is_not_raised_for_overflow(env):
    """A 500 overflow never turns into RetriesExhausted (which would make the trial invalid)."""
    async with FakeEndpoint(personality=make_personality("llama-cpp-overflow-old", window=100)) as fake:
        async with Channel(make_config(fake.base_url, max_attempts=6), env=env) as ch:
            with pytest.raises(ContextOverflow) as caught:
                await ch.complete("agent", [{"role": "user", "content": "x" * 4000}])
    assert not isinstance(caught.value, RetriesExhausted)


def test_the_run_stopping_form_names_both_sizes():
    from agentrig.channel.faults import window_too_small

    body = {"error": {"message": "'max_tokens' or 'max_completion_tokens' is too large: 2048. This model's maximum "
                                 "context length is 4096 tokens and your request has 3000 input tokens "
                                 "(2048 > 4096 - 3000).", "type": "BadRequestError", "code": 400}}
    fault = classify_status(400, body, {}, model="m", key_env="K", base_url="http://x/v1")
    stop = window_too_small(fault.fatal, "agent", "a/airline/7#0")
    assert stop.code == "CONTEXT_TOO_SMALL" and stop.first and (stop.prompt_tokens, stop.window) == (3000, 4096)
    assert ("the first request of role 'agent' in trial a/airline/7#0 needs 3,000 tokens (the server's count) "
            "plus room for the reply (max_tokens); the window is 4,096 tokens") in stop.diagnosis.message
    old = classify_status(500, {"error": {"message": "Context size has been exceeded."}}, {}, model="m", key_env="K",
                          base_url="http://x/v1").fatal
    old.request_chars = 40_000
    stop = window_too_small(old, None, "t")
    assert "needs about 10,000 tokens (40,000 characters of messages and tools" in stop.diagnosis.message
    assert "the window is not named by the server" in stop.diagnosis.message


async def test_a_500_that_is_a_validation_error_of_the_request_is_not_retried(env):
    """llama-cpp-python answers a request its model rejects (an assistant message with a null
    content) with a 500 carrying pydantic's validation error: the same request fails again, so it
    is fatal BAD_REQUEST after one attempt, not six retried server errors."""
    from agentrig.errors import BadRequest

    msgs = [{"role": "user", "content": "hi"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "ok"}]
    async with FakeEndpoint(personality="llama-cpp-python-chatml") as fake:
        async with Channel(make_config(fake.base_url, max_attempts=4), env=env) as ch:
            with pytest.raises(BadRequest) as caught:
                await ch.complete("agent", msgs)
        assert len(fake.requests) == 1
    assert "validation error" in caught.value.diagnosis.message and caught.value.diagnosis.code == "BAD_REQUEST"
