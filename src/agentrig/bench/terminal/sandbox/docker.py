"""Docker/Podman: a long-lived container per trial (``run -d`` + ``exec`` per command).

Used only when the engine answers (``engine.engine_problem`` says why not: podman needs no daemon,
docker does). The image is the task's, built once per runner from its Dockerfile over base images
found, pulled or imported from roots built from packages (``container_images``); the container
runs ``sleep infinity`` with the task's limits and, unless the task may use it, no network. A
command runs as ``exec ... setsid -w bash -lc COMMAND`` and records its process group; a timeout
kills that group inside the container. The container and its anonymous volumes are removed at
close (kept, stopped, with ``keep``); the task image when the runner exits.

**The verifier** (as root, where the container's init process is visible — rootful podman or
docker on this host): it runs like bwrap's (``nsutil.py run``): a host process joins the
container's cgroups, enters its namespaces and a private copy of its mount namespace, removes
``/tests``, binds the staged tests and agentrig's Python read-only and ``/logs/verifier``
writable there only, takes the container's capability bounding set and no-new-privileges, and
forks the tests into the container's pid namespace. So the offline test tool chain works in a
container too, and a process the agent left running never sees those binds. (The verifier's
processes do not get the container's seccomp filter.) Elsewhere the tests are copied in and the
scripts run with the image's own tools.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from agentrig.procs import finish_despite_cancel

from ..core.base import BASE_ENV, CommandResult, SandboxError, TaskBuildError
from ..shell import PersistentShell, run_process, subprocess_spawn
from .engine import (  # noqa: F401 - re-exported: the engine helpers lived here
    CANCEL_GRACE_S,
    OWNER_LABEL,
    _boot_id,
    _call,
    _no_grace,
    _owner,
    _owner_alive,
    engine_cli,
    engine_info,
    engine_problem,
    podman_conf,
    reap_left_behind,
    reap_orphan_images,
    reap_orphans,
)


class ContainerSandbox:
    def __init__(self, *, engine: str, task: Any, network: bool, workdir: str, env: dict[str, str],
                 memory_mb: int | None, pids: int | None, cpus: float | None, shell: str = "stateless",
                 output_limit: int = 10_000, keep: bool = False, build_network: bool | str = True,
                 build_timeout_s: float = 3600, host_settings: bool | str = False,
                 extra_hosts: list[tuple[str, str]] | None = None,
                 service_names: list[str] | None = None, dns: list[str] | None = None,
                 binds: list | None = None) -> None:
        self.kind = engine
        self.engine, self.task, self.network = engine, task, network
        self.cli = engine_cli(engine)
        self.workdir, self.env = workdir, {**BASE_ENV, **env}
        self.limits = (memory_mb, pids, cpus)
        self.shell_kind, self.output_limit, self.keep = shell, output_limit, keep
        self.build_network, self.build_timeout_s = build_network, build_timeout_s
        self.host_settings = host_settings  # the trial fetches as the build did (hostsettings.py)
        self._settings_dir: str | None = None
        self.binds = list(binds or [])  # compose_volumes.Bind: the task's folder, a private copy mounted (binds.py)
        self._binds_dir: str | None = None
        self.init_pid: int | None = None  # the container's init on this host, when visible (root)
        self.name = f"agentrig-{hashlib.sha1(str(id(self)).encode()).hexdigest()[:8]}-{getattr(task, 'id', 'task')}"[:60]
        self._shell: PersistentShell | None = None
        self._drainers: set = set()
        self._seq = 0
        # the compose file's extra_hosts and dns, and the names of the services beside the agent's
        # (their containers join this one's network namespace: container_services.py)
        self.hosts = [*(extra_hosts or []), *((n, "127.0.0.1") for n in service_names or [])]
        self.dns = list(dns or [])
        self.attached: list = []  # the services' containers: removed before this one

    async def start(self) -> None:
        problem = await engine_problem(self.engine)
        if problem:
            raise SandboxError(problem)
        dockerfile = getattr(self.task, "dockerfile", None)
        if dockerfile is None:
            raise TaskBuildError("the task has no Dockerfile to build", exclusion="needs_container")
        from .container_images import task_image

        await reap_left_behind(self.cli)
        tag = await task_image(self.engine, self.task, build_network=self.build_network, timeout_s=self.build_timeout_s)
        memory_mb, pids, cpus = self.limits
        argv = [*self.cli, "run", "-d", "--name", self.name, "-w", self.workdir, "--label", f"{OWNER_LABEL}={_owner()}"]
        argv += [] if self.network else ["--network", "none"]
        argv += self._host_settings_mount()
        argv += await self._bind_mounts()
        argv += [a for name, address in self.hosts for a in ("--add-host", f"{name}:{address}")]
        argv += [a for server in self.dns for a in ("--dns", server)] if self.network else []  # none refuses --dns
        argv += ["--memory", f"{memory_mb}m"] if memory_mb else []
        argv += ["--pids-limit", str(pids)] if pids else []
        argv += ["--cpus", str(cpus)] if cpus else []
        argv += [tag, "sleep", "infinity"]
        try:
            code, out = await _call(argv, 120)
        except BaseException:  # cancelled: the container (if the engine made it) and the trial's copy of
            # the host's settings go with it, the removal finishing even while the stop goes on (procs.py)
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await finish_despite_cancel(_call([*self.cli, "rm", "-f", "-v", *_no_grace(self.cli), self.name], 60),
                                            CANCEL_GRACE_S * 2)
            self._remove_settings()
            raise
        if code != 0:
            await _call([*self.cli, "rm", "-f", "-v", *_no_grace(self.cli), self.name], 60)
            self._remove_settings()
            raise SandboxError(f"{self.engine} run failed: {out.strip()}")
        if os.geteuid() == 0:
            code, out = await _call([*self.cli, "inspect", "--format", "{{.State.Pid}}", self.name], 60)
            pid = out.strip().splitlines()[-1] if code == 0 and out.strip() else ""
            if pid.isdigit() and int(pid) > 0 and os.path.exists(f"/proc/{pid}/ns/mnt"):
                self.init_pid = int(pid)
        if self.dns and not self.network:  # the file the compose file asks for, as with a network
            from .runtime_files import resolv_text

            await _call([*self.cli, "exec", self.name, "sh", "-c", f"printf %s {_quote(resolv_text(self.dns))} > /etc/resolv.conf"], 60)

    def attach(self, companion: Any) -> None:
        """A service's container: closed (removed) before this one, which it depends on."""
        self.attached.append(companion)

    def _host_settings_mount(self) -> list[str]:
        """With ``host_settings``: the host's package-index settings as files in a directory of this
        trial, mounted read-only at ``SETTINGS_MOUNT`` (under ``/dev``, the container's own tmpfs: no
        mount point lands in its layer), and the variables naming them in every command's environment
        (the agent's, the solution's, the verifier's) — as a bwrap trial with the network gets them."""
        if not self.host_settings:
            return []
        from ..core.hostsettings import container_settings
        from .container_images import SETTINGS_MOUNT

        self._settings_dir = tempfile.mkdtemp(prefix="agentrig-trial-settings-")
        self.env.update(container_settings(Path(self._settings_dir), SETTINGS_MOUNT, ca_only=self.host_settings == "ca"))
        return ["-v", f"{self._settings_dir}:{SETTINGS_MOUNT}:ro"]

    async def _bind_mounts(self) -> list[str]:
        """The compose file's binds of the task's folder: a private copy of each source, in a
        directory of this trial, mounted at its target (``:ro`` kept) — the task's folder is never
        bound itself, so nothing the trial writes reaches it."""
        if not self.binds:
            return []
        import asyncio

        from .binds import private_copies

        self._binds_dir = tempfile.mkdtemp(prefix="agentrig-trial-binds-")
        try:
            copies = await asyncio.to_thread(private_copies, self.binds, Path(self._binds_dir))
        except OSError as exc:
            self._remove_settings()
            raise SandboxError(f"cannot copy the task's folder for the trial: {exc}") from None
        return [a for copy, target, ro in copies for a in ("-v", f"{copy}:{target}" + (":ro" if ro else ""))]

    def _remove_settings(self, keep_binds: bool = False) -> None:
        if self._settings_dir is not None:
            shutil.rmtree(self._settings_dir, ignore_errors=True)
            self._settings_dir = None
        if self._binds_dir is not None and not keep_binds:  # kept with a kept (stopped) container
            shutil.rmtree(self._binds_dir, ignore_errors=True)
            self._binds_dir = None

    @property
    def image_root(self) -> bool:
        """Commands see the task's own image (its Python, what its build installed there)."""
        return True

    @property
    def binds_verifier(self) -> bool:
        """The verifier gets binds (agentrig's Python, the tests read-only) as under bwrap."""
        return self.init_pid is not None

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

    async def wait_typed_ahead(self, timeout_s: float) -> bool:
        """Wait until the commands typed ahead into the persistent shell have ended (at most `timeout_s`)."""
        return self._shell is None or await self._shell.wait_idle(timeout_s)

    async def copy_in(self, src: Path, dest: str) -> None:
        code, out = await _call([*self.cli, "exec", self.name, "mkdir", "-p", str(Path(dest).parent)])
        code, out = await _call([*self.cli, "cp", f"{src}/." if Path(src).is_dir() else str(src), f"{self.name}:{dest}"], 300)
        if code != 0:
            raise SandboxError(f"{self.engine} cp failed: {out.strip()}")

    async def run_verifier(self, command: str, timeout_s: float, env: dict[str, str],
                           extra_ro_binds: dict[str, str], rw_binds: dict[str, str] | None = None,
                           remove: list[str] | None = None) -> CommandResult:
        if self.binds_verifier:
            return await self._nsutil_verifier(command, timeout_s, env, extra_ro_binds, rw_binds, remove)
        for path in remove or []:
            await _call([*self.cli, "exec", self.name, "rm", "-rf", path], 60)
        for host, inside in {**extra_ro_binds, **(rw_binds or {})}.items():  # a container takes no new binds
            await self.copy_in(Path(host), inside)
        spawn = subprocess_spawn(self._exec(["bash", "-c", command], {**self.env, **env}), {"PATH": BASE_ENV["PATH"]})
        return await run_process(spawn, timeout_s=timeout_s, limit=self.output_limit, drainers=self._drainers)

    async def run_agent(self, command: str, timeout_s: float, env: dict[str, str],
                        ro_binds: dict[str, str], rw_binds: dict[str, str]) -> CommandResult:
        """An installed agent's ``bash -c command`` with its tool root and home bound in, as under
        bwrap (``BwrapSandbox.run_agent``): a private copy of the container's mount namespace, its
        cgroups, capabilities, pid and network namespaces. It needs the container's init on this
        host (agentrig running as root). Its processes get a pids cgroup of their own inside the
        container's (``_own_cgroup``): at ``timeout_s`` or when cancelled all of them are killed, a
        child in a session of its own (``setsid``) too; what it leaves running when it exits by
        itself stays, moved back to the container's cgroup, as a command's background process does."""
        if not self.binds_verifier:
            raise SandboxError(f"an installed agent needs its tool root bound into the {self.engine} container, "
                               "which needs agentrig to run as root (fix: run as root, or use [sandbox] kind = \"bwrap\")")
        self._seq += 1
        return await self._nsutil_verifier(command, timeout_s, env, ro_binds, rw_binds, None,
                                           own_cgroup=f"agentrig-agent-{os.getpid()}-{self._seq}")

    async def run_pytest(self, *_args: Any, **_kw: Any) -> None:
        return None  # no warm verifier in a container: the cold command runs

    async def _nsutil_verifier(self, command: str, timeout_s: float, env: dict[str, str], ro: dict[str, str],
                               rw: dict[str, str] | None, remove: list[str] | None,
                               own_cgroup: str | None = None) -> CommandResult:
        from .bwrap import NSUTIL
        from .cgroup import kill_cgroup

        pid = str(self.init_pid)
        files = _cgroup_files(pid)
        group = _own_cgroup(files, own_cgroup) if own_cgroup else None
        binds = [["ro", h, i] for h, i in ro.items()] + [["rw", h, i] for h, i in (rw or {}).items()]
        spec = {"cgroups": files, "binds": binds, "caps": _bounding_caps(pid), "cwd": self.workdir,
                "env": {**self.env, **env}, "remove": list(remove or []), "argv": ["bash", "-c", command]}
        spawn = subprocess_spawn([sys.executable, "-I", "-S", str(NSUTIL), "run", pid, json.dumps(spec)],
                                 {"PATH": os.defpath})

        async def kill(proc) -> None:  # the whole cgroup (nsutil joined it too), then its group as ever
            if group is not None:
                await kill_cgroup(group)
            from ..shell import kill_process_group

            await kill_process_group(proc)

        try:
            result = await run_process(spawn, timeout_s=timeout_s, limit=self.output_limit, kill=kill,
                                       drainers=self._drainers)
        finally:
            if group is not None:
                _release_cgroup(group)
        if "nsutil run:" in result.output[:300] and not os.path.exists(f"/proc/{pid}"):
            raise SandboxError(f"the {self.engine} container ended during the verifier")
        return result

    def sandbox_path(self, path: str) -> str:
        return path

    async def close(self) -> None:
        for companion in reversed(self.attached):
            try:
                await companion.close()
            except Exception:  # noqa: BLE001 - the agent's container is removed all the same
                pass
        if self._shell is not None:
            await self._shell.close()
        await _call([*self.cli, "stop" if self.keep else "rm", *([] if self.keep else ["-f", "-v", *_no_grace(self.cli)]), self.name], 60)
        self._remove_settings(keep_binds=self.keep)


