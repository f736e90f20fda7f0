"""When a service beside the agent's is ready, for every sandbox that runs services.

A service is waited for as ``depends_on: condition: service_healthy`` waits for it: its
``healthcheck`` (``CMD``, ``CMD-SHELL``) run inside it until it passes; without one, each port it
declares (``ports``, ``expose``, the Dockerfile's ``EXPOSE``) until it accepts a connection; with
neither, it is ready once started. The budget is the healthcheck's own (``start_period + retries ×
(interval + timeout)``) or ``READY_MIN_S``, whichever is longer (a loaded machine starts servers
slowly; polling is faster than Docker's interval). A service that exits first, or is not ready
within the budget, is the task's fault: ``TaskBuildError`` with the service's output's tail.
"""

from __future__ import annotations

import asyncio
import time
from typing import Protocol

from ..core.base import TaskBuildError
from ..tasks.compose import Service

READY_MIN_S = 60.0
POLL_S = 0.25


class Started(Protocol):
    """A started service, as the sandbox that runs it sees it."""

    service: Service
    ports: list[int]  # what is probed without a healthcheck

    async def exit_code(self) -> int | None:
        """Its main process's exit status once it has ended, else None."""
        ...

    async def run_inside(self, argv: list[str], timeout_s: float) -> tuple[int | None, str]:
        """(exit code, output) of a command run inside the service."""
        ...

    async def output_tail(self) -> str:
        """The end of what its main process wrote."""
        ...


def port_probe(port: int) -> list[str]:
    """A connection to the port on the shared loopback (bash's /dev/tcp: Debian's Essential bash)."""
    return ["bash", "-c", f"exec 3<>/dev/tcp/127.0.0.1/{port}"]


def ready_budget(service: Service) -> float:
    check = service.healthcheck
    if check is None:
        return READY_MIN_S
    return max(check.start_period_s + (check.interval_s + check.timeout_s) * max(check.retries, 1), READY_MIN_S)


async def _probe(started: Started) -> tuple[bool, str]:
    check = started.service.healthcheck
    if check is not None:
        code, out = await started.run_inside(check.command(), max(check.timeout_s, 1.0))
        return code == 0, out.strip()[-300:]
    for port in started.ports:
        code, out = await started.run_inside(port_probe(port), 10)
        if code != 0:
            return False, f"port {port}: {out.strip()[-200:] or 'refused'}"
    return True, ""


async def wait_ready(started: Started) -> None:
    """Until the service is ready (above); TaskBuildError when it exits or the budget ends first."""
    service = started.service
    budget = ready_budget(service)
    deadline = time.monotonic() + budget
    while True:
        code = await started.exit_code()
        if code is not None:
            raise TaskBuildError(f"service '{service.name}' exited {code} before it was ready:\n"
                                 f"{await started.output_tail()}")
        ready, said = await _probe(started)
        if ready:
            return
        if time.monotonic() > deadline:
            what = "its healthcheck did not pass" if service.healthcheck else "its ports did not accept a connection"
            raise TaskBuildError(f"service '{service.name}' was not ready within {budget:.0f} s ({what}: {said}):\n"
                                 f"{await started.output_tail()}")
        await asyncio.sleep(POLL_S)
