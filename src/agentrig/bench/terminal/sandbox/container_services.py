"""The services beside the agent's in the podman and docker sandboxes: containers in the agent's network namespace.

As compose runs them, minus the bridge network: each service's image is built from its Dockerfile
(once per runner, like the task's: ``container_images.task_image``), and its container joins the
agent container's network namespace (``--network container:AGENT``), so the agent reaches it at
its name (the agent container's ``--add-host NAME:127.0.0.1``) on the port it listens on, and two
trials never share a port. The compose ``entrypoint``/``command``, ``environment`` and
``working_dir`` are passed to ``run`` (podman takes the entrypoint as a JSON array, docker one
executable whose arguments lead the command's); the image's ``ENTRYPOINT``/``CMD`` apply otherwise.
Each is waited for as under bwrap (``readiness.py``, the probes run by ``exec`` in the service's
container). They carry the runner's owner label (a killed runner's are reaped with its other
containers) and are removed before the agent's container (which they depend on) at close.
"""

from __future__ import annotations

import json
import re
from types import SimpleNamespace
from typing import Any

from ..core.base import SandboxError, TaskBuildError
from ..tasks.compose import Compose, Service
from .engine import OWNER_LABEL, _call, _no_grace, _owner
from .readiness import wait_ready

SERVICE_LABEL = "agentrig.service"  # the service's name, on its container


class ContainerService:
    """One service's container (``readiness.Started``)."""

    def __init__(self, service: Service, cli: list[str], name: str, ports: list[int], keep: bool = False) -> None:
        self.service, self.cli, self.name, self.ports, self.keep = service, cli, name, ports, keep

    async def exit_code(self) -> int | None:
        code, out = await _call([*self.cli, "inspect", "--format", "{{.State.Running}} {{.State.ExitCode}}", self.name], 60)
        words = out.split()
        if code != 0 or len(words) < 2:
            return -1  # the container is gone
        return None if words[-2] == "true" else int(words[-1]) if words[-1].lstrip("-").isdigit() else -1

    async def run_inside(self, argv: list[str], timeout_s: float) -> tuple[int | None, str]:
        code, out = await _call([*self.cli, "exec", self.name, *argv], timeout_s)
        return (None if code == 124 else code), out

    async def output_tail(self, limit: int = 1500) -> str:
        _, out = await _call([*self.cli, "logs", "--tail", "40", self.name], 60)
        return out[-limit:].strip()

    async def close(self) -> None:
        await _call([*self.cli, "stop" if self.keep else "rm", *([] if self.keep else ["-f", "-v", *_no_grace(self.cli)]),
                     self.name], 60)


def run_argv(cli: list[str], service: Service, name: str, agent: str, tag: str,
             limits: tuple[int | None, int | None, float | None]) -> list[str]:
    """``run -d`` of the service's container in the agent container's network namespace."""
    memory_mb, pids, cpus = limits
    argv = [*cli, "run", "-d", "--name", name, "--network", f"container:{agent}",
            "--label", f"{OWNER_LABEL}={_owner()}", "--label", f"{SERVICE_LABEL}={service.name}"]
    for key, value in service.environment.items():
        argv += ["-e", f"{key}={value}"]
    argv += ["-w", service.working_dir] if service.working_dir else []
    rest: list[str] = []  # docker's --entrypoint is one executable: its arguments go before the command's
    if service.entrypoint is not None and cli[-1] == "podman":  # podman reads a JSON array
        argv += ["--entrypoint", json.dumps(service.entrypoint)]
    elif service.entrypoint is not None:
        argv += ["--entrypoint", service.entrypoint[0] if service.entrypoint else ""]
        rest = service.entrypoint[1:]
    argv += ["--memory", f"{memory_mb}m"] if memory_mb else []
    argv += ["--pids-limit", str(pids)] if pids else []
    argv += ["--cpus", str(cpus)] if cpus else []
    return [*argv, tag, *rest, *(service.command or [])]


async def start_container_services(box: Any, compose: Compose) -> None:
    """Build and start every service beside the agent's in ``box``'s network namespace (a started
    ``ContainerSandbox``), each attached to it and waited for. Raises TaskBuildError / SandboxError."""
    from ..tasks.dockerfile import parse_dockerfile
    from .container_images import task_image

    for service in compose.start_order():
        as_task = SimpleNamespace(id=f"{getattr(box.task, 'id', 'task')}-{service.name}", dockerfile=service.dockerfile,
                                  build_context=service.build_context)
        try:
            tag = await task_image(box.engine, as_task, build_network=box.build_network, timeout_s=box.build_timeout_s)
        except TaskBuildError as exc:
            raise TaskBuildError(f"service '{service.name}': {exc}", exclusion=exc.exclusion) from None
        expose = parse_dockerfile(service.dockerfile, service.build_context).expose if service.dockerfile else []
        name = f"{box.name}-{re.sub(r'[^a-zA-Z0-9_.-]', '-', service.name)}"[:100]
        started = ContainerService(service, box.cli, name, service.ports or expose, keep=box.keep)
        box.attach(started)
        code, out = await _call(run_argv(box.cli, service, name, box.name, tag, box.limits), 120)
        if code in (126, 127):  # its command cannot be run (not found, not executable): the task's fault
            raise TaskBuildError(f"service '{service.name}' cannot start its command: {out.strip()[-500:]}")
        if code != 0:
            raise SandboxError(f"{box.engine} run of service '{service.name}' failed: {out.strip()[-500:]}")
        await wait_ready(started)
