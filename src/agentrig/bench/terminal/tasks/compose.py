"""A task's compose file, read once: the agent's service and the services beside it.

``read_compose`` gives a ``Compose``: every service as a ``Service`` (what it builds or pulls, its
command, environment, healthcheck, ports, ``extra_hosts`` and ``dns``) and which one is the
agent's (``agent_service``: the one Terminal-Bench names its client container).
``compose_check.check_compose`` says whether a sandbox kind can honour the file, and if not why:

- the agent's service: Terminal-Bench's template (built from a Dockerfile of the task, ``sleep
  infinity``, the logs volume, ``environment``), plus ``platform`` of this machine, ``tmpfs``
  mounts, ``extra_hosts`` and ``dns`` (written into the trial's ``/etc/hosts`` and
  ``/etc/resolv.conf``, as Docker does), binds of the task's own folder (``compose_volumes.py``:
  each trial gets a private copy) — else ``needs_container`` naming what it uses;
- the services beside it (a mock web server, an API) run on bwrap, podman and docker when each is **built
  from a Dockerfile of the task** (``sandbox/services.py``, ``sandbox/container_services.py``);
  a service that runs an image from a registry, or uses what we do not honour, is
  ``needs_services`` naming the service and the image or the key. The local sandbox runs none.
"""

from __future__ import annotations

import copy
import os
import re
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, Field

from agentrig.errors import DataError

# Keys of the agent's service honoured by every sandbox (the template's, and what has no effect on a shell).
AGENT_KEYS = {
    "build", "image", "container_name", "command", "environment", "volumes", "network_mode",
    "networks", "deploy", "working_dir", "tty", "stdin_open", "init", "entrypoint", "labels",
    "platform", "tmpfs", "extra_hosts", "dns", "depends_on", "hostname",
}
# Keys of a service beside the agent's that the sandboxes honour (networks: they all share one).
SERVICE_KEYS = {
    "build", "image", "container_name", "command", "entrypoint", "environment", "working_dir",
    "healthcheck", "ports", "expose", "networks", "depends_on", "labels", "restart", "tty",
    "stdin_open", "init", "platform", "hostname",
}
SERVICE_KINDS = ("bwrap", "podman", "docker")  # the sandbox kinds that run services beside the agent


class ComposeError(DataError, ValueError):
    """The compose file cannot be read (the message names the file and why)."""


class Healthcheck(BaseModel):
    """A service's ``healthcheck``: ``test`` as an argv (``CMD``) or a shell line (``CMD-SHELL``)."""

    argv: list[str] | None = None
    shell: str | None = None
    interval_s: float = 30.0
    timeout_s: float = 30.0
    retries: int = 3
    start_period_s: float = 0.0

    def command(self) -> list[str]:
        return list(self.argv) if self.argv is not None else ["/bin/sh", "-c", self.shell or "true"]


class Service(BaseModel):
    name: str
    raw: dict[str, Any] = Field(default_factory=dict)
    context: Path | None = None  # build context (absolute), when the service builds
    dockerfile: Path | None = None  # the Dockerfile it builds (absolute)
    image: str | None = None  # the image it runs when it builds nothing
    command: list[str] | None = None  # overrides the image's CMD (a string: ["/bin/sh", "-c", it])
    entrypoint: list[str] | None = None  # overrides the image's ENTRYPOINT
    environment: dict[str, str] = Field(default_factory=dict)
    working_dir: str | None = None
    healthcheck: Healthcheck | None = None
    ports: list[int] = Field(default_factory=list)  # container ports (``ports`` and ``expose``)
    extra_hosts: list[tuple[str, str]] = Field(default_factory=list)  # (name, address)
    dns: list[str] = Field(default_factory=list)

    @property
    def builds(self) -> bool:
        return self.raw.get("build") is not None

    @property
    def build_context(self) -> Path:  # what the image builders read (like TerminalTask.build_context)
        return self.context or Path(".")

    def what(self) -> str:
        """What it runs: the image it pulls or what it builds (for reasons)."""
        return service_what(self.raw)


