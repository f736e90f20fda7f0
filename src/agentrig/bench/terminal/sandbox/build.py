"""Build a task's layer once: the Dockerfile's steps replayed on the host root, cached by hash.

A layer is a directory ``CACHE/layers/KEY`` holding ``upper/usr``, ``upper/etc``, ... (what the
steps changed under the host's directories, whiteouts included) and ``top/`` (the top-level
directories the image has beyond the host's: ``/app``, ``/root``, ``/home``, ``/tmp``, ``/run``,
...). Trials mount it read-only as the lower layer of their overlays, so k trials of a task
share one build. ``KEY`` hashes the plan, every file COPY/ADD reads, and the host (its OS
release, its package database, the layer format): a change to any of them builds anew. Builds
of the same key wait on a file lock: one builds, the others reuse it.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import glob
import hashlib
import json
import os
import shlex
import shutil
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from ..core.base import DISK_FULL, SandboxError, SandboxSettings, TaskBuildError
from ..core.buildfail import command_fetch, earlier_fetch, step_command
from ..core.hostsettings import MOUNT, host_settings_binds
from ..core.netfail import network_failure, registry_outage, settings_fault
from ..tasks.dockerfile import BuildPlan
from .bwrap import BwrapSandbox, HOST_DIRS, SPECIAL, remove_tree
from .runtime_files import drop_runtime_files

LAYER_FORMAT = "2"  # 2: meta.json records what the build could not reach
CONTEXT_MOUNT = "/.agentrig-build-context"


class Layer(BaseModel):
    path: Path
    key: str
    workdir: str
    env: dict[str, str]
    built: bool  # True: built by this call; False: taken from the cache
    unreached: list[str] = []  # steps that succeeded although a fetch in them could not reach its host


def host_fingerprint() -> str:
    digest = hashlib.sha256(LAYER_FORMAT.encode())
    for name in ("/etc/os-release", "/var/lib/dpkg/status"):
        with contextlib.suppress(OSError):
            info = os.stat(name)
            digest.update(f"{name} {info.st_size} {info.st_mtime_ns}".encode())
    return digest.hexdigest()[:16]


def layer_key(plan: BuildPlan, context_dir: Path, workdir: str, base_key: str | None = None) -> str:
    digest = hashlib.sha256(plan.content_hash(context_dir).encode())
    digest.update(f"{workdir}|{base_key or host_fingerprint()}|{LAYER_FORMAT}".encode())  # the format: on a built root too
    return digest.hexdigest()[:32]


def _skeleton(top: Path, workdir: str, base_root: Path | None = None) -> None:
    """What every image has at the top: /root (from /etc/skel), /home, /tmp, /run, the workdir.
    Over a built base root, only the workdir when the base lacks it."""
    if base_root is not None:
        first = workdir.strip("/").split("/")[0]
        if first and not (base_root / first).exists():
            (top / workdir.lstrip("/")).mkdir(parents=True, exist_ok=True)
        return
    (top / "root").mkdir(parents=True, exist_ok=True)
    os.chmod(top / "root", 0o700)
    skel = Path("/etc/skel")
    if skel.is_dir():
        for entry in skel.iterdir():
            if entry.is_file():
                shutil.copy2(entry, top / "root" / entry.name)
    for name in ("home", "run", "mnt", "media"):
        (top / name).mkdir(exist_ok=True)
    (top / "tmp").mkdir(exist_ok=True)
    os.chmod(top / "tmp", 0o1777)
    first = workdir.strip("/").split("/")[0]
    if first and first not in HOST_DIRS and first not in SPECIAL:
        (top / workdir.lstrip("/")).mkdir(parents=True, exist_ok=True)


def _copy_script(step: Any, context: Path, mount: str = CONTEXT_MOUNT) -> str:
    """Shell commands doing a COPY/ADD inside the build sandbox (sources via the context ``mount``)."""
    lines: list[str] = []
    sources: list[str] = []
    for source in step.sources:
        rel = source.lstrip("/")
        matches = sorted(glob.glob(str(context / rel))) if any(c in rel for c in "*?[") else [str(context / rel)]
        for match in matches:
            real = os.path.realpath(match)
            if not (real == str(context.resolve()) or real.startswith(str(context.resolve()) + os.sep)):
                raise TaskBuildError(f"line {step.line}: {step.op} {source} is outside the build context")
            if not os.path.lexists(match):
                raise TaskBuildError(f"line {step.line}: {step.op} {source}: no such file in the build context {context}")
            sources.append(os.path.relpath(match, context))
        if not matches:
            raise TaskBuildError(f"line {step.line}: {step.op} {source}: no file in the build context matches")
    dest = step.dest
    for rel in sources:
        inside = shlex.quote(f"{mount}/{rel}")
        host = context / rel
        if step.op == "ADD" and host.is_file() and _is_archive(host):
            lines.append(f"mkdir -p {shlex.quote(dest)} && tar -xf {inside} -C {shlex.quote(dest)}")
        elif host.is_dir():
            lines.append(f"mkdir -p {shlex.quote(dest)} && cp -R --preserve=mode,timestamps {inside}/. {shlex.quote(dest)}/")
        elif step.dest_is_dir:
            lines.append(f"mkdir -p {shlex.quote(dest)} && cp --preserve=mode,timestamps {inside} {shlex.quote(dest)}/")
        else:
            parent = os.path.dirname(dest) or "/"
            lines.append(f"mkdir -p {shlex.quote(parent)} && cp --preserve=mode,timestamps {inside} {shlex.quote(dest)}")
        target = shlex.quote(dest if (host.is_dir() or step.dest_is_dir) else dest)
        if step.chown:
            lines.append(f"chown -R {shlex.quote(step.chown)} {target}")
        if step.chmod:
            lines.append(f"chmod -R {shlex.quote(step.chmod)} {target}")
    return " && ".join(lines) or "true"


def _is_archive(path: Path) -> bool:
    import tarfile

    try:
        return tarfile.is_tarfile(path)
    except OSError:
        return False


async def _run_steps(sandbox: BwrapSandbox, plan: BuildPlan, context: Path, settings: SandboxSettings,
                     network: bool) -> list[str]:
    """Play the steps; returns what the RUN steps that succeeded could not reach (a script that
    goes on after a failed `git clone`): the layer is then missing what they fetch. A step that
    fails is read for why (``_failed``)."""
    unreached: list[tuple[int, str]] = []  # (Dockerfile line, network_failure's finding) of steps that went on
    for step in plan.steps:
        if step.op == "WORKDIR":
            result = await sandbox.exec(["mkdir", "-p", step.dest], 60, cwd="/")
        elif step.op in ("COPY", "ADD"):
            result = await sandbox.exec(["/bin/sh", "-c", _copy_script(step, context)], settings.build_timeout_s, cwd="/")
        elif step.op == "RUN":
            result = await sandbox.exec(step.argv, settings.build_timeout_s, env=step.env, cwd=step.cwd)
        else:
            continue
        if result.timed_out or result.exit_code != 0:
            raise _failed(step, result, sandbox, settings, network, unreached)
        if step.op == "RUN" and (why := network_failure(result.output, " ".join(step.argv))):
            unreached.append((step.line, why))
    return [f"Dockerfile line {line}: {why}" for line, why in unreached]


def _failed(step: Any, result: Any, sandbox: BwrapSandbox, settings: SandboxSettings, network: bool,
            unreached: list[tuple[int, str]]) -> Exception:
    """Why the step failed: this machine's disk, TLS settings or registry (SandboxError), a fetch that
    could not reach its host — its own output's words, its command's fetch of a host this machine
    cannot resolve, or an earlier step's fetch that went on (``buildfail``): ``needs_network`` —
    else the task's (TaskBuildError)."""
    what = "timed out" if result.timed_out else f"exited {result.exit_code}"
    where = f"Dockerfile line {step.line}: {step.op} {what}"
    if DISK_FULL in result.output:  # the layer lives on this machine's disk: the host's fault, never the task's
        return SandboxError(f"{where}: this machine's disk is full "
                            f"(No space left on device) under {sandbox.trial_dir.parent}; free space and run again")
    exclusion = "needs_network" if (not network and step.uses_network()) else None
    text = result.output[-2000:]
    own = network_failure(result.output, " ".join(step.argv), result.exit_code) if step.op == "RUN" else None
    why = own or (command_fetch(step_command(step.argv)) if step.op == "RUN" else None)
    said = "it "
    if why is None and step.op == "RUN" and (earlier := earlier_fetch(unreached)) is not None:
        said = f"Dockerfile line {earlier[0]} went on after a fetch that failed: it "
        why = earlier[1]
    if network and (fault := settings_fault(why, settings.build_mode())):  # this machine's TLS settings
        return SandboxError(f"{where}: {fault}\n{text}")
    if network and (registry := registry_outage(why)):  # the plumbing's, not the task's
        return SandboxError(f"{where}: the package registry {registry} "
                            f"could not be reached from this machine (an outage, or a proxy whose certificate authority the image lacks: set [sandbox] build_network = \"auto\" or \"host-settings\"); run again\n{text}")
    if why and (network or why is not own):  # it could not reach what it (or an earlier step) fetches
        return TaskBuildError(f"{where}: {said}{why}\n{text}", exclusion="needs_network")
    return TaskBuildError(f"{where}:\n{text}", exclusion=exclusion)


