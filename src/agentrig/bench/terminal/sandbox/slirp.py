"""slirp4netns: the host's outbound network for a network namespace of the trial's own.

A trial with services beside the agent's gets its own network namespace (so two trials never
share a port and nothing listens on the host's interfaces); when the trial has the network,
``Slirp`` attaches slirp4netns to it: a tap device with the host's outbound network behind
user-mode NAT (as rootless podman does), the host's loopback unreachable.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import tempfile

from ..core.base import SandboxError
from ..shell import end_process


def slirp_binary() -> str | None:
    return shutil.which("slirp4netns")


class Slirp:
    """slirp4netns attached to the network namespace of a process (a trial's sandbox init): a tap
    device with the host's outbound network behind user-mode NAT, the host's loopback unreachable.
    It exits when this process does (``--exit-fd``), so a killed runner leaves none behind."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self._proc: asyncio.subprocess.Process | None = None
        self._exit_w: int | None = None

    async def start(self, timeout_s: float = 30) -> None:
        binary = slirp_binary()
        if binary is None:
            raise SandboxError("slirp4netns is not installed (apt-get install slirp4netns): a trial with services "
                               "and the network needs it")
        ready_r, ready_w = os.pipe()
        exit_r, self._exit_w = os.pipe()
        os.set_inheritable(self._exit_w, False)
        log = tempfile.TemporaryFile()  # what it says (never a pipe nobody reads while it runs)
        try:
            self._proc = await asyncio.create_subprocess_exec(
                binary, "--configure", "--mtu=65520", "--disable-host-loopback",
                f"--ready-fd={ready_w}", f"--exit-fd={exit_r}", str(self.pid), "tap0",
                stdin=asyncio.subprocess.DEVNULL, stdout=log, stderr=log, pass_fds=(ready_w, exit_r),
            )
        except OSError as exc:
            os.close(ready_r)
            log.close()
            raise SandboxError(f"cannot start slirp4netns: {exc.strerror or exc}") from None
        finally:
            os.close(ready_w)
            os.close(exit_r)
        loop = asyncio.get_running_loop()
        try:
            ready = await asyncio.wait_for(loop.run_in_executor(None, os.read, ready_r, 1), timeout_s)
        except asyncio.TimeoutError:
            ready = b""
        finally:
            os.close(ready_r)
        with log:
            if ready != b"1":
                await self.close()
                log.seek(0)
                said = log.read()[-500:].decode(errors="replace").strip()
                raise SandboxError(f"slirp4netns did not configure the trial's network: {said or 'no answer'}")

    async def close(self) -> None:
        if self._exit_w is not None:
            with contextlib.suppress(OSError):
                os.close(self._exit_w)  # slirp4netns exits when this end closes
            self._exit_w = None
        if self._proc is not None:
            await end_process(self._proc)
            self._proc = None
