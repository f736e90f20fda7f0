"""A listening socket inside a sandbox's network namespace, served by a process outside it.

    sock = await listen_inside(sandbox.init_pid)   # 127.0.0.1:PORT as the sandbox's processes see it

An installed agent (mini-swe-agent, Codex, Claude Code, a user's command) runs inside the trial's
sandbox and must reach the trial's measuring proxy — and nothing else when the task has no
network. A socket belongs to the network namespace it was *created* in, whichever thread later
accepts on it: so one short-lived thread enters the sandbox's namespace (``setns``), creates and
binds the socket on the sandbox's own loopback, and ends; the proxy (an aiohttp server in
agentrig's process) then serves on it. The sandbox gains one open port on its loopback and no
route anywhere: with the task's network off, ``127.0.0.1:PORT`` is the only thing it can reach.

A sandbox that shares the host's network (bwrap with the task's network on) gets a socket on the
host's loopback, which is the same thing. Entering another process's namespace needs root (as
the bwrap and container sandboxes' ``init_pid`` does): without it the error names the fix.
"""

from __future__ import annotations

import asyncio
import ctypes
import os
import socket
import threading

from ..core.base import SandboxError

CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)


def _same_namespace(pid: int) -> bool:
    return os.stat(f"/proc/{pid}/ns/net").st_ino == os.stat("/proc/self/ns/net").st_ino


def _bind_in(pid: int | None) -> socket.socket:
    """Create a listening TCP socket on 127.0.0.1 in the network namespace of ``pid`` (this
    thread's own when None). Called in a thread of its own: ``setns`` changes only the calling
    thread's namespace, and the thread ends right after."""
    if pid is not None and not _same_namespace(pid):
        fd = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY)
        try:
            if _libc.setns(fd, CLONE_NEWNET) != 0:
                err = ctypes.get_errno()
                raise OSError(err, f"setns into the network namespace of pid {pid}: {os.strerror(err)}")
        finally:
            os.close(fd)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        sock.listen(128)
        sock.setblocking(False)
    except BaseException:
        sock.close()
        raise
    return sock


def bind_inside(pid: int | None) -> socket.socket:
    """``_bind_in`` in a fresh thread (this thread's namespace stays the host's)."""
    out: dict = {}

    def work() -> None:
        try:
            out["sock"] = _bind_in(pid)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            out["error"] = exc

    thread = threading.Thread(target=work, name="agentrig-netns-bind", daemon=True)
    thread.start()
    thread.join()
    if "error" in out:
        exc = out["error"]
        if isinstance(exc, PermissionError) or getattr(exc, "errno", None) in (1, 13):
            raise SandboxError(f"cannot open the agent's proxy port inside the sandbox ({exc}); "
                               "installed agents need agentrig to run as root (fix: run as root, or use the "
                               "built-in bash agent)") from None
        raise SandboxError(f"cannot open the agent's proxy port inside the sandbox: {exc}") from None
    return out["sock"]


async def listen_inside(pid: int | None) -> socket.socket:
    """The listening socket for the sandbox whose init is ``pid`` (see the module docstring)."""
    if pid is not None and not os.path.exists(f"/proc/{pid}/ns/net"):
        raise SandboxError(f"the sandbox's init (pid {pid}) is gone: it cannot get a proxy port")
    return await asyncio.get_running_loop().run_in_executor(None, bind_inside, pid)
