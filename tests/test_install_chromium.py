"""Issue 23.12: `make test` installs Debian's chromium minimally (--no-install-recommends), says what
it installs before it does, and leaves it out when the user declines (CI always installs it).
apt-get is a recorder script here (the test never installs anything); the Makefile target is run."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _apt(tmp_path: Path) -> tuple[Path, Path]:
    log = tmp_path / "apt.log"
    apt = tmp_path / "apt-get"
    apt.write_text(f'#!/bin/sh\necho "$@" >> {log}\n'
                   'case "$*" in *" -s "*) echo "Inst chromium (1 Debian)"; echo "Inst libfoo (2 Debian)";; esac\n')
    apt.chmod(0o755)
    return apt, log


def _make(tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    apt, _ = _apt(tmp_path)
    full = {k: v for k, v in os.environ.items() if k not in ("CI", "AGENTRIG_BROWSER")}
    full.update(CHROMIUM_CMD="no-such-browser-here", APT_GET=str(apt), **env)
    return subprocess.run(["make", "-s", "chromium"], cwd=ROOT, capture_output=True, text=True, env=full,
                          stdin=subprocess.DEVNULL, timeout=60)


def test_ci_installs_the_minimal_set_and_says_so_first(tmp_path):
    if os.geteuid() != 0:
        import pytest
        pytest.skip("the install path needs root (or passwordless sudo) to reach apt-get")
    p = _make(tmp_path, CI="true")
    assert p.returncode == 0, p.stderr
    calls = (tmp_path / "apt.log").read_text().splitlines()
    install = [c for c in calls if c.startswith("install -y")]
    assert install == ["install -y --no-install-recommends chromium"], calls
    assert "installing these packages:" in p.stderr and "  libfoo" in p.stderr


def test_declined_or_no_terminal_installs_nothing(tmp_path):
    for env in ({"AGENTRIG_BROWSER": "skip"}, {}):  # declined; no terminal to ask on
        p = _make(tmp_path, **env)
        assert p.returncode == 0, p.stderr
        assert "will skip" in p.stderr and "--no-install-recommends" in p.stderr
        assert not (tmp_path / "apt.log").exists()
