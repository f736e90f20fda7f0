from __future__ import annotations

import pytest

from agentrig.config import ChannelConfig, load_channel_config
from agentrig.errors import ConfigError


def test_roles_inherit_channel_defaults_and_override(tmp_path):
    p = tmp_path / "exp.toml"
    p.write_text(
        """
[channel]
base_url = "http://gw.example/v1"
api_key_env = "GW_KEY"
timeout_s = 30
headers = { "X-Team" = "evals" }
extra_body = { provider = { sort = "throughput" } }

[roles.agent]
model = "openai/gpt-4.1"
temperature = 0.0
seed = 7

[roles.user]
model = "small"
base_url = "http://other.example/v1"
headers = { "X-User" = "1" }
max_concurrency = 2

[prices."openai/gpt-4.1"]
input = 2.0
output = 8.0
"""
    )
    cfg = load_channel_config(p)
    agent = cfg.resolve("agent", env={})
    assert (agent.base_url, agent.api_key_env, agent.timeout_s, agent.model, agent.seed) == (
        "http://gw.example/v1", "GW_KEY", 30, "openai/gpt-4.1", 7)
    assert agent.extra_body == {"provider": {"sort": "throughput"}}
    user = cfg.resolve("user", env={})
    assert user.base_url == "http://other.example/v1" and user.max_concurrency == 2
    assert user.headers == {"X-Team": "evals", "X-User": "1"}  # merged, not replaced
    assert cfg.prices["openai/gpt-4.1"].output == 8.0
    assert cfg.configured_roles() == ["agent", "user"]


def test_nothing_configured_uses_openai_env_defaults():
    rr = ChannelConfig().resolve("agent", env={"OPENAI_BASE_URL": "http://localhost:8000/v1"})
    assert rr.base_url == "http://localhost:8000/v1" and rr.api_key_env == "OPENAI_API_KEY"
    assert ChannelConfig().resolve("agent", env={}).base_url == "https://api.openai.com/v1"


@pytest.mark.parametrize(
    "body, needle",
    [
        ("[channel]\ntimeout = 3\n", "channel.timeout: unknown setting"),
        ("[channel]\napi_key_env = \"sk-live-abc123 \"\n", "channel.api_key_env"),
        ("[roles.planner]\nmodel = \"x\"\n", "roles.planner"),
        ("[channel\n", "not valid TOML"),
        ("[channel]\nmax_attempts = 0\n", "channel.max_attempts"),
    ],
)
def test_bad_config_names_file_and_field(tmp_path, body, needle):
    p = tmp_path / "bad.toml"
    p.write_text(body)
    with pytest.raises(ConfigError) as exc:
        load_channel_config(p)
    assert str(p) in str(exc.value) and needle in str(exc.value)


def test_missing_file_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="no such file"):
        load_channel_config(tmp_path / "nope.toml")
