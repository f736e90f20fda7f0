"""The host side of ``zygote.py``: have its factory fork a spawner for a sandbox, and ask it to fork commands."""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

from ..core.base import SandboxError

ZYGOTE = Path(__file__).with_name("zygote.py")

# Capabilities a sandboxed root keeps: Docker's default set without MKNOD, NET_RAW, AUDIT_WRITE
# and SETFCAP. chown=0 dac_override=1 fowner=3 fsetid=4 kill=5 setgid=6 setuid=7 setpcap=8
# net_bind_service=10 sys_chroot=18.
AGENT_CAPS = (0, 1, 3, 4, 5, 6, 7, 8, 10, 18)


class SpawnedProc:
    """A command forked by the zygote (host pid); its exit status arrives over the socket."""

    def __init__(self, pid: int, exited: asyncio.Future[int]) -> None:
        self.pid = pid
        self._exited = exited
        self.returncode: int | None = None

    async def wait(self) -> int:
        status = await asyncio.shield(self._exited)
        self.returncode = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
        return self.returncode


class Spawner:
    def __init__(self) -> None:
        self._sock: socket.socket | None = None
        self.pid: int | None = None  # the spawner's (a child of the factory, not of this process)
        self._next = 0
        self._replies: dict[int, asyncio.Future[dict]] = {}
        self._exits: dict[int, asyncio.Future[int]] = {}
        self._early: dict[int, int] = {}
        self._ready: asyncio.Future[dict] | None = None

    async def start(self, target_pid: int, cgroup_dirs: dict[str, Path] | None) -> None:
        dirs = cgroup_dirs or {}
        ours = _new_spawner()
        loop = asyncio.get_running_loop()
        self._ready = loop.create_future()
        self._sock = ours
        setup = {"target": target_pid, "caps": list(AGENT_CAPS),
                 "cgroups": [str(dirs[c]) if c in dirs else "" for c in ("pids", "memory", "cpu")]}
        try:
            ours.send(json.dumps(setup).encode())
        except OSError as exc:
            raise SandboxError(f"the sandbox spawner did not start: {exc}") from None
        ours.setblocking(False)
        loop.add_reader(ours.fileno(), self._on_message)
        try:
            first = await asyncio.wait_for(asyncio.shield(self._ready), timeout=30)
        except asyncio.TimeoutError:
            raise SandboxError("the sandbox spawner did not answer within 30 s") from None
        if "fatal" in first:
            raise SandboxError(f"cannot enter the sandbox: {first['fatal']}")
        self.pid = first.get("pid")

    def _on_message(self) -> None:
        assert self._sock is not None
        while True:
            try:
                data = self._sock.recv(1 << 16)
            except BlockingIOError:
                return
            except OSError:
                data = b""
            if not data:
                self._fail_all(SandboxError("the sandbox spawner ended"))
                return
            message = json.loads(data)
            if "ready" in message or "fatal" in message:
                if self._ready is not None and not self._ready.done():
                    self._ready.set_result(message)
            elif "exit" in message:
                pid, status = int(message["exit"]), int(message["status"])
                future = self._exits.get(pid)
                if future is None:
                    self._early[pid] = status
                elif not future.done():
                    future.set_result(status)
            elif "id" in message:
                future = self._replies.pop(int(message["id"]), None)
                if future is not None and not future.done():
                    future.set_result(message)

    def _fail_all(self, exc: Exception) -> None:
        if self._sock is not None:
            with contextlib.suppress(Exception):
                asyncio.get_running_loop().remove_reader(self._sock.fileno())
        for future in [*self._replies.values(), *self._exits.values()]:
            if not future.done():
                future.set_exception(exc)
        if self._ready is not None and not self._ready.done():
            self._ready.set_result({"fatal": str(exc)})

    async def spawn(self, argv: list[str], env: dict[str, str], cwd: str, *, out_fd: int,
                    in_fd: int | None = None, cgroup: str | None = None) -> SpawnedProc:
        if self._sock is None or self._sock.fileno() < 0:
            raise SandboxError("the sandbox is not running")
        self._next += 1
        request_id = self._next
        loop = asyncio.get_running_loop()
        reply: asyncio.Future[dict] = loop.create_future()
        self._replies[request_id] = reply
        payload = json.dumps({"id": request_id, "argv": argv, "env": env, "cwd": cwd, "cgroup": cgroup}).encode()
        fds = [out_fd] + ([in_fd] if in_fd is not None else [])
        try:
            socket.send_fds(self._sock, [payload], fds)
        except OSError as exc:
            raise SandboxError(f"the sandbox spawner is gone: {exc}") from None
        answer = await reply
        if "error" in answer:
            raise SandboxError(f"the sandbox could not fork: {answer['error']}")
        pid = int(answer["pid"])
        exited: asyncio.Future[int] = loop.create_future()
        if pid in self._early:
            exited.set_result(self._early.pop(pid))
        self._exits[pid] = exited
        return SpawnedProc(pid, exited)

    async def close(self) -> None:
        """Closing the socket ends the spawner (its factory reaps it); its commands end with the sandbox."""
        if self._sock is not None:
            with contextlib.suppress(Exception):
                asyncio.get_running_loop().remove_reader(self._sock.fileno())
            self._sock.close()


# One factory per process (``zygote.py --factory``): it imported what a spawner needs once and
# forks one per sandbox. Plain Popen: it belongs to no event loop.
_FACTORY: tuple[subprocess.Popen, socket.socket] | None = None


def _launch_factory() -> tuple[subprocess.Popen, socket.socket]:
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        proc = subprocess.Popen(
            [sys.executable, "-I", "-S", str(ZYGOTE), "--factory", str(theirs.fileno())],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            pass_fds=(theirs.fileno(),), env={"PATH": os.defpath}, start_new_session=True,
        )
    except OSError as exc:
        ours.close()
        raise SandboxError(f"cannot start the sandbox spawner ({sys.executable}): {exc}") from None
    finally:
        theirs.close()
    return proc, ours


def prestart() -> None:
    """Start the factory now if it is not running (its interpreter's start then overlaps other work)."""
    global _FACTORY
    if _FACTORY is None or _FACTORY[0].poll() is not None:
        _stop_factory()
        _FACTORY = _launch_factory()


def _new_spawner() -> socket.socket:
    """A socket to a spawner the factory forks for one sandbox (the factory started if needed)."""
    global _FACTORY
    for _attempt in range(2):
        if _FACTORY is None or _FACTORY[0].poll() is not None:
            _stop_factory()
            _FACTORY = _launch_factory()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            socket.send_fds(_FACTORY[1], [b"spawn"], [theirs.fileno()])
            return ours
        except OSError:  # the factory is gone: start another once
            ours.close()
            _stop_factory()
        finally:
            theirs.close()
    raise SandboxError("the sandbox spawner factory does not take requests")


@atexit.register
def _stop_factory() -> None:
    global _FACTORY
    if _FACTORY is not None:
        proc, sock = _FACTORY
        _FACTORY = None
        sock.close()
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            proc.kill()
            proc.wait(timeout=5)
