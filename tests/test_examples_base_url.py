"""Issue 23.11: the examples do not hard-code a vendor's URL; like examples/terminal.toml they take
the endpoint from $OPENAI_BASE_URL (else OpenAI's), and every one still resolves its channel."""

from __future__ import annotations

from pathlib import Path

from agentrig.config import load_channel_config

EXAMPLES = sorted((Path(__file__).resolve().parents[1] / "examples").glob("*.toml"))


def test_no_example_hard_codes_a_base_url():
    assert EXAMPLES
    for path in EXAMPLES:
        cfg = load_channel_config(path)
        assert cfg.channel.base_url is None, path
        assert cfg.resolve("agent", env={"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}).base_url == "http://127.0.0.1:9/v1"
