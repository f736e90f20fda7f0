"""Shared fixtures. Real data, real servers: see DESIGN.md 'Real parts in tests'."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent


MISSING_TAU2 = "τ²-bench data not found"  # the start of the skip reason below, folded into one summary line


def _tau2_root() -> Path:
    raw = os.environ.get("AGENTRIG_TAU2_DATA")
    return Path(raw).expanduser().resolve() if raw else (REPO_ROOT / ".." / "shared" / "tau2-data").resolve()


@pytest.fixture(scope="session")
def tau2_root() -> Path:
    """The τ²-bench data root; skips (or fails under AGENTRIG_REQUIRE_TAU2_DATA=1) when absent."""
    root = _tau2_root()
    if not (root / "domains").is_dir():
        msg = (f"{MISSING_TAU2} at {root}: the tests that need it are skipped. Put a tau2-bench data root there "
               "(`agentrig data pull tau2 --dest DIR`), or set AGENTRIG_TAU2_DATA=DIR; "
               "AGENTRIG_REQUIRE_TAU2_DATA=1 makes them fail instead (CI)")
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
_LONG_FILES = ("tests/analysis/test_instability.py", "tests/test_demo.py", "tests/bench/appworld/test_appworld_runs.py",
               "tests/channel/test_cli_doctor_agents.py", "tests/agents/test_proxy.py",
               "tests/integration/test_python_agent_runs.py")


# Files that hold a deadline (a run's exit within 10 s of Ctrl-C): handed out before anything else,
# so that they run beside each other only — not beside the base-image and package builds of the
# slow files, which on a 2-core machine starved them past their deadline.
_DEADLINE_FILES = ("tests/bench/terminal/test_ctrl_c.py", "tests/bench/appworld/test_ctrl_c.py", "tests/run/test_ctrl_c.py")


def _drop_superseded(config, items) -> None:
    """A test marked ``superseded_by("name")`` — a fast sample of what the slow test ``name`` of
    its file checks on the whole set — is deselected when that test is selected too (`make test`);
    `-m 'not slow'` (`make test-fast`) keeps it. Every xdist worker collects the same and drops the same."""
    selected = {(item.path, item.originalname) for item in items}
    dropped = [item for item in items
               if (m := item.get_closest_marker("superseded_by")) is not None and (item.path, m.args[0]) in selected]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = [item for item in items if item not in dropped]


@pytest.hookimpl(trylast=True)  # after -m / -k have deselected theirs
def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist (`make test`: one file per worker at a time), hand out ``_DEADLINE_FILES``
    first, then the long files — those with a slow-marked test, then ``_LONG_FILES`` — so that no
    worker starts a minutes-long file when the others are nearly done. Only the order changes; a
    serial run keeps the collection order. First, a test superseded by a slow test that runs too
    is left out (``_drop_superseded``)."""
    _drop_superseded(config, items)
    if not hasattr(config, "workerinput"):
        return
    slow = {item.path for item in items if item.get_closest_marker("slow")}
    long = {REPO_ROOT / name for name in _LONG_FILES}
    deadline = {REPO_ROOT / name for name in _DEADLINE_FILES}
    items.sort(key=lambda item: -1 if item.path in deadline else 0 if item.path in slow else 1 if item.path in long else 2)


_SKIP_LINE = Path(__file__).resolve()  # where the folded skips are reported: the line that skips
_SKIP_LINENO = next(i for i, line in enumerate(_SKIP_LINE.read_text(encoding="utf-8").splitlines(), 1)
                    if line.strip() == "pytest.skip(msg)")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """Every test skipped for want of the τ²-bench data reports the same place (this file's
    ``tau2_root``), so pytest's summary folds them into one line: ``SKIPPED [N] tests/conftest.py:…:
    τ²-bench data not found at …`` instead of one line per test."""
    report = yield
    longrepr = report.longrepr
    if report.skipped and isinstance(longrepr, tuple) and len(longrepr) == 3 and MISSING_TAU2 in str(longrepr[2]):
        report.longrepr = (str(_SKIP_LINE), _SKIP_LINENO, longrepr[2])
    return report
