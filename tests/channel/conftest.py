from __future__ import annotations

import pytest

from agentrig.config import ChannelConfig, ChannelSettings, RoleConfig
from agentrig.testing.fake_endpoint import FakeEndpoint

KEY = "sk-fake-test-0123456789abcdef"
KEY_ENV = "AGENTRIG_TEST_KEY"


@pytest.fixture
async def fake():
    ep = FakeEndpoint(api_key=KEY)
    await ep.start()
    yield ep
    await ep.stop()


@pytest.fixture
def env():
    return {KEY_ENV: KEY}


def make_config(base_url: str, **channel) -> ChannelConfig:
    settings = dict(base_url=base_url, api_key_env=KEY_ENV, model="fake-model", timeout_s=5,
                    backoff_base_s=0.01, backoff_max_s=0.05)
    settings.update(channel)
    return ChannelConfig(channel=ChannelSettings(**settings), roles={"agent": RoleConfig()})
