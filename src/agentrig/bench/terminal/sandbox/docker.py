"""Docker/Podman: a long-lived container per trial (``run -d`` + ``exec`` per command).

Used only when the engine answers (``engine_problem`` says why not: podman needs no daemon, docker
does). podman runs with agentrig's own containers.conf (runc, the host's ulimits), never the host's. The image is
built from the task's Dockerfile (the engine caches it); the container runs ``sleep infinity``
with the task's limits and, unless the task may use it, no network. A command runs as
``exec ... setsid -w bash -lc COMMAND`` and records its process group; a timeout kills that group
inside the container. The container is removed at close (kept, stopped, with ``keep``).
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from ..shell import PersistentShell, run_process, subprocess_spawn
from .base import BASE_ENV, CommandResult, SandboxError, TaskBuildError


async def _call(argv: list[str], timeout: float = 30) -> tuple[int, str]:
    try:
        proc = await asyncio.create_subprocess_exec(*argv, stdin=asyncio.subprocess.DEVNULL,
                                                    stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    except OSError as exc:
        return 127, str(exc)
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), timeout)
    except asyncio.TimeoutError:
        proc.kill()
        await proc.wait()
        return 124, f"{argv[0]} did not answer within {timeout:.0f} s"
    return proc.returncode or 0, out.decode(errors="replace")


# podman reads this instead of the host's containers.conf (the host's /etc is left alone): the
# default ulimits are left to the host (runc cannot raise them here) and runc is the runtime
# (crun refuses hybrid cgroup hierarchies).
_PODMAN_CONF = '[containers]\ndefault_ulimits = []\n[engine]\nruntime = "runc"\n'


def podman_conf() -> Path:
    """agentrig's containers.conf for podman (written once per user, idempotently)."""
    path = Path(tempfile.gettempdir()) / f"agentrig-containers-{os.getuid()}.conf"
    if not path.exists() or path.read_text() != _PODMAN_CONF:
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(_PODMAN_CONF)
        tmp.replace(path)
    return path


def engine_cli(engine: str) -> list[str]:
    """The argv prefix that runs ``engine``: podman with agentrig's containers.conf, docker as is."""
    if engine == "podman":
        return ["env", f"CONTAINERS_CONF={podman_conf()}", "podman"]
    return [engine]


async def engine_info(engine: str) -> tuple[str | None, str]:
    """(problem or None, what the runtime reports): podman needs no daemon; docker's must answer."""
    if shutil.which(engine) is None:
        return f"no {engine} client on PATH", ""
    if engine == "podman":
        fmt = "podman {{.Version.Version}}, runtime {{.Host.OCIRuntime.Name}}, cgroups {{.Host.CgroupsVersion}}, storage {{.Store.GraphDriverName}}"
        code, out = await _call([*engine_cli(engine), "info", "--format", fmt], timeout=30)
        if code != 0 or not out.strip():
            last = out.strip().splitlines()[-1] if out.strip() else code
            return f"podman is installed but `podman info` fails: {last}", ""
        return None, out.strip().splitlines()[-1]
    code, out = await _call([engine, "info", "--format", "docker {{.ServerVersion}}, runtime {{.DefaultRuntime}}, storage {{.Driver}}"], timeout=15)
    if code != 0 or not out.strip() or "docker ," in out:
        return f"{engine} client found but no daemon answers: {out.strip().splitlines()[-1] if out.strip() else code}", ""
    return None, out.strip().splitlines()[-1]


async def engine_problem(engine: str) -> str | None:
    """None when ``engine`` can run containers (podman: `podman info` answers; docker: its daemon does)."""
    return (await engine_info(engine))[0]


OWNER_LABEL = "agentrig.owner"  # "<pid>@<boot id>" of the process that started the container


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return "unknown"


def _owner() -> str:
    return f"{os.getpid()}@{_boot_id()}"


def _owner_alive(owner: str) -> bool:
    pid, _, boot = owner.partition("@")
    if boot != _boot_id():
        return False  # started before this boot: its owner is gone
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except (PermissionError, ValueError):
        return True
    return True


def _no_grace(cli: list[str]) -> list[str]:
    """podman's `rm -f` first waits 10 s for `sleep infinity` to obey SIGTERM; docker's kills at once."""
    return ["-t", "0"] if cli[-1] == "podman" else []


async def reap_orphans(cli: list[str]) -> list[str]:
    """Remove agentrig containers whose owner process is gone (a runner killed by SIGKILL)."""
    code, out = await _call([*cli, "ps", "-a", "--filter", f"label={OWNER_LABEL}",
                             "--format", f'{{{{.Names}}}} {{{{index .Labels "{OWNER_LABEL}"}}}}'], 30)
    if code != 0:
        return []
    dead = [name for name, _, owner in (line.partition(" ") for line in out.splitlines() if line.strip())
            if not _owner_alive(owner.strip())]
    if dead:
        await _call([*cli, "rm", "-f", *_no_grace(cli), *dead], 120)
    return dead


