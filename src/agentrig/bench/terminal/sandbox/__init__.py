"""Sandboxes for terminal tasks: ``open_sandbox(task, settings)`` builds (cached) and starts one.

Kinds: ``bwrap`` (default; see bwrap.py), ``docker``/``podman`` (a container per trial, when a
daemon answers), ``local`` (a temporary directory, no isolation, with a warning).
``sandbox_check(kind)`` lists what works and what does not here (``agentrig doctor --sandbox``).

Floor 3 of the package: the sandboxes import ``core/``, ``shell.py``, ``images/`` and ``tasks/``
below them; only the package's own modules (the episode, the verifier's caller, the audit, the
commands) import them. ``zygote.py``, ``nsutil.py``, ``pytest_server.py`` and ``reaper.py`` are run
or loaded by path (the standard library only), never imported by the package.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from agentrig.procs import finish_despite_cancel

from ..core.base import (
    BASE_ENV,
    SANDBOX_KINDS,
    CommandResult,
    Sandbox,
    SandboxError,
    SandboxSettings,
    TaskBuildError,
    effective_limits,
)
from ..tasks.compose import compose_tmpfs
from ..tasks.compose_check import check_compose
from ..tasks.dockerfile import BuildPlan, parse_dockerfile
from .base_roots import base_root as _base_root

__all__ = [
    "BASE_ENV", "SANDBOX_KINDS", "CommandResult", "Finding", "Sandbox", "SandboxError", "SandboxSettings",
    "TaskBuildError", "build_plan", "open_sandbox", "sandbox_check",
]


def build_plan(task: Any, kind: str = "bwrap") -> BuildPlan:
    """The task's plan: its Dockerfile (and the compose file's agent service), or an empty plan at its workdir."""
    compose = getattr(task, "compose", None)
    if compose is not None:
        reason = check_compose(compose, kind)
        if reason:
            return BuildPlan(supported=False, reason=reason)
    dockerfile = getattr(task, "dockerfile", None)
    if dockerfile is None:
        if getattr(task, "docker_image", None):
            return BuildPlan(supported=False, reason=f"needs_container: a prebuilt image ({task.docker_image}) and no Dockerfile")
        return BuildPlan(supported=True, workdir=getattr(task, "workdir", "/app"), has_workdir=True)
    context = getattr(task, "build_context", None) or Path(dockerfile).parent
    return parse_dockerfile(Path(dockerfile), Path(context))


async def open_sandbox(task: Any, settings: SandboxSettings, *, label: str | None = None) -> Sandbox:
    """Build the task's layer (cached) and start a sandbox for one trial.

    Raises ``TaskBuildError`` (broken task / needs_*) or ``SandboxError`` (infrastructure)."""
    network, memory_mb, pids, cpus = effective_limits(task, settings)
    plan = build_plan(task, settings.kind)
    if not plan.supported and settings.kind in ("bwrap", "local"):
        reason = plan.reason or "unsupported Dockerfile"
        raise TaskBuildError(reason, exclusion="needs_services" if reason.startswith("needs_services") else "needs_container")
    workdir = plan.workdir if plan.has_workdir else getattr(task, "workdir", "/app")
    compose = _compose_of(task)
    services = bool(compose and compose.others)  # they run beside the agent's in the trial's own network
    folder_binds = _binds_of(task, settings.kind)  # the task's folder, a private copy in the trial
    if settings.kind == "bwrap":
        from .build import ensure_layer
        from .bwrap import BwrapSandbox, new_trial_dir

        recipe, base_root = await _base_root(plan, settings)
        layer = await ensure_layer(task, plan, settings, recipe, base_root)
        trial_dir = new_trial_dir(settings.resolved_cache_dir(), label or str(getattr(task, "id", "trial")))
        binds, env = {}, dict(layer.env)
        trial_settings = settings.trial_host_settings() if network else None
        if trial_settings:  # the trial fetches as the build did (under "auto": with the CA bundle alone)
            from .build import host_settings_binds

            binds, extra = host_settings_binds(ca_only=trial_settings == "ca")
            env.update(extra)
        sandbox: Any = BwrapSandbox(
            trial_dir=trial_dir, layer_dir=layer.path, workdir=layer.workdir, env=env, network=network and not services,
            ro_binds=binds, shell=settings.shell, output_limit=settings.output_limit, keep=settings.keep,
            memory_mb=memory_mb, pids=pids, cpus=cpus, bwrap=settings.bwrap_path,
            warm_verifier=settings.warm_verifier, base_root=base_root,
            tmpfs=compose_tmpfs(task.compose) if getattr(task, "compose", None) is not None else None,
            runtime=_runtime_files(compose), binds=folder_binds,
        )
    elif settings.kind == "local":
        from .local import LocalSandbox

        context = getattr(task, "build_context", None)
        sandbox = LocalSandbox(plan=plan, context=Path(context) if context else None, workdir=workdir, env=plan.env,
                               shell=settings.shell, output_limit=settings.output_limit, keep=settings.keep,
                               cache_dir=settings.resolved_cache_dir(), build_timeout_s=settings.build_timeout_s)
    else:
        from .docker import ContainerSandbox

        extra = _runtime_files(compose) or {}
        sandbox = ContainerSandbox(engine=settings.kind, task=task, network=network, workdir=workdir, env=plan.env,
                                   memory_mb=memory_mb, pids=pids, cpus=cpus, shell=settings.shell,
                                   output_limit=settings.output_limit, keep=settings.keep,
                                   build_network=settings.build_mode(), build_timeout_s=settings.build_timeout_s,
                                   host_settings=(settings.trial_host_settings() or False) if network else False,
                                   extra_hosts=extra.get("extra_hosts"), service_names=extra.get("service_names"),
                                   dns=extra.get("dns"), binds=folder_binds)
    await sandbox.start()
    if settings.kind == "bwrap":
        sandbox.build_unreached = layer.unreached  # what the build could not fetch (the trial records it)
        if services:
            await _with_services(sandbox, compose, settings, network, label or str(getattr(task, "id", "trial")),
                                 (memory_mb, pids, cpus))
        if (argv := plan.start_argv()) is not None:
            await start_entrypoint(sandbox, argv)
    elif settings.kind in ("docker", "podman") and services:
        from .container_services import start_container_services

        try:
            await start_container_services(sandbox, compose)
        except BaseException:
            with contextlib.suppress(Exception):  # removed to the end even while Ctrl-C goes on (procs.py)
                await finish_despite_cancel(sandbox.close(), 20)
            raise
    return sandbox


async def start_entrypoint(sandbox: Any, argv: list[str]) -> None:
    """Start the image's ENTRYPOINT (``argv``: it with ``sleep infinity``) in the background, from
    the workdir with the image's environment, as a container engine starts a container's first
    process: services it starts (cron, a daemon, a loop) run before the agent's first command, as
    in Docker and podman. Its output goes to the trial directory's ``entrypoint.log`` (kept with
    ``keep = true``), as a detached container's goes to its log."""
    await sandbox.launch(argv, sandbox.trial_dir / "entrypoint.log")


