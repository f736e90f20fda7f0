"""The podman sandbox for real: Debian's podman with runc, on a base root built from packages and
imported as the task's FROM image (no registry here). Skipped where podman or mmdebstrap is
missing, except in CI (env CI=true), where missing tools fail the test."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess

import pytest

from agentrig.bench.terminal.images import ensure_base_root, resolve_base
from agentrig.bench.terminal.sandbox import open_sandbox, sandbox_check
from agentrig.bench.terminal.sandbox.docker import engine_cli, engine_problem

from .sandbox_support import make_task, settings

BASE = "ghcr.io/laude-institute/t-bench/python-3-13"


_MISSING = [t for t in ("podman", "runc", "mmdebstrap") if shutil.which(t) is None]
PROBLEM = asyncio.run(engine_problem("podman")) if not _MISSING else f"missing {', '.join(_MISSING)}"


def _need_podman() -> None:
    problem = PROBLEM
    if problem:
        if os.environ.get("CI") == "true":
            pytest.fail(f"podman sandbox unavailable in CI: {problem}")
        pytest.skip(f"podman sandbox unavailable: {problem}")


@pytest.fixture(scope="module")
def base_image():
    """TB's python-3-13 base: our root built from Debian packages, imported under that name."""
    _need_podman()
    root = ensure_base_root(resolve_base(BASE))
    cli = engine_cli("podman")
    if subprocess.run([*cli, "image", "exists", BASE]).returncode != 0:
        tar = subprocess.Popen(["tar", "-C", str(root), "-c", "."], stdout=subprocess.PIPE)
        subprocess.run([*cli, "import", "-q", "-c", "WORKDIR /app", "-", BASE], stdin=tar.stdout, check=True,
                       stdout=subprocess.DEVNULL)
        tar.wait()
    return BASE


def _containers() -> list[str]:
    out = subprocess.run([*engine_cli("podman"), "ps", "-a", "--format", "{{.Names}}"], capture_output=True, text=True)
    return [n for n in out.stdout.split() if n.startswith("agentrig-")]


async def test_the_doctor_asks_podman_itself():
    """podman needs no daemon: the doctor reports what `podman info` says (its version and runtime)."""
    _need_podman()
    [finding] = await sandbox_check("podman")
    assert finding.ok and finding.check == "engine", finding
    assert "runtime runc" in finding.detail and finding.detail.startswith("podman "), finding.detail


async def test_podman_trial_container_timeout_kills_the_group_and_leaves_nothing(tmp_path, base_image):
    task = make_task(tmp_path, f"FROM {base_image}\nRUN echo built > /built\n")
    sandbox = await open_sandbox(task, settings(tmp_path, kind="podman"))
    try:
        result = await sandbox.run("cat /built; pwd; python --version; cat /etc/debian_version", 60)
        assert result.output.splitlines()[:2] == ["built", "/app"], result.output
        assert result.output.splitlines()[2].startswith("Python 3"), result.output
        timed = await sandbox.run("(sleep 1000 & sleep 1001) ; sleep 1002", 1)
        assert timed.timed_out
        left = await sandbox.run("cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' '", 30)
        assert "sleep 100" not in left.output, left.output  # the whole process group was killed
    finally:
        await sandbox.close()
    assert sandbox.name not in _containers()


async def test_containers_of_a_killed_runner_are_reaped_by_the_next(tmp_path, base_image):
    """A runner killed by SIGKILL leaves its container; the next sandbox start removes it (its owner
    pid is dead), and leaves a live owner's container alone."""
    dead = subprocess.Popen(["true"])
    dead.wait()
    from agentrig.bench.terminal.sandbox.docker import OWNER_LABEL, _boot_id

    cli = engine_cli("podman")
    for name, owner in (("agentrig-orphan-test", dead.pid), ("agentrig-live-test", os.getpid())):
        subprocess.run([*cli, "run", "-d", "--name", name, "--label", f"{OWNER_LABEL}={owner}@{_boot_id()}",
                        base_image, "sleep", "infinity"], check=True, stdout=subprocess.DEVNULL)
    try:
        task = make_task(tmp_path, f"FROM {base_image}\n")
        sandbox = await open_sandbox(task, settings(tmp_path, kind="podman"))
        await sandbox.close()
        left = _containers()
        assert "agentrig-orphan-test" not in left and "agentrig-live-test" in left
    finally:
        for name in ("agentrig-orphan-test", "agentrig-live-test"):  # one by one: podman 4.3 stops at a missing one
            subprocess.run([*cli, "rm", "-f", "-t", "0", name], capture_output=True)
