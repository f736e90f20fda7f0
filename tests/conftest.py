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


# Long files that have no slow-marked test (a minute or more of one worker's time each).
_LONG_FILES = ("tests/analysis/test_instability.py", "tests/test_demo.py", "tests/bench/appworld/test_appworld_runs.py")


def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist (`make test`: one file per worker at a time), hand out the long files
    first — those with a slow-marked test, then ``_LONG_FILES`` — so that no worker starts a
    minutes-long file when the others are nearly done. Only the order changes; a serial run keeps
    the collection order."""
    if not hasattr(config, "workerinput"):
        return
    slow = {item.path for item in items if item.get_closest_marker("slow")}
    long = {REPO_ROOT / name for name in _LONG_FILES}
    items.sort(key=lambda item: 0 if item.path in slow else 1 if item.path in long else 2)  # stable