HOST_SETTINGS_MOUNT = MOUNT


async def ensure_layer(task: Any, plan: BuildPlan, settings: SandboxSettings, base: Any = None,
                       base_root: Path | None = None) -> Layer:
    """The task's build layer: from the cache, or built now (once, under a lock). `base` (an
    images.BaseRecipe) and `base_root`: build over that root instead of the host's."""
    if not plan.supported:
        raise TaskBuildError(plan.reason or "unsupported Dockerfile", exclusion="needs_container")
    context = Path(getattr(task, "build_context", None) or getattr(task, "path", "."))
    workdir = plan.workdir if plan.has_workdir else getattr(task, "workdir", "/app")
    key = layer_key(plan, context, workdir, base.key() if base is not None else None)
    root = settings.resolved_cache_dir() / "layers"
    root.mkdir(parents=True, exist_ok=True)
    final = root / key
    meta = final / "meta.json"
    if meta.exists():
        return _load(final, built=False)
    lock = await _lock(root / f"{key}.lock")
    try:
        if meta.exists():
            return _load(final, built=False)
        staging = root / f".build-{key}-{os.getpid()}-{time.monotonic_ns()}"
        remove_tree(staging)
        (staging / "top").mkdir(parents=True)
        _skeleton(staging / "top", workdir, base_root)
        env = {**(base.env if base is not None else {}), **plan.env}
        needs_sandbox = any(s.op in ("RUN", "COPY", "ADD", "WORKDIR") for s in plan.steps)
        unreached: list[str] = []
        if needs_sandbox:
            mode = settings.build_mode()  # "auto" resolved on this host
            network = bool(mode if settings.network is None else (settings.network or mode))
            binds, build_env = {str(context): CONTEXT_MOUNT}, dict(base.env if base is not None else {})
            if network and mode == "host-settings":
                extra_binds, extra_env = host_settings_binds()
                binds.update(extra_binds)
                build_env.update(extra_env)
            sandbox = BwrapSandbox(trial_dir=staging, layer_dir=None, workdir="/", env=build_env, network=network,
                                   output_limit=settings.output_limit, keep=True, bwrap=settings.bwrap_path,
                                   ro_binds=binds, base_root=base_root)
            try:
                await sandbox.start()
                await sandbox.exec(["mkdir", "-p", workdir], 60, cwd="/")
                unreached = await _run_steps(sandbox, plan, context, settings, network)
            except BaseException:
                await sandbox.close()
                remove_tree(staging)
                raise
            await sandbox.close()
            _tidy(staging, base_root)
        (staging / "meta.json").write_text(json.dumps({
            "key": key, "workdir": workdir, "env": env, "base": plan.base,
            "base_root": str(base_root) if base_root is not None else None,
            "built_at": time.time(), "steps": len(plan.steps), "unreached": unreached,
        }, indent=2))
        os.rename(staging, final)
        return _load(final, built=True)
    finally:
        _unlock(lock)


