"""Helpers for the podman tests: Debian's podman with runc, base images imported from roots built
from packages. Skipped where podman, runc or mmdebstrap is missing, except in CI (env CI=true),
where missing tools fail the test."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess

import pytest

from agentrig.bench.terminal.sandbox.engine import OWNER_LABEL, engine_cli, engine_problem

BASE = "ghcr.io/laude-institute/t-bench/python-3-13"

_MISSING = [t for t in ("podman", "runc", "mmdebstrap") if shutil.which(t) is None]
PROBLEM = asyncio.run(engine_problem("podman")) if not _MISSING else f"missing {', '.join(_MISSING)}"


def need_podman() -> None:
    if PROBLEM:
        if os.environ.get("CI") == "true":
            pytest.fail(f"podman sandbox unavailable in CI: {PROBLEM}")
        pytest.skip(f"podman sandbox unavailable: {PROBLEM}")


def podman(*args: str, check: bool = False) -> subprocess.CompletedProcess:
    return subprocess.run([*engine_cli("podman"), *args], capture_output=True, text=True, check=check)


def owned_containers(pid: int | None = None) -> list[str]:
    """Names of the containers agentrig made (all, or those of the runner `pid`)."""
    out = podman("ps", "-a", "--filter", f"label={OWNER_LABEL}", "--format", f'{{{{.Names}}}} {{{{index .Labels "{OWNER_LABEL}"}}}}')
    return [line.split()[0] for line in out.stdout.splitlines()
            if line.strip() and (pid is None or line.split()[1].startswith(f"{pid}@"))]


def owned_images(pid: int | None = None) -> list[str]:
    """Tags of the task images agentrig built (all, or those of the runner `pid`)."""
    out = podman("images", "--filter", f"label={OWNER_LABEL}", "--format", f'{{{{.Repository}}}}:{{{{.Tag}}}} {{{{index .Labels "{OWNER_LABEL}"}}}}')
    return [line.split()[0] for line in out.stdout.splitlines()
            if line.strip() and (pid is None or line.split()[1].startswith(f"{pid}@"))]


def volumes() -> list[str]:
    return podman("volume", "ls", "-q").stdout.split()


@pytest.fixture(scope="module")
def base_image():
    """TB's python-3-13 imported into podman (a module's tests share it); the task images the
    module's tests built are removed after them."""
    from agentrig.bench.terminal.sandbox.container_images import remove_task_images

    need_podman()
    yield import_base_image()
    remove_task_images()


def import_base_image(ref: str = BASE) -> str:
    """TB's python-3-13 (or `ref`): our root built from Debian packages, imported under that name."""
    from agentrig.bench.terminal.sandbox.container_images import import_base

    return import_base(ref, "podman")


def killed_runner(tmp_path, task_dir, cache_dir, task_expr: str = "load_task(d)", kind: str = "podman") -> int:
    """A runner process that opens a podman (or `kind`) sandbox for the task in `task_dir` (``task_expr`` makes
    the task from ``d``, its directory), says so, and is killed by SIGKILL: its pid (what it left
    carries its owner label)."""
    import signal
    import sys
    import textwrap

    script = tmp_path / "runner.py"
    script.write_text(textwrap.dedent(f"""
        import asyncio, time
        from pathlib import Path
        from agentrig.bench.terminal.sandbox import SandboxSettings, open_sandbox
        from agentrig.bench.terminal.tasks.taskfile import load_task
        from agentrig.bench.terminal.tasks.taskmodel import TerminalTask

        d = Path({str(task_dir)!r})

        async def main():
            await open_sandbox({task_expr}, SandboxSettings(kind={kind!r}, cache_dir=Path({str(cache_dir)!r})))
            print("ready", flush=True)
            time.sleep(600)

        asyncio.run(main())
    """))
    runner = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    try:
        assert runner.stdout is not None and runner.stdout.readline().strip() == "ready"
    finally:
        runner.send_signal(signal.SIGKILL)
        runner.wait()
    return runner.pid