def _compose_of(task: Any) -> Any:
    """The task's compose file read (``compose.Compose``), or None."""
    if getattr(task, "compose", None) is None:
        return None
    from ..tasks.compose import ComposeError, read_compose

    try:
        return read_compose(task.compose)
    except ComposeError:
        return None  # build_plan has refused it already


def _binds_of(task: Any, kind: str) -> list:
    """The compose file's binds of the task's own folder (``compose_volumes.Bind``), each given to
    the trial as a private copy; a volume no sandbox honours is ``needs_container`` (bwrap's and
    local's plan refused it already; on podman and docker it is found here)."""
    if getattr(task, "compose", None) is None or kind == "local":
        return []
    from ..tasks.compose import ComposeError
    from ..tasks.compose_volumes import agent_binds

    try:
        return agent_binds(task.compose)
    except ComposeError as exc:
        raise TaskBuildError(f"needs_container: {exc}", exclusion="needs_container") from None


def _runtime_files(compose: Any) -> dict | None:
    """What the trial's /etc/hosts and resolv.conf hold beyond the engine's defaults
    (``runtime_files.py``): the agent service's ``extra_hosts`` and ``dns``, the services' names.
    None when the compose file asks for nothing (on the host's root its own files then stay)."""
    agent = compose.agent_service if compose is not None else None
    if agent is None or not (agent.extra_hosts or agent.dns or compose.others):
        return None
    return {"extra_hosts": agent.extra_hosts, "service_names": compose.hostnames(), "dns": agent.dns or None}


