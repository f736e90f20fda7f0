"""Helpers for the docker sandbox's tests: Debian's docker.io (dockerd with runc) — the daemon that
answers or agentrig's own started for the session (``docker_daemon``, tests/dockerd.py) — with base
images imported from roots built from packages, as podman's tests have them (podman_support.py)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from agentrig.bench.terminal.sandbox.engine import OWNER_LABEL, engine_cli, labelled

from ...dockerd import need_docker, required
from .podman_support import BASE


def docker(*args: str, check: bool = False) -> subprocess.CompletedProcess:
    return subprocess.run([*engine_cli("docker"), *args], capture_output=True, text=True, check=check)


def owned_containers(pid: int | None = None) -> list[str]:
    """Names of the containers agentrig made in docker (all, or those of the runner `pid`)."""
    return [name for _, name, owner in labelled(engine_cli("docker"), "containers", OWNER_LABEL)
            if pid is None or owner.startswith(f"{pid}@")]


def owned_images(pid: int | None = None) -> list[str]:
    """Tags of the task images agentrig built in docker (all, or those of the runner `pid`)."""
    return [name for _, name, owner in labelled(engine_cli("docker"), "images", OWNER_LABEL)
            if pid is None or owner.startswith(f"{pid}@")]


def volumes() -> list[str]:
    return docker("volume", "ls", "-q").stdout.split()


@pytest.fixture(scope="module")
def docker_base(docker_daemon):
    """TB's python-3-13 imported into docker (a module's tests share it); the task images the
    module's tests built are removed after them."""
    from agentrig.bench.terminal.sandbox.container_images import import_base, remove_task_images

    need_docker(docker_daemon)
    if shutil.which("mmdebstrap") is None:
        if required():
            pytest.fail("mmdebstrap is missing: the base images are built from packages with it")
        pytest.skip("mmdebstrap is missing: the base images are built from packages with it")
    yield import_base(BASE, "docker")
    remove_task_images()
