"""`make test` without the τ²-bench data (issue 23.11g): the tests that need it skip, and pytest's
summary says so in ONE line (where to put the data, the variable to set) — not one line per test;
under AGENTRIG_REQUIRE_TAU2_DATA=1 (CI) they fail instead. The real pytest, in a subprocess, on
two test files that use the data root."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FILES = ["tests/bench/tau/test_data.py", "tests/bench/test_unknown_names.py"]


def pytest_without_data(tmp_path: Path, **extra: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTRIG_", "PYTEST_"))}
    env.update(AGENTRIG_TAU2_DATA=str(tmp_path / "no-data-here"), **extra)
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", *FILES],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def test_the_skips_for_missing_data_are_one_summary_line(tmp_path):
    p = pytest_without_data(tmp_path)
    assert p.returncode == 0, p.stdout[-3000:]
    skipped = [line for line in p.stdout.splitlines() if line.startswith("SKIPPED")]
    assert len(skipped) == 1, skipped
    line = skipped[0]
    assert line.startswith("SKIPPED [") and "tests/conftest.py:" in line and str(tmp_path / "no-data-here") in line
    assert int(line[len("SKIPPED ["):line.index("]")]) >= 10  # every test that needs the data, counted
    assert "AGENTRIG_TAU2_DATA=DIR" in line and "agentrig data pull tau2" in line


def test_ci_still_fails_without_the_data(tmp_path):
    p = pytest_without_data(tmp_path, AGENTRIG_REQUIRE_TAU2_DATA="1")
    assert p.returncode != 0
    assert "τ²-bench data not found" in p.stdout and "SKIPPED" not in p.stdout