class Compose(BaseModel):
    path: Path
    services: dict[str, Service]
    agent: str  # the agent's service

    @property
    def others(self) -> list[Service]:
        """The services beside the agent's, in the file's order."""
        return [s for n, s in self.services.items() if n != self.agent]

    @property
    def agent_service(self) -> Service:
        return self.services[self.agent]

    def start_order(self) -> list[Service]:
        """The services beside the agent's, each after those it ``depends_on``."""
        others = {s.name: s for s in self.others}
        done: list[Service] = []

        def visit(name: str, path: tuple[str, ...]) -> None:
            if name not in others or others[name] in done or name in path:
                return
            depends = others[name].raw.get("depends_on") or []
            for dep in depends if isinstance(depends, list) else list(depends):
                visit(str(dep), (*path, name))
            done.append(others[name])

        for name in others:
            visit(name, ())
        return done

    def described(self) -> list[dict[str, Any]]:
        """The services beside the agent's, for ``tasks show``: name, what it runs, ports, readiness."""
        return [{"name": s.name, "runs": s.what(), "ports": s.ports,
                 "ready_by": "healthcheck" if s.healthcheck else ("ports" if s.ports else "start")} for s in self.others]

    def hostnames(self) -> list[str]:
        """The names the agent and the services reach one another by (each service's name and its
        literal ``container_name``/``hostname``): all at 127.0.0.1 in the trial's one network."""
        names: list[str] = []
        for service in self.others:
            for name in (service.name, service.raw.get("container_name"), service.raw.get("hostname")):
                if isinstance(name, str) and name and "$" not in name and name not in names:
                    names.append(name)
        return names


def service_what(raw: Any) -> str:
    """What a raw compose service runs: the image it pulls or what it builds."""
    raw = raw if isinstance(raw, dict) else {}
    build = raw.get("build")
    if isinstance(build, dict):
        name = build.get("dockerfile", "Dockerfile")
        return f"builds {build.get('context', '.')}/{name}".replace("./", "", 1) if name != "Dockerfile" \
            else f"builds {build.get('context', '.')}"
    if build is not None:
        return f"builds {build}"
    return f"image {raw.get('image')}" if raw.get("image") else "no image"


def agent_service(services: dict[str, Any]) -> str:
    """The service the agent works in: the one Terminal-Bench names its client container
    (``container_name: ${T_BENCH_TASK_DOCKER_CLIENT_CONTAINER_NAME}``), else ``client``, else the first."""
    for name, service in services.items():
        if isinstance(service, dict) and "T_BENCH_TASK_DOCKER_CLIENT_CONTAINER_NAME" in str(service.get("container_name", "")):
            return name
    return "client" if "client" in services else next(iter(services))


# path -> (its stat signature, its services as parsed): a trial asks for the same file several
# times (the plan, the binds, tmpfs, the runtime files); parsed again only when the file changed
_PARSED: dict[str, tuple[tuple[int, int, int], Any]] = {}


def _read_services(path: Path) -> Any:
    path = Path(path)
    st = path.stat()
    signature = (st.st_ino, st.st_size, st.st_mtime_ns)
    cached = _PARSED.get(str(path))
    if cached is None or cached[0] != signature:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        cached = _PARSED[str(path)] = (signature, (data or {}).get("services") if isinstance(data, dict) else None)
    return copy.deepcopy(cached[1])  # callers may change what they get


def compose_services(path: Path) -> dict[str, Any]:
    """The compose file's services by name, raw ({} when it cannot be read: ``check_compose`` says why)."""
    try:
        services = _read_services(path)
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return {}
    return services if isinstance(services, dict) else {}


_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|us|s|m|h)")


def _seconds(value: Any, default: float) -> float:
    """A compose duration (``10s``, ``1m30s``, ``500ms``) in seconds."""
    if value is None:
        return default
    if isinstance(value, (int, float)):
        return float(value)
    text, total = str(value).strip(), 0.0
    parts = _DURATION.findall(text)
    if not parts or "".join(a + b for a, b in parts) != text:
        raise ComposeError(f"the duration {value!r} is not of the form 10s, 1m30s, 500ms")
    for amount, unit in parts:
        total += float(amount) * {"ms": 1e-3, "us": 1e-6, "s": 1, "m": 60, "h": 3600}[unit]
    return total


def _argv(value: Any) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, list):
        return [str(v) for v in value]
    return ["/bin/sh", "-c", str(value)]


def _environment(value: Any) -> dict[str, str]:
    if isinstance(value, dict):
        return {str(k): "" if v is None else str(v) for k, v in value.items()}
    out: dict[str, str] = {}
    for entry in value or []:
        key, _, val = str(entry).partition("=")
        out[key] = val
    return out


def _healthcheck(value: Any) -> Healthcheck | None:
    if not isinstance(value, dict) or value.get("disable") or value.get("test") is None:
        return None
    test = value["test"]
    check = Healthcheck(interval_s=_seconds(value.get("interval"), 30), timeout_s=_seconds(value.get("timeout"), 30),
                        retries=int(value.get("retries", 3)), start_period_s=_seconds(value.get("start_period"), 0))
    if isinstance(test, str):
        check.shell = test
    elif test and test[0] == "NONE":
        return None
    elif test and test[0] == "CMD":
        check.argv = [str(t) for t in test[1:]]
    elif test and test[0] == "CMD-SHELL":
        check.shell = " ".join(str(t) for t in test[1:])
    else:
        raise ComposeError(f"healthcheck test {test!r} is neither CMD, CMD-SHELL nor a string")
    return check


