from __future__ import annotations

from pathlib import Path

import pytest

from .runs import make_run, tampered_copy


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory) -> Path:
    """A real run: gold / flaky-gold (drop 0.4) / noop × 16 bikeshop tasks × 2 trials."""
    return make_run(tmp_path_factory.mktemp("report-run"))


@pytest.fixture(scope="session")
def hostile_run(demo_run, tmp_path_factory) -> Path:
    """``demo_run`` with one trial carrying text that tries to become markup or code."""
    return tampered_copy(demo_run, tmp_path_factory.mktemp("hostile") / "run")