def _cgroup_files(pid: str) -> list[str]:
    """The container's pids, memory and cpu cgroups (v1) or its v2 cgroup: ``cgroup.procs`` files to join."""
    files = []
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return []
    unified = Path("/sys/fs/cgroup/cgroup.controllers").exists()
    for line in lines:
        _, controllers, path = line.split(":", 2)
        names = controllers.split(",") if controllers else []
        if not controllers and unified:
            candidate = Path("/sys/fs/cgroup") / path.lstrip("/") / "cgroup.procs"
        elif {"pids", "memory", "cpu"} & set(names):
            candidate = Path("/sys/fs/cgroup", controllers) / path.lstrip("/") / "cgroup.procs"
            if not candidate.exists():
                candidate = Path("/sys/fs/cgroup", [n for n in names if n in ("pids", "memory", "cpu")][0]) / path.lstrip("/") / "cgroup.procs"
        else:
            continue
        if candidate.exists():
            files.append(str(candidate))
    return files


def _own_cgroup(files: list[str], name: str) -> Path | None:
    """A child cgroup ``name`` of the container's pids cgroup (v1; its cgroup on v2), put in
    ``files`` (the ``cgroup.procs`` files nsutil joins) in place of its parent: the container's
    limits still bound it, and its processes can be killed whole. None where it cannot be made."""
    index = next((i for i, f in enumerate(files) if (Path(f).parent / "pids.max").exists()),
                 0 if len(files) == 1 else None)
    if index is None:
        return None
    group = Path(files[index]).parent / name
    try:
        group.mkdir()
    except OSError:
        return None
    files[index] = str(group / "cgroup.procs")
    return group


def _release_cgroup(group: Path) -> None:
    """Move what is left in ``group`` (an agent's background process) to its parent, the
    container's cgroup, and remove it."""
    for _ in range(100):
        try:
            pids = (group / "cgroup.procs").read_text().split()
        except OSError:
            return
        for pid in pids:
            try:
                (group.parent / "cgroup.procs").write_text(pid)
            except OSError:  # it ended meanwhile
                pass
        try:
            group.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:  # a fork landed in it meanwhile: again
            continue


def _bounding_caps(pid: str) -> list[int]:
    """The container's capability bounding set (its init's), as capability numbers."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("CapBnd:"):
            mask = int(line.split()[1], 16)
            return [bit for bit in range(64) if mask >> bit & 1]
    return []


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\"'\"'") + "'"

