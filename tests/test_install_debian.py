"""Issues 23.12 and 31.11: `make test` installs every Debian package its tests need — Debian's
chromium minimally (--no-install-recommends), podman with runc and slirp4netns, Debian's docker.io
(dockerd; issue 32), mmdebstrap — says
what it installs before it does, and leaves a package out when the user declines (CI always
installs). `.ci/run` only sets CI's variables and calls `make test`, so a newcomer's `make test` runs
what CI runs. apt-get is a recorder script here (the test never installs anything)."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "install-debian.sh"


def _apt(tmp_path: Path) -> Path:
    log = tmp_path / "apt.log"
    apt = tmp_path / "apt-get"
    apt.write_text(f'#!/bin/sh\necho "$@" >> {log}\n'
                   'case "$*" in *" -s "*) echo "Inst chromium (1 Debian)"; echo "Inst libfoo (2 Debian)";; esac\n')
    apt.chmod(0o755)
    return apt


def _env(tmp_path: Path, **env: str) -> dict[str, str]:
    full = {k: v for k, v in os.environ.items()
            if k not in ("CI", "AGENTRIG_BROWSER", "AGENTRIG_CONTAINERS", "AGENTRIG_DOCKER", "AGENTRIG_MMDEBSTRAP",
                         "AGENTRIG_SYSTEM")}
    full.update(APT_GET=str(_apt(tmp_path)), **env)
    return full


def _make_chromium(tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(["make", "-s", "chromium"], cwd=ROOT, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                          env=_env(tmp_path, CHROMIUM_CMD="no-such-browser-here", **env), timeout=60)


def _script(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(SCRIPT), *args], cwd=ROOT, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                          env=_env(tmp_path, **env), timeout=60)


def _installs(tmp_path: Path) -> list[str]:
    log = tmp_path / "apt.log"
    return [c for c in log.read_text().splitlines() if c.startswith("install -y")] if log.exists() else []


def _need_root() -> None:
    if os.geteuid() != 0:
        pytest.skip("the install path needs root (or passwordless sudo) to reach apt-get")


def test_ci_installs_the_minimal_browser_and_says_so_first(tmp_path):
    _need_root()
    p = _make_chromium(tmp_path, CI="true")
    assert p.returncode == 0, p.stderr
    assert _installs(tmp_path) == ["install -y --no-install-recommends chromium"]
    assert "installing these packages:" in p.stderr and "  libfoo" in p.stderr


def test_declined_or_no_terminal_installs_nothing(tmp_path):
    for env in ({"AGENTRIG_BROWSER": "skip"}, {}):  # declined; no terminal to ask on
        p = _make_chromium(tmp_path, **env)
        assert p.returncode == 0, p.stderr
        assert "will skip" in p.stderr and "--no-install-recommends" in p.stderr
        assert not (tmp_path / "apt.log").exists()


def test_containers_are_installed_under_ci_and_skipped_when_declined(tmp_path):
    _need_root()
    cmds = ("no-such-podman", "no-such-runc", "--", "podman", "runc", "slirp4netns")
    p = _script(tmp_path, "--with-recommends", "containers", *cmds, AGENTRIG_CONTAINERS="skip")
    assert p.returncode == 0 and "will skip" in p.stderr and "AGENTRIG_CONTAINERS=install" in p.stderr, p.stderr
    assert _installs(tmp_path) == []
    p = _script(tmp_path, "--with-recommends", "containers", *cmds, CI="true")
    assert p.returncode == 0, p.stderr
    assert _installs(tmp_path) == ["install -y podman runc slirp4netns"]
    assert "no-such-podman no-such-runc missing" in p.stderr


def test_docker_io_is_installed_minimally_under_ci(tmp_path):
    """Debian's docker.io for the docker sandbox's tests (issue 32), without recommended packages;
    AGENTRIG_DOCKER=skip declines it outside CI."""
    _need_root()
    p = _script(tmp_path, "docker", "no-such-dockerd", "--", "docker.io", AGENTRIG_DOCKER="skip")
    assert p.returncode == 0 and "AGENTRIG_DOCKER=install" in p.stderr and _installs(tmp_path) == [], p.stderr
    p = _script(tmp_path, "docker", "no-such-dockerd", "--", "docker.io", CI="true")
    assert p.returncode == 0, p.stderr
    assert _installs(tmp_path) == ["install -y --no-install-recommends docker.io"]
    assert "no-such-dockerd missing: the docker sandbox's tests need Debian's Docker daemon" in p.stderr


def test_nothing_is_done_when_the_commands_are_there(tmp_path):
    p = _script(tmp_path, "containers", "sh", "--", "podman", CI="true")
    assert p.returncode == 0 and p.stderr == "" and _installs(tmp_path) == []


def test_make_test_installs_what_ci_installs_and_ci_only_calls_it():
    """The README's `make test` is CI's suite: every install lives in the Makefile's `test`
    prerequisites, and `.ci/run` installs nothing itself."""
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}  # under `make test`
    dry = subprocess.run(["make", "-n", "--no-print-directory", "test"], cwd=ROOT, capture_output=True, text=True,
                         timeout=60, env=env).stdout
    for what, pkgs in (("browser", "chromium"), ("containers", "podman runc slirp4netns"), ("docker", "docker.io"),
                       ("mmdebstrap", "mmdebstrap")):
        assert re.search(rf"install-debian\.sh .*{what} .*-- {pkgs}$", dry, re.M), (what, dry)
    assert dry.rstrip().splitlines()[-1].startswith(".venv/bin/python -m pytest")
    ci = (ROOT / ".ci" / "run").read_text()
    code = [ln for ln in ci.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    assert not any("apt-get" in ln or "install" in ln for ln in code), code
    assert code[-1].strip() == "make test"