def _ports(service: dict[str, Any]) -> list[int]:
    """Container ports of ``ports`` (``8000``, ``"8080:80"``, ``"127.0.0.1:8080:80/tcp"``, the long
    form) and ``expose``."""
    found: list[int] = []
    for entry in [*(service.get("ports") or []), *(service.get("expose") or [])]:
        target = entry.get("target") if isinstance(entry, dict) else str(entry).split("/")[0].rsplit(":", 1)[-1]
        text = str(target)
        first = text.split("-")[0]
        if not first.isdigit():
            raise ComposeError(f"port {entry!r} is not a port number")
        if int(first) not in found:
            found.append(int(first))
    return found


def _extra_hosts(value: Any) -> list[tuple[str, str]]:
    items = [f"{k}:{v}" for k, v in value.items()] if isinstance(value, dict) else [str(v) for v in value or []]
    out = []
    for item in items:
        name, sep, address = item.replace("=", ":", 1).partition(":") if "=" in item else item.partition(":")
        if not sep or not name or not address:
            raise ComposeError(f"extra_hosts entry {item!r} is not NAME:ADDRESS")
        out.append((name.strip(), address.strip().strip("[]")))
    return out


def _service(path: Path, name: str, raw: Any) -> Service:
    raw = raw if isinstance(raw, dict) else {}
    build = raw.get("build")
    context = dockerfile = None
    if build is not None:
        ctx = str(build.get("context", ".")) if isinstance(build, dict) else str(build)
        context = (path.parent / ctx).resolve()
        dockerfile = context / str(build.get("dockerfile", "Dockerfile") if isinstance(build, dict) else "Dockerfile")
    return Service(
        name=name, raw=raw, context=context, dockerfile=dockerfile,
        image=str(raw["image"]) if raw.get("image") else None,
        command=_argv(raw.get("command")), entrypoint=_argv(raw.get("entrypoint")),
        environment=_environment(raw.get("environment")),
        working_dir=str(raw["working_dir"]) if raw.get("working_dir") else None,
        healthcheck=_healthcheck(raw.get("healthcheck")), ports=_ports(raw),
        extra_hosts=_extra_hosts(raw.get("extra_hosts")),
        dns=[str(d) for d in ([raw["dns"]] if isinstance(raw.get("dns"), str) else raw.get("dns") or [])],
    )


def read_compose(path: Path) -> Compose:
    """The compose file's services (raises ComposeError naming the file and what is wrong)."""
    path = Path(path)
    try:
        services = _read_services(path)
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ComposeError(f"cannot read {path.name}: {exc}") from None
    if not isinstance(services, dict) or not services:
        raise ComposeError(f"{path.name} defines no services")
    out: dict[str, Service] = {}
    for name, raw in services.items():
        try:
            out[str(name)] = _service(path, str(name), raw)
        except (ComposeError, TypeError, ValueError) as exc:
            raise ComposeError(f"service {name!r} in {path.name}: {exc}") from None
    return Compose(path=path, services=out, agent=agent_service(services))


_SIZE = re.compile(r"(\d+)([kmg]?)b?", re.IGNORECASE)


def compose_tmpfs(path: Path) -> list[tuple[str, int | None, int | None]]:
    """The agent service's ``tmpfs`` mounts as (path, size in bytes, mode): Docker's
    ``/root:size=100M,mode=755`` form. Raises ValueError for a form we cannot honour."""
    services = compose_services(path)
    if not services:
        return []
    service = services.get(agent_service(services)) or {}
    entries = service.get("tmpfs") or []
    out: list[tuple[str, int | None, int | None]] = []
    for entry in [entries] if isinstance(entries, str) else entries:
        target, _, options = str(entry).partition(":")
        if not target.startswith("/") or target == "/":
            raise ValueError(f"tmpfs {entry!r} is not an absolute path below /")
        size = mode = None
        for option in filter(None, options.split(",")):
            key, _, value = option.partition("=")
            if key == "size" and (m := _SIZE.fullmatch(value)):
                size = int(m.group(1)) * {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[m.group(2).lower()]
            elif key == "mode" and re.fullmatch(r"[0-7]{3,4}", value):
                mode = int(value, 8)
            else:
                raise ValueError(f"tmpfs option {option!r} of {entry!r} is not supported (size=, mode=)")
        out.append((os.path.normpath(target), size, mode))
    return out
