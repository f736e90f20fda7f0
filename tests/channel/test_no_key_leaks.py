"""Everything the channel logs, returns or raises is scanned for the key: nothing is found."""

from __future__ import annotations

import logging

import pytest

from agentrig.channel import Channel
from agentrig.channel.doctor.diagnose import diagnose
from agentrig.errors import AgentrigError
from agentrig.testing.fake_endpoint import Fault

from .conftest import KEY, KEY_ENV, make_config


def fragments(key: str) -> list[str]:
    # the key, and the parts a server echoes when it masks a key (first 5, last 4)
    return [key, key[:12], key[-10:], key[:5] + "*", "*" + key[-4:]]


async def test_nothing_carries_the_key(fake, caplog):
    caplog.set_level(logging.DEBUG)
    seen: list[str] = []
    env = {KEY_ENV: KEY}
    async with Channel(make_config(fake.base_url, max_attempts=2), env=env) as ch:
        fake.push(Fault("rate_limit", retry_after_ms=10), "server_error", "malformed", "bad_request")
        for _ in range(3):
            try:
                seen.append((await ch.complete("agent", [{"role": "user", "content": "x"}])).model_dump_json())
            except AgentrigError as exc:
                seen += [str(exc), repr(exc), repr(exc.attempts)]
        seen.append(repr(ch.usage.summary()))
    # a wrong key that the server echoes back masked, like OpenAI does
    wrong = KEY[:-4] + "zzzz"
    async with Channel(make_config(fake.base_url), env={KEY_ENV: wrong}) as ch:
        with pytest.raises(AgentrigError) as exc:
            await ch.complete("agent", [{"role": "user", "content": "x"}])
        seen += [str(exc.value), repr(exc.value), exc.value.diagnosis.message]
    for env_case in (env, {KEY_ENV: wrong}, {KEY_ENV: KEY + "\n"}):
        report = await diagnose(make_config(fake.base_url).resolve("agent", env={}), ["agent"], env_case)
        seen.append(report.model_dump_json())
    seen += [r.getMessage() for r in caplog.records]
    seen.append(caplog.text)
    # the requests our headers carried (the server records all headers but Authorization)
    seen += [repr(r.headers) for r in fake.requests]
    blob = "\n".join(seen)
    assert "retrying" in blob  # the log was really captured
    for frag in fragments(KEY) + fragments(wrong):
        assert frag not in blob, f"key fragment {frag!r} leaked"
