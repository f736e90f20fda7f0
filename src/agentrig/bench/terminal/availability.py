"""What this machine's sandboxes can do with a task, before anything is played: whether bwrap can
work at all, which sandbox kind can run a task (``task_support``), the build check that finds a
task whose own build fails, and the local sandbox's one warning per run. Used by the benchmark,
``audit`` and ``tasks list`` alike (so none of them imports another)."""

from __future__ import annotations

import os
from typing import Any

from .core.base import SandboxSettings

__all__ = ["bwrap_problem", "build_check", "task_support", "warn_local_once"]


def bwrap_problem(settings: SandboxSettings) -> str | None:
    """Why the bwrap sandbox cannot work here at all (None: it may). Cheap: no sandbox is started."""
    from .sandbox import SandboxError
    from .sandbox.bwrap import bwrap_binary

    try:
        binary = bwrap_binary(settings.bwrap_path)
    except SandboxError as exc:
        return str(exc)
    if not os.access(binary, os.X_OK):
        return f"{binary} is not an executable file"
    if os.geteuid() != 0:
        return "not running as root: the bwrap sandbox enters its namespaces with setns, which needs root here"
    return None


def warn_local_once() -> None:
    """The local sandbox warns at every start; a run or an audit shows the warning once, here."""
    import warnings

    from .sandbox.local import WARNING

    warnings.warn(WARNING, UserWarning, stacklevel=3)
    warnings.filterwarnings("ignore", message="sandbox kind 'local' runs task commands", category=UserWarning)


def task_support(task: Any, kind: str, network: bool | None = None) -> Any:
    """``taskmodel.support``, plus what the local sandbox cannot do here: without root, run a
    Dockerfile's RUN steps; as root, place files outside the task's own top-level dirs and /tmp."""
    from .sandbox import build_plan
    from .sandbox.localbuild import local_problem
    from .tasks.taskmodel import TaskSupport, support

    found = support(task, kind, network)
    if found.ok and kind == "local" and getattr(task, "compose", None) is not None:
        from .tasks.compose import agent_service as agent_of, compose_services, compose_tmpfs

        if compose_tmpfs(task.compose):
            return TaskSupport(kind=kind, ok=False, reason="needs_container: the compose file mounts a tmpfs, "
                               "which the local sandbox cannot give the task")
        services = compose_services(task.compose)
        asks = sorted(k for k in ("dns", "extra_hosts") if services and (services.get(agent_of(services)) or {}).get(k))
        if asks:
            return TaskSupport(kind=kind, ok=False, reason=f"needs_container: the compose file sets {' and '.join(asks)}, "
                               "which the local sandbox cannot give the task (it uses this machine's /etc/hosts "
                               "and /etc/resolv.conf)")
    if found.ok and kind == "local":
        plan = build_plan(task, kind)
        workdir = plan.workdir if plan.has_workdir else getattr(task, "workdir", "/app")
        reason = local_problem(plan, workdir)
        if reason:
            return TaskSupport(kind=kind, ok=False, reason=reason)
    return found


async def build_check(tasks: list[Any], settings: SandboxSettings) -> dict[str, str]:
    """Build (or find cached) each task's bwrap layer; task id → why its own build fails."""
    from .sandbox import TaskBuildError, _base_root, build_plan
    from .sandbox.build import ensure_layer

    broken: dict[str, str] = {}
    for task in tasks:
        plan = build_plan(task)
        recipe = None
        try:
            recipe, base_root = await _base_root(plan, settings)  # root = "image": the trials' root, not the host's
            await ensure_layer(task, plan, settings, recipe, base_root)
            await _service_layers(task, settings)
        except TaskBuildError as exc:
            broken[task.id] = build_failure(exc, getattr(exc, "recipe", recipe))
    return broken


async def _service_layers(task: Any, settings: SandboxSettings) -> None:
    """The layers of the services its compose file runs beside the agent's (bwrap starts them)."""
    if getattr(task, "compose", None) is None:
        return
    from .sandbox.services import service_layer
    from .tasks.compose import ComposeError, read_compose

    try:
        compose = read_compose(task.compose)
    except ComposeError:
        return  # task_support has excluded it
    for service in compose.start_order():
        await service_layer(service, settings)


def build_failure(exc: Any, recipe: Any = None) -> str:
    """An exclusion reason for a failed build: its tag, the failing step's line and the output's tail.
    On a base that stands in for the task's image (``recipe.substituted``) a build that fails for
    no reason of its own kind is ``base_substituted``, naming the substitution, never the task's fault."""
    text = str(exc)
    first, _, rest = text.partition("\n")
    tail = rest[-600:] if len(rest) <= 600 else "…" + rest[-600:]
    body = f"{first}\n{tail}" if rest else first
    if exc.exclusion:
        return f"{exc.exclusion}: {body}"
    if recipe is not None and recipe.substituted:
        return f"base_substituted: the build fails on the stand-in base ({recipe.substituted}): {body}"
    return f"broken_task: {body}"
