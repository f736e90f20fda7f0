"""The run's server check (``Channel.server_info``: which server answers a role and its context
window) asks on the endpoint's own SDK client — its pool, its key — and learns what the doctor
learns with a client of its own (``servers.identify`` without a fetch). Real servers'
personalities over real HTTP on 127.0.0.1."""

from __future__ import annotations

import socket

import pytest

from agentrig.channel.client import Channel
from agentrig.channel.servers import LLAMA_CPP, OLLAMA, VLLM, identify
from agentrig.testing.fake_endpoint import FakeEndpoint
from agentrig.testing.personalities import make_personality

from .conftest import KEY, KEY_ENV, make_config


@pytest.mark.parametrize("personality, kind", [("vllm", VLLM), ("ollama-small-window", OLLAMA),
                                               ("llama-cpp-overflow", LLAMA_CPP), (None, None)])
async def test_the_run_learns_what_the_doctor_learns(personality, kind):
    async with FakeEndpoint(api_key=KEY, personality=make_personality(personality)) as fake:
        doctor = await identify(fake.base_url, KEY, "fake-model", 5)
        before = len(fake.requests)
        ch = Channel(make_config(fake.base_url), env={KEY_ENV: KEY})
        try:
            info = await ch.server_info("agent")
            again = await ch.server_info("agent")  # asked once per endpoint and model
        finally:
            await ch.aclose()
        asked = fake.requests[before:]
    assert info == doctor == again
    assert info.kind == kind and (kind is None or info.window)
    assert asked and all(r.auth_ok for r in asked)  # the channel's key went with every question
    assert sum(1 for r in asked if r.path.endswith("/models")) == 1


async def test_a_server_that_cannot_be_reached_is_simply_not_recognised():
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ch = Channel(make_config(f"http://127.0.0.1:{port}/v1"), env={KEY_ENV: KEY})
    try:
        info = await ch.server_info("agent")
    finally:
        await ch.aclose()
    assert info.kind is None and info.window is None