def _tidy(staging: Path, base_root: Path | None = None) -> None:
    """Drop the build's scratch: overlay work dirs, mount points and the root's symlinks."""
    remove_tree(staging / "work")
    if base_root is not None:
        drop_runtime_files(staging / "upper" / "etc")  # the engine's, written for the build: never kept
    top = staging / "top"
    remove_tree(top / HOST_SETTINGS_MOUNT.strip("/"))  # only the binds' mount points: never kept
    shown = set(HOST_DIRS) | ({e.name for e in base_root.iterdir()} if base_root is not None else set())
    for entry in list(top.iterdir()):
        if entry.is_symlink() and (entry.name in {"bin", "sbin", "lib", "lib64", "lib32", "libx32"} or entry.name in shown):
            entry.unlink()
        elif entry.name in (*shown, *SPECIAL, CONTEXT_MOUNT.strip("/"), HOST_SETTINGS_MOUNT.strip("/")) and entry.is_dir():
            with contextlib.suppress(OSError):
                entry.rmdir()  # only when empty: a mount point


def _load(path: Path, *, built: bool) -> Layer:
    try:
        meta = json.loads((path / "meta.json").read_text())
    except (OSError, ValueError) as exc:
        raise SandboxError(f"the build cache entry {path} is damaged ({exc}); delete it") from None
    return Layer(path=path, key=meta["key"], workdir=meta["workdir"], env=meta.get("env", {}), built=built,
                 unreached=meta.get("unreached", []))


async def _lock(path: Path) -> int:
    """An exclusive flock, polled (a cancelled wait leaves no thread holding the lock)."""
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o600)
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return fd
            except BlockingIOError:
                await asyncio.sleep(0.05)
    except BaseException:
        os.close(fd)
        raise


def _unlock(fd: int) -> None:
    with contextlib.suppress(OSError):
        fcntl.flock(fd, fcntl.LOCK_UN)
    os.close(fd)
