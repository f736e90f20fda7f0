"""A Docker daemon for the docker sandbox's tests: the one that answers, else agentrig's own, started
by ``scripts/start-dockerd.sh`` (data under ``engine.dockerd_dir()``: the imported base images stay
for the next session) and stopped, by its PID, only by the session that started it — after every
other test process using it is done (``make test``'s xdist workers share one daemon: each holds a
shared lock on ``users.lock`` while it runs; the starter takes it exclusively before it stops the
daemon).

No daemon can be started (no dockerd, not root, it does not answer): the docker tests skip saying
why — or fail under CI (``CI=true``) or ``AGENTRIG_REQUIRE_DOCKER=1``."""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from agentrig.bench.terminal.sandbox.engine import dockerd_dir

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "start-dockerd.sh"


def required() -> bool:
    return os.environ.get("CI") in ("1", "true", "yes") or os.environ.get("AGENTRIG_REQUIRE_DOCKER") == "1"


class DockerDaemon:
    """``with DockerDaemon() as d``: ``d.host`` (the ``DOCKER_HOST`` it answers on, also set in this
    process's environment meanwhile) or ``d.problem``; ``d.started``: the PID this process started."""

    def __init__(self, directory: Path | None = None) -> None:
        self.dir = Path(directory or dockerd_dir())
        self.host: str | None = None
        self.problem: str | None = None
        self.started: int | None = None
        self._users: int | None = None
        self._saved = os.environ.get("DOCKER_HOST")

    def __enter__(self) -> "DockerDaemon":
        self.dir.mkdir(parents=True, exist_ok=True)
        self._users = os.open(self.dir / "users.lock", os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(self._users, fcntl.LOCK_SH)  # waits while a starter stops its daemon
        start = os.open(self.dir / "start.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(start, fcntl.LOCK_EX)
            done = subprocess.run([str(SCRIPT), str(self.dir)], capture_output=True, text=True, timeout=120)
        except (OSError, subprocess.SubprocessError) as exc:
            self.problem = f"{SCRIPT.name} could not run: {exc}"
            return self
        finally:
            os.close(start)
        for line in done.stdout.splitlines():
            if line.startswith("DOCKER_HOST="):
                self.host = line.split("=", 1)[1]
            elif line.startswith("started "):
                self.started = int(line.split()[1])
        if done.returncode != 0 or self.host is None:
            self.problem = (done.stderr.strip() or f"{SCRIPT.name} exited {done.returncode}").splitlines()[0]
        else:
            os.environ["DOCKER_HOST"] = self.host
        return self

    def __exit__(self, *exc: object) -> None:
        if self._saved is None:
            os.environ.pop("DOCKER_HOST", None)
        else:
            os.environ["DOCKER_HOST"] = self._saved
        if self._users is None:
            return
        try:
            if self.started is not None:
                fcntl.flock(self._users, fcntl.LOCK_EX)  # every other user of the daemon is done
                stop(self.started)
        finally:
            os.close(self._users)


def stop(pid: int, timeout_s: float = 60) -> None:
    """End the dockerd `pid` this process started (SIGTERM: it stops its containers and its
    containerd), SIGKILL past `timeout_s`."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    os.kill(pid, signal.SIGKILL)


def need_docker(daemon: DockerDaemon) -> None:
    """Skip (fail when required) unless the daemon answers."""
    if daemon.problem:
        if required():
            pytest.fail(f"docker sandbox unavailable (required under CI / AGENTRIG_REQUIRE_DOCKER=1): {daemon.problem}")
        pytest.skip(f"docker sandbox unavailable: {daemon.problem}")
