"""The services beside the agent's (a compose file's mock web server, API …) under bwrap.

Each service is a sibling sandbox of the agent's: its own build layer on its own base root (its
Dockerfile replayed like the agent's, cached the same way), its own pid, mount, ipc and uts
namespaces and writable layer — and the trial's network namespace, which it joins, so the agent
reaches it at its name (``/etc/hosts``: 127.0.0.1) on the port it listens on, and nothing of it
listens on the host. Started in ``depends_on`` order before the agent's phase, each runs its
command (the compose ``entrypoint``/``command``, else the image's ``ENTRYPOINT``/``CMD``) and is
waited for (``readiness.py``: its healthcheck, else its ports). A service that exits or never gets
ready is the task's fault (``TaskBuildError``: a broken task, with its output's tail). They are closed
with the trial's sandbox (``BwrapSandbox.attach``): nothing is left running.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from ..core.base import SandboxSettings, TaskBuildError
from ..tasks.compose import Compose, Service
from ..tasks.dockerfile import parse_dockerfile
from .readiness import wait_ready

GONE_WAIT_S = 10.0  # how long a closed service's processes may take to end (the kernel kills them)


def service_argv(service: Service, plan_entrypoint: list[str] | None, plan_cmd: list[str] | None) -> list[str]:
    """What the service runs, by Docker's rules: compose ``entrypoint`` replaces the image's (and drops its
    CMD), compose ``command`` replaces the CMD; the entrypoint, then the command."""
    entrypoint = service.entrypoint if service.entrypoint is not None else plan_entrypoint
    command = service.command if service.command is not None else (None if service.entrypoint is not None else plan_cmd)
    return [*(entrypoint or []), *(command or [])]


class RunningService:
    """One service's sandbox and its main process (``readiness.Started``)."""

    def __init__(self, service: Service, sandbox: Any, log: Path, argv: list[str], expose: list[int]) -> None:
        self.service, self.sandbox, self.log, self.argv = service, sandbox, log, argv
        self.ports = service.ports or expose  # what readiness probes when there is no healthcheck
        self.proc: Any = None

    async def exit_code(self) -> int | None:
        return self.proc.returncode if self.proc is not None else None

    async def run_inside(self, argv: list[str], timeout_s: float) -> tuple[int | None, str]:
        result = await self.sandbox.exec(argv, timeout_s)  # from its working directory, as Docker's healthcheck
        return result.exit_code, result.output

    async def output_tail(self, limit: int = 1500) -> str:
        try:
            return self.log.read_text(errors="replace")[-limit:].strip()
        except OSError:
            return ""

    async def close(self) -> None:
        """Close the service's sandbox and wait until its pid namespace's init has ended (its
        processes are killed with it): nothing of the service outlives the trial's close."""
        init = self.sandbox.init_pid
        if self.proc is not None and self.proc.returncode is None:
            with contextlib.suppress(Exception):
                await self.sandbox.stop(self.proc)  # first, while its spawner can reap it
        await self.sandbox.close()
        deadline = time.monotonic() + GONE_WAIT_S
        while init is not None and _alive(init) and time.monotonic() < deadline:
            await asyncio.sleep(0.02)


def _alive(pid: int) -> bool:
    """The process runs (neither gone nor a zombie waiting to be reaped)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rsplit(b")", 1)[1].split()[0] not in (b"Z", b"X")
    except (OSError, IndexError):
        return False


async def service_layer(service: Service, settings: SandboxSettings) -> tuple[Any, Any, Any, Any]:
    """(plan, recipe, base root, layer) of a service: its Dockerfile replayed on its base (cached like
    the agent's; ``availability.build_check`` builds it before a run). Raises TaskBuildError naming the
    service (with ``recipe`` set on it: a failure on a stand-in base is said so)."""
    from .base_roots import base_root as _base_root
    from .build import ensure_layer

    assert service.dockerfile is not None
    plan = parse_dockerfile(service.dockerfile, service.build_context)
    if not plan.supported:
        raise TaskBuildError(f"service '{service.name}': {plan.reason}", exclusion="needs_services")
    workdir = plan.workdir if plan.has_workdir else "/"
    as_task = SimpleNamespace(id=service.name, path=service.build_context, build_context=service.build_context,
                              workdir=workdir)
    recipe, base_root = await _base_root(plan, settings)
    try:
        layer = await ensure_layer(as_task, plan, settings, recipe, base_root)
    except TaskBuildError as exc:
        failed = TaskBuildError(f"service '{service.name}': {exc}", exclusion=exc.exclusion)
        failed.recipe = recipe  # type: ignore[attr-defined]
        raise failed from None
    return plan, recipe, base_root, layer


async def _service_sandbox(service: Service, compose: Compose, settings: SandboxSettings, agent: Any,
                           label: str, limits: tuple[int | None, int | None, float | None]) -> RunningService:
    from .bwrap import BwrapSandbox, new_trial_dir

    plan, recipe, base_root, layer = await service_layer(service, settings)
    entrypoint, cmd = plan.entrypoint, plan.cmd
    if entrypoint is None and cmd is None and recipe is not None:
        cmd = list(getattr(recipe, "cmd", None) or []) or None  # the base image's CMD
    argv = service_argv(service, entrypoint, cmd)
    if not argv:
        raise TaskBuildError(f"service '{service.name}' has no command (no compose command, no CMD or ENTRYPOINT)")
    trial_dir = new_trial_dir(settings.resolved_cache_dir(), f"{label}-{service.name}")
    memory_mb, pids, cpus = limits
    runtime = {"extra_hosts": service.extra_hosts, "service_names": compose.hostnames(), "dns": service.dns or None}
    sandbox = BwrapSandbox(trial_dir=trial_dir, layer_dir=layer.path, workdir=service.working_dir or layer.workdir,
                           env={**layer.env, "HOSTNAME": service.name, **service.environment}, network=False,
                           netns_pid=agent.init_pid, hostname=service.name, runtime=runtime, keep=settings.keep,
                           output_limit=settings.output_limit, memory_mb=memory_mb, pids=pids, cpus=cpus,
                           bwrap=settings.bwrap_path, base_root=base_root)
    running = RunningService(service, sandbox, trial_dir / "service.log", argv, plan.expose)
    await sandbox.start()
    return running


async def start_services(compose: Compose, settings: SandboxSettings, agent: Any, label: str,
                         limits: tuple[int | None, int | None, float | None]) -> None:
    """Start every service beside the agent's in the agent's network namespace and wait until each is
    ready; each is attached to the agent's sandbox (closed with it). Raises TaskBuildError (the
    task's fault) or SandboxError."""
    for service in compose.start_order():
        running = await _service_sandbox(service, compose, settings, agent, label, limits)
        agent.attach(running)
        running.proc = await running.sandbox.launch(running.argv, running.log)
        waiter = asyncio.ensure_future(running.proc.wait())  # sets proc.returncode when it ends
        try:
            await wait_ready(running)
        finally:
            if not waiter.done():
                waiter.cancel()
                with contextlib.suppress(BaseException):
                    await waiter
