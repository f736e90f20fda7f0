"""The terminal tests' shared fixture: the Docker daemon the docker sandbox's tests use (tests/dockerd.py)."""

from __future__ import annotations

import pytest

from ...dockerd import DockerDaemon


@pytest.fixture(scope="session")
def docker_daemon():
    """The daemon that answers, else agentrig's own started for this session (and stopped after it,
    by PID, when this session started it): ``.host`` / ``.problem``."""
    with DockerDaemon() as daemon:
        yield daemon