class ContainerSandbox:
    def __init__(self, *, engine: str, task: Any, network: bool, workdir: str, env: dict[str, str],
                 memory_mb: int | None, pids: int | None, cpus: float | None, shell: str = "stateless",
                 output_limit: int = 10_000, keep: bool = False) -> None:
        self.kind = engine
        self.engine, self.task, self.network = engine, task, network
        self.cli = engine_cli(engine)
        self.workdir, self.env = workdir, {**BASE_ENV, **env}
        self.limits = (memory_mb, pids, cpus)
        self.shell_kind, self.output_limit, self.keep = shell, output_limit, keep
        self.name = f"agentrig-{hashlib.sha1(str(id(self)).encode()).hexdigest()[:8]}-{getattr(task, 'id', 'task')}"[:60]
        self._shell: PersistentShell | None = None
        self._drainers: set = set()
        self._seq = 0

    async def start(self) -> None:
        problem = await engine_problem(self.engine)
        if problem:
            raise SandboxError(problem)
        dockerfile = getattr(self.task, "dockerfile", None)
        if dockerfile is None:
            raise TaskBuildError("the task has no Dockerfile to build", exclusion="needs_container")
        tag = f"agentrig-task-{getattr(self.task, 'id', 'task')}".lower()[:100]
        code, out = await _call([*self.cli, "build", "-q", "-t", tag, "-f", str(dockerfile), str(Path(dockerfile).parent)], 3600)
        if code != 0:
            raise TaskBuildError(f"{self.engine} build failed:\n{out[-2000:]}")
        memory_mb, pids, cpus = self.limits
        await reap_orphans(self.cli)
        argv = [*self.cli, "run", "-d", "--name", self.name, "-w", self.workdir, "--label", f"{OWNER_LABEL}={_owner()}"]
        argv += [] if self.network else ["--network", "none"]
        argv += ["--memory", f"{memory_mb}m"] if memory_mb else []
        argv += ["--pids-limit", str(pids)] if pids else []
        argv += ["--cpus", str(cpus)] if cpus else []
        argv += [tag, "sleep", "infinity"]
        code, out = await _call(argv, 120)
        if code != 0:
            raise SandboxError(f"{self.engine} run failed: {out.strip()}")

    def _exec(self, argv: list[str], env: dict[str, str], interactive: bool = False) -> list[str]:
        flags = ["-i"] if interactive else []
        for key, value in env.items():
            flags += ["-e", f"{key}={value}"]
        return [*self.cli, "exec", *flags, "-w", self.workdir, self.name, *argv]

    async def run(self, command: str, timeout_s: float, env: dict[str, str] | None = None,
                  detach_after_s: float | None = None) -> CommandResult:
        full_env = {**self.env, **(env or {})}
        if self.shell_kind == "persistent":
            if self._shell is None:
                self._shell = PersistentShell(subprocess_spawn(self._exec(["bash", "-l"], full_env, True), {"PATH": BASE_ENV["PATH"]}),
                                              limit=self.output_limit)
            return await self._shell.run(command, timeout_s, env, detach_after_s)
        self._seq += 1
        pidfile = f"/tmp/.agentrig-cmd-{self._seq}"
        wrapped = f"echo $$ > {pidfile}; exec bash -lc {_quote(command)}"
        spawn = subprocess_spawn(self._exec(["setsid", "-w", "bash", "-c", wrapped], full_env), {"PATH": BASE_ENV["PATH"]})

        async def kill(proc) -> None:
            await _call([*self.cli, "exec", self.name, "bash", "-c", f"kill -KILL -- -$(cat {pidfile}) 2>/dev/null"], 30)
            if proc.returncode is None:  # the exec client usually ends with the group it ran
                try:
                    proc.kill()
                except ProcessLookupError:
                    pass

        return await run_process(spawn, timeout_s=timeout_s, limit=self.output_limit, kill=kill, drainers=self._drainers)

    async def copy_in(self, src: Path, dest: str) -> None:
        code, out = await _call([*self.cli, "exec", self.name, "mkdir", "-p", str(Path(dest).parent)])
        code, out = await _call([*self.cli, "cp", f"{src}/." if Path(src).is_dir() else str(src), f"{self.name}:{dest}"], 300)
        if code != 0:
            raise SandboxError(f"{self.engine} cp failed: {out.strip()}")

    async def run_verifier(self, command: str, timeout_s: float, env: dict[str, str],
                           extra_ro_binds: dict[str, str], rw_binds: dict[str, str] | None = None) -> CommandResult:
        for host, inside in {**extra_ro_binds, **(rw_binds or {})}.items():  # a container takes no new binds
            await self.copy_in(Path(host), inside)
        spawn = subprocess_spawn(self._exec(["bash", "-c", command], {**self.env, **env}), {"PATH": BASE_ENV["PATH"]})
        return await run_process(spawn, timeout_s=timeout_s, limit=self.output_limit, drainers=self._drainers)

    def sandbox_path(self, path: str) -> str:
        return path

    async def close(self) -> None:
        if self._shell is not None:
            await self._shell.close()
        await _call([*self.cli, "stop" if self.keep else "rm", *([] if self.keep else ["-f", *_no_grace(self.cli)]), self.name], 60)


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\"'\"'") + "'"

