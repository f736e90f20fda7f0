from __future__ import annotations

import pytest

from agentrig.config import ChannelConfig, ChannelSettings, RoleConfig

from tests.support import KEY, KEY_ENV  # the tests here import them from this module


@pytest.fixture
def env():
    return {KEY_ENV: KEY}


def make_config(base_url: str, **channel) -> ChannelConfig:
    settings = dict(base_url=base_url, api_key_env=KEY_ENV, model="fake-model", timeout_s=5,
                    backoff_base_s=0.01, backoff_max_s=0.05)
    settings.update(channel)
    return ChannelConfig(channel=ChannelSettings(**settings), roles={"agent": RoleConfig()})
