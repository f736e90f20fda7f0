"""Shared fixtures. Real data, real servers: see DESIGN.md 'Real parts in tests'."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent


def _tau2_root() -> Path:
    raw = os.environ.get("AGENTRIG_TAU2_DATA")
    return Path(raw).expanduser().resolve() if raw else (REPO_ROOT / ".." / "shared" / "tau2-data").resolve()


@pytest.fixture(scope="session")
def tau2_root() -> Path:
    """The τ²-bench data root; skips (or fails under AGENTRIG_REQUIRE_TAU2_DATA=1) when absent."""
    root = _tau2_root()
    if not (root / "domains").is_dir():
        msg = f"τ²-bench data not found at {root} (set AGENTRIG_TAU2_DATA to a tau2-bench data root)"
        if os.environ.get("AGENTRIG_REQUIRE_TAU2_DATA") == "1":
            pytest.fail(msg)
        pytest.skip(msg)
    return root


@pytest.fixture
async def fake():
    """A real OpenAI-compatible server on 127.0.0.1 that accepts ``tests.support.KEY``."""
    from agentrig.testing.fake_endpoint import FakeEndpoint

    from .support import KEY

    ep = FakeEndpoint(api_key=KEY)
    await ep.start()
    yield ep
    await ep.stop()
