"""Helpers shared by the tests: the test key and a channel over a local endpoint."""

from __future__ import annotations

from agentrig.channel.client import Channel
from agentrig.config import ChannelConfig, ChannelSettings, RoleConfig

KEY = "sk-fake-test-0123456789abcdef"
KEY_ENV = "AGENTRIG_TEST_KEY"


def make_channel(base_url: str, roles: tuple[str, ...] = ("agent",), *, key: str = KEY, **settings) -> Channel:
    """A real Channel to ``base_url`` for ``roles``: model "fake-model", short timeouts and backoff."""
    channel = dict(base_url=base_url, api_key_env=KEY_ENV, model="fake-model", timeout_s=5, max_attempts=2,
                   backoff_base_s=0.01, backoff_max_s=0.02)
    channel.update(settings)
    cfg = ChannelConfig(channel=ChannelSettings(**channel), roles={r: RoleConfig() for r in roles})
    return Channel(cfg, env={KEY_ENV: key})
