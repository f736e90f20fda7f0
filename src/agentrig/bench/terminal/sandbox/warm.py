"""The host side of the warm verifier (``pytest_server.py``): start it once, send it a trial's tests.

``prestart()`` launches the server ahead of time (a bwrap sandbox calls it when it starts, so the
import of pytest overlaps the first agent phase); ``spawn(request, out_fd)`` sends one request
and returns the forked child as a process the shell's ``run_process`` can wait for and time out
(its pid is a host pid in the trial's cgroup; its exit status arrives on the request's own
socket), or None when the server cannot take it (not started, gone, refused) — the caller then
runs the cold command. A server that dies before answering anything is not started again in
this process.
"""

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
from .imagefiles import image_program_ids

SERVER = Path(__file__).with_name("pytest_server.py")
COLD = 201  # pytest_server.COLD: the child ran nothing
# The server's own environment: what the tests' interpreter would start with, minus everything
# of the runner's (keys included). The sandbox's environment is set per request. The server runs
# with the cold command's interpreter flags (-s -P: no user site, no script directory on the path).
SERVER_ENV = {"PATH": os.defpath, "LANG": "C.UTF-8", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
# PYTHON* variables the interpreter never reads: the official python images' build metadata
INERT_PYTHON_VARS = frozenset({"PYTHON_VERSION", "PYTHON_SHA256", "PYTHON_PIP_VERSION", "PYTHON_SETUPTOOLS_VERSION",
                               "PYTHON_GET_PIP_URL", "PYTHON_GET_PIP_SHA256"})
ANSWER_TIMEOUT_S = 120.0  # the first request waits for the server's warm-up


class _Server:
    def __init__(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-s", "-P", str(SERVER), str(theirs.fileno())],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                pass_fds=(theirs.fileno(),), env=SERVER_ENV, cwd="/", start_new_session=True,
            )
        except OSError:
            ours.close()
            raise
        finally:
            theirs.close()
        ours.setblocking(False)
        self.sock = ours
        self.answered = False

    def alive(self) -> bool:
        return self.proc.poll() is None and self.sock.fileno() >= 0

    def stop(self) -> None:
        self.sock.close()
        if self.proc.poll() is None:
            with contextlib.suppress(OSError):
                self.proc.kill()
        with contextlib.suppress(Exception):
            self.proc.wait(timeout=5)


_SERVER: _Server | None = None
_BROKEN = False  # the server died before it ever answered: not tried again


def _server() -> _Server | None:
    global _SERVER, _BROKEN
    if _SERVER is not None and not _SERVER.alive():
        if not _SERVER.answered:
            _BROKEN = True
        _SERVER.stop()
        _SERVER = None
    if _SERVER is None and not _BROKEN:
        try:
            _SERVER = _Server()
        except OSError:
            _BROKEN = True
    return _SERVER


def prestart() -> None:
    """Start the server now if it is not running (its warm-up then overlaps other work)."""
    _server()


class WarmProc:
    """The server's forked child (host pid); ``wait`` reads its exit status from the answer socket."""

    def __init__(self, pid: int, sock: socket.socket) -> None:
        self.pid = pid
        self.returncode: int | None = None
        self._sock = sock
        self._exit: asyncio.Task | None = None

    async def _read_exit(self) -> int:
        try:
            data = await asyncio.get_running_loop().sock_recv(self._sock, 4096)
        finally:
            self._sock.close()
        if not data:
            raise SandboxError("the warm verifier ended while the tests ran")
        status = int(json.loads(data)["exit"])
        return -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)

    async def wait(self) -> int:
        if self._exit is None:
            self._exit = asyncio.ensure_future(self._read_exit())
        self.returncode = await asyncio.shield(self._exit)
        return self.returncode


async def spawn(request: dict, out_fd: int) -> WarmProc | None:
    """Send one request (see pytest_server.py); None when the server cannot take it."""
    server = _server()
    if server is None:
        return None
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        socket.send_fds(server.sock, [json.dumps(request).encode()], [out_fd, theirs.fileno()])
    except OSError:  # gone, or its queue is full: the cold command does it
        ours.close()
        return None
    finally:
        theirs.close()
    ours.setblocking(False)
    try:
        data = await asyncio.wait_for(asyncio.get_running_loop().sock_recv(ours, 4096), ANSWER_TIMEOUT_S)
    except (asyncio.TimeoutError, OSError):
        ours.close()
        return None
    except BaseException:
        ours.close()
        raise
    answer = json.loads(data) if data else {}
    if "pid" not in answer:
        ours.close()
        return None
    server.answered = True
    return WarmProc(int(answer["pid"]), ours)


def starts_alike(env: dict[str, str]) -> bool:
    """Whether a cold interpreter started with `env` would start as the server did: plugin
    autoload off, no PYTHON* variable the interpreter reads (at start-up only), the server's locale."""
    return (env.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD") == "1"
            and not any(k.startswith("PYTHON") and k not in INERT_PYTHON_VARS for k in env)
            and env.get("LANG") == SERVER_ENV["LANG"] and not env.get("LC_ALL") and not env.get("LC_CTYPE"))


async def run_pytest(box, args: list[str], timeout_s: float, env: dict[str, str], extra_ro_binds: dict[str, str],
                     remove: list[str] | None = None, strict_cwd: bool = False, shlvl: int = 0,
                     reward: dict | None = None, rw_binds: dict[str, str] | None = None):
    """``python -s -P -m pytest ARGS`` in bwrap sandbox `box`, as its ``run_verifier`` would run
    it (same cgroup, binds, removals, capabilities, directory, environment), by the warm server.
    `reward` (``tasks/staging.RewardPlan`` as a dict): a Harbor test.sh, whose reward file the server's
    child then writes from pytest's status as the script would (into `rw_binds`, as the cold
    command's). None when the server ran nothing (not available, refused, a check failed)."""
    if not starts_alike({**box.env, **env}):
        return None
    command_dir, spec = box._verifier_spec(env, extra_ro_binds, rw_binds, remove)
    names = ["bash", *(reward or {}).get("programs", [])]
    programs = image_program_ids(names, spec["env"].get("PATH", ""), box.layer_dir, box.base_root)
    request = {"target": box.init_pid, "spec": spec, "args": args, "strict_cwd": strict_cwd, "shlvl": shlvl,
               "python": sys.executable, "reward": reward, "programs": programs}
    refused: list[bool] = []

    async def start(out_fd: int, in_fd: int | None):
        proc = await spawn(request, out_fd)
        if proc is None:
            refused.append(True)
            raise SandboxError("the warm verifier did not take the request")
        return proc

    try:
        result = await box._verifier_process(start, command_dir, timeout_s)
    except SandboxError:
        if refused:
            return None
        raise
    if result.exit_code == COLD and not result.output:
        return None
    return result


@atexit.register
def _stop() -> None:
    global _SERVER
    if _SERVER is not None:
        _SERVER.stop()
        _SERVER = None