async def _with_services(sandbox: Any, compose: Any, settings: SandboxSettings, network: bool, label: str,
                         limits: tuple) -> None:
    """Give the trial's own network namespace the host's outbound network (when it has the network)
    and start the services beside the agent's in it (``services.py``); on failure nothing is left."""
    from .services import start_services
    from .slirp import Slirp

    try:
        if network:
            slirp = Slirp(sandbox.init_pid)
            sandbox.attach(slirp)
            await slirp.start()
        await start_services(compose, settings, sandbox, label, limits)
    except BaseException:
        with contextlib.suppress(Exception):  # removed to the end even while Ctrl-C goes on (procs.py)
            await finish_despite_cancel(sandbox.close(), 20)
        raise


class Finding(BaseModel):
    kind: str  # the sandbox kind
    check: str  # what was checked
    ok: bool
    detail: str  # what was found, or why not and what to do


async def _bwrap_findings(settings: SandboxSettings) -> list[Finding]:
    from . import cgroup
    from .bwrap import BwrapSandbox, bwrap_binary, new_trial_dir

    out: list[Finding] = []
    try:
        binary = bwrap_binary(settings.bwrap_path)
        out.append(Finding(kind="bwrap", check="binary", ok=True, detail=str(binary)))
    except SandboxError as exc:
        return [Finding(kind="bwrap", check="binary", ok=False, detail=str(exc))]
    if os.geteuid() != 0:
        out.append(Finding(kind="bwrap", check="root", ok=False,
                           detail="not running as root: commands enter the sandbox with setns, which needs root here"))
    why = cgroup.available()
    out.append(Finding(kind="bwrap", check="cgroups", ok=why is None,
                       detail="per-trial pids/memory/cpu cgroups (v1) are writable" if why is None else
                       f"{why}: the memory/process bounds are not enforced; timeouts kill the process group only"))
    trial = new_trial_dir(settings.resolved_cache_dir(), "doctor")
    sandbox = BwrapSandbox(trial_dir=trial, layer_dir=None, workdir="/", env={}, network=False, bwrap=binary)
    try:
        await sandbox.start()
        result = await sandbox.run("echo sandbox-ok", 30)
        ok = result.exit_code == 0 and "sandbox-ok" in result.output
        out.append(Finding(kind="bwrap", check="start", ok=ok, detail="a trial sandbox starts and runs bash" if ok else result.output[-300:]))
    except SandboxError as exc:
        out.append(Finding(kind="bwrap", check="start", ok=False, detail=str(exc)))
    finally:
        await sandbox.close()
    return out


async def sandbox_check(kind: str, settings: SandboxSettings | None = None) -> list[Finding]:
    """What works for ``kind`` on this machine (for ``agentrig doctor --sandbox``)."""
    settings = settings or SandboxSettings()
    if kind not in SANDBOX_KINDS:
        return [Finding(kind=kind, check="kind", ok=False, detail=f"unknown sandbox kind; use one of {', '.join(SANDBOX_KINDS)}")]
    if kind == "bwrap":
        return await _bwrap_findings(settings)
    if kind == "local":
        ok = shutil.which("bash") is not None
        return [Finding(kind="local", check="bash", ok=ok,
                        detail="runs commands on this machine WITHOUT isolation" if ok else "no bash on PATH")]
    from .docker import engine_info

    problem, info = await engine_info(kind)
    check = "engine" if kind == "podman" else "daemon"  # podman runs without a daemon
    return [Finding(kind=kind, check=check, ok=problem is None, detail=problem or f"{info} (answers)")]


def sandbox_check_sync(kind: str) -> list[Finding]:
    return asyncio.run(sandbox_check(kind))
