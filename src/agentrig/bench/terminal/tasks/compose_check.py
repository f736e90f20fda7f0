"""Whether a sandbox kind can honour a task's compose file, and if not why (``check_compose``).

- the agent's service: Terminal-Bench's template (built from a Dockerfile of the task, ``sleep
  infinity``, the logs volume, ``environment``), plus ``platform`` of this machine, ``tmpfs``
  mounts, ``extra_hosts``, ``dns`` and binds of the task's own folder (``compose_volumes.py``; not
  on the local sandbox) — else ``needs_container`` naming what it uses;
- the services beside it run on bwrap, podman and docker when each is **built from a Dockerfile of the
  task**; a service that runs an image from a registry, or uses what we do not honour, is
  ``needs_services`` naming the service and the image or the key. The local sandbox runs none.

The file itself is read by ``compose.py``. A module of its own along a seam, not to a line count
(it was split out of ``compose.py`` with a line count as the reason, and kept on review for this):
reading a compose file and judging it per sandbox kind are two questions, and the judge stands on
both readers — ``compose.py`` (the services) and ``compose_volumes.py`` (the binds, which itself
reads ``compose.py``). Merged into ``compose.py`` it would make ``compose`` ↔ ``compose_volumes`` a
circle.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from .compose import (AGENT_KEYS, SERVICE_KEYS, SERVICE_KINDS, Compose, ComposeError, Service, agent_service,
                      compose_services, compose_tmpfs, read_compose, service_what)
from .compose_volumes import agent_binds


def services_reason(name: str, services: dict[str, Any], why: str | None = None) -> str:
    """``needs_services: …``: the compose file runs services beside the agent's machine that this
    sandbox does not start; names each and what it runs, and `why` (default: no sandbox here starts them)."""
    agent = agent_service(services)
    others = [f"{n} ({service_what(s)})" for n, s in services.items() if n != agent]
    return (f"needs_services: {name} runs {len(others)} service(s) beside the agent's '{agent}': "
            f"{', '.join(others)}; {why or 'the sandbox is one machine (a container engine with compose runs them)'}")


def host_platform() -> str:
    """This machine as a container platform (``linux/amd64``, ``linux/arm64``): what ``platform:`` may name."""
    machine = os.uname().machine
    return "linux/" + {"x86_64": "amd64", "aarch64": "arm64", "armv7l": "arm/v7"}.get(machine, machine)


def _inside(path: Path, parent: Path) -> bool:
    return path == parent or str(path).startswith(str(parent) + os.sep)


def _built_from_task(compose: Compose, service: Service) -> str | None:
    """Why `service` is not built from a Dockerfile of the task's own directories (None: it is)."""
    build = service.raw.get("build")
    dockerfile = str(build.get("dockerfile", "Dockerfile")) if isinstance(build, dict) else "Dockerfile"
    context = str(build.get("context", ".")) if isinstance(build, dict) else str(build)
    if not _inside(service.build_context, compose.path.parent.resolve()) or "/" in dockerfile.removeprefix("./"):
        return f"builds {dockerfile} from {context} (not a Dockerfile of the task's own directories)"
    return None


def _platform_problem(compose: Compose, service: Service) -> str | None:
    platform = service.raw.get("platform")
    if platform is not None and str(platform) != host_platform():
        return f"is built for {platform}; this machine is {host_platform()}"
    return None


def service_problem(compose: Compose, service: Service, kind: str) -> str | None:
    """Why sandbox `kind` cannot run `service` beside the agent's (None: it can)."""
    if kind not in SERVICE_KINDS:
        return f"the {kind} sandbox starts no service beside the agent's (bwrap, podman and docker do)"
    if not service.builds:
        return (f"service '{service.name}' runs the image {service.image} from a registry, not one the task builds"
                if service.image else f"service '{service.name}' has neither a build nor an image")
    extra = sorted(set(service.raw) - SERVICE_KEYS)
    if extra:
        return f"service '{service.name}' uses {', '.join(extra)}"
    why = _built_from_task(compose, service) or _platform_problem(compose, service)
    if why:
        return f"service '{service.name}' {why}"
    for port in service.ports:
        owners = [s.name for s in compose.others if port in s.ports]
        if len(owners) > 1:
            return f"services {', '.join(owners)} all listen on port {port} (they share the trial's one network)"
    return None


def check_compose(path: Path, kind: str = "bwrap", *, network: bool = False) -> str | None:
    """None when sandbox `kind` can honour the compose file (the agent's service and the services
    beside it, above); else ``needs_container: why`` (the agent's service) or ``needs_services: why``.
    `network`: the trial has the network (bwrap then gives the trial and its services their own
    network namespace with slirp4netns)."""
    path = Path(path)
    try:
        compose = read_compose(path)
    except ComposeError as exc:
        return f"needs_container: {exc}"
    raw = compose_services(path)
    for service in compose.others:
        why = service_problem(compose, service, kind)
        if why:
            return services_reason(path.name, raw, why)
    if compose.others and kind == "bwrap" and network and shutil.which("slirp4netns") is None:
        return services_reason(path.name, raw, "with the network, the trial and its services get their own network "
                               "namespace through slirp4netns, which is not installed (apt-get install slirp4netns)")
    agent = compose.agent_service
    name = agent.name
    extra = sorted(set(agent.raw) - AGENT_KEYS)
    if extra:
        return f"needs_container: service {name!r} in {path.name} uses {', '.join(extra)}"
    try:
        compose_tmpfs(path)
    except ValueError as exc:
        return f"needs_container: service {name!r} in {path.name}: {exc}"
    platform = agent.raw.get("platform")
    if platform is not None and str(platform) != host_platform():
        return f"needs_container: service {name!r} in {path.name} is built for {platform}; this machine is {host_platform()}"
    if not agent.builds:
        return f"needs_container: service {name!r} in {path.name} runs a prebuilt image ({agent.image})"
    why = _built_from_task(compose, agent)
    if why:
        return f"needs_container: service {name!r} {why}"
    why = volumes_problem(path, kind)
    return f"needs_container: {why}" if why else None


def volumes_problem(path: Path, kind: str = "bwrap") -> str | None:
    """Why sandbox `kind` cannot give the agent's service its ``volumes`` (None: it can): bwrap,
    podman and docker give a private copy of each bind of the task's own folder
    (``compose_volumes.py``); another volume is named. The local sandbox gives none."""
    services = compose_services(path)
    name = agent_service(services) if services else "?"
    try:
        binds = agent_binds(path)
    except ComposeError as exc:
        return f"service {name!r} {exc}"
    if binds and kind not in SERVICE_KINDS:
        return (f"service {name!r} in {path.name} mounts {binds[0].written}; the {kind} sandbox cannot give the "
                f"trial its own copy of the task's folder there (bwrap, podman and docker do)")
    return None
