"""Running commands: stateless and persistent shells, timeouts that kill everything, bounded output.

Every sandbox kind turns a command into an argv (``bash -lc COMMAND`` behind its own entry, e.g.
``nsenter`` into a bwrap sandbox) and hands it to this module:

- ``run_process`` runs one argv with stdout and stderr on one pipe, under a timeout. At the
  timeout the sandbox's ``kill`` callback ends the command and every process it started (a
  cgroup under bwrap, so ``setsid sleep 1000 &`` and ``nohup`` daemons die too; the process
  group elsewhere). When the command itself exits, whatever is in the pipe is read at once and
  the call returns; a background child that keeps the pipe open does not hold the call — its
  later output is read and dropped until it exits or the sandbox closes.
- ``PersistentShell`` (``persistent_shell.py``) keeps one ``bash`` per trial (``cd``, ``export`` and background jobs
  survive between commands). Each command is sent as ``eval $'...'`` followed by an
  end-of-command marker carrying a random token and ``$?``. A command that times out kills the
  shell (and what it started); the next command gets a fresh shell in the working directory and
  the result says so.
- ``OutputCap`` keeps at most ``limit`` characters while streaming: the first half and the last
  half, with the number of characters left out, so a 10 MB output is never held whole. Up to
  three lines of the part left out that show a fetch failing (``netfail``'s words: "Could not
  resolve host", "unable to resolve host address" …) are kept after the marker: an
  `apt-get install` whose long output buries a `wget` that could not reach its host still says so
  to the agent, and to the audit that names the host.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import os
import signal
import time
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from .netfail import FETCH_FAILURE
from .sandbox.base import CommandResult

KillFn = Callable[[Any], Awaitable[None]]
_CHUNK = 65536
_NOTED, _NOTED_CHARS = 3, 400  # lines of an omitted middle that show a fetch failing: how many, how long


class OutputCap:
    """Streams text in, keeps the head and the tail, counts what falls out of the middle."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.total = 0
        self._head: list[str] = []
        self._head_len = 0
        self._tail: deque[str] = deque()
        self._tail_len = 0
        self._tail_keep = limit - limit // 2
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.frozen = False
        self._partial = ""  # the line still being written (bounded), for the fetch-failure watch
        self._noted: dict[int, str] = {}  # stream offset of a line that shows a fetch failing -> the line

    def feed_bytes(self, data: bytes) -> None:
        if not self.frozen:
            self.feed(self._decoder.decode(data))

    def _watch(self, text: str, final: bool = False) -> None:
        """Note (up to three) whole lines that show a fetch failing; cheap when none does."""
        window = self._partial + text
        start = self.total - len(window)
        if len(self._noted) < _NOTED and FETCH_FAILURE.search(window):
            for found in FETCH_FAILURE.finditer(window):
                begin = window.rfind("\n", 0, found.start()) + 1
                end = window.find("\n", found.end())
                if end < 0 and not final:
                    break  # the line is not complete yet: the next chunk sees it again
                if len(self._noted) < _NOTED and start + begin not in self._noted:
                    self._noted[start + begin] = window[begin:end if end >= 0 else None][:_NOTED_CHARS]
        self._partial = window[window.rfind("\n") + 1:][-_NOTED_CHARS:]

    def feed(self, text: str) -> None:
        if self.frozen or not text:
            return
        self.total += len(text)
        self._watch(text)
        if self._head_len < self.limit:
            take = text[: self.limit - self._head_len]
            self._head.append(take)
            self._head_len += len(take)
        self._tail.append(text)
        self._tail_len += len(text)
        while self._tail and self._tail_len - len(self._tail[0]) >= self._tail_keep:
            self._tail_len -= len(self._tail.popleft())
        if self._tail_len > 4 * self._tail_keep and len(self._tail) == 1:  # one huge chunk
            only = self._tail.popleft()[-self._tail_keep :]
            self._tail.append(only)
            self._tail_len = len(only)

    def result(self) -> tuple[str, int]:
        """(text, omitted characters)."""
        if not self.frozen:
            self.feed(self._decoder.decode(b"", final=True))
            self._watch("", final=True)
        head = "".join(self._head)
        if self.total <= self.limit:
            return head, 0
        keep_head = self.limit // 2
        tail = "".join(self._tail)[-self._tail_keep :]
        omitted = self.total - keep_head - len(tail)
        kept = "".join(f"[kept from the part left out: {line}]\n" for at, line in sorted(self._noted.items())
                       if keep_head <= at < self.total - len(tail))
        return f"{head[:keep_head]}\n[... {omitted} characters omitted ...]\n{kept}{tail}", omitted


class _PipeReader:
    """Reads a non-blocking pipe from the event loop and hands chunks to a callback."""

    def __init__(self, fd: int, on_data: Callable[[bytes], None]) -> None:
        self.fd = fd
        self.on_data = on_data
        self.eof = asyncio.get_running_loop().create_future()
        os.set_blocking(fd, False)
        asyncio.get_running_loop().add_reader(fd, self._ready)

    def _ready(self) -> None:
        self.drain()

    def drain(self) -> None:
        """Read everything available now; stop at EOF."""
        while not self.eof.done():
            try:
                data = os.read(self.fd, _CHUNK)
            except BlockingIOError:
                return
            except OSError:
                data = b""
            if not data:
                self.close()
                return
            self.on_data(data)

    def close(self) -> None:
        if not self.eof.done():
            asyncio.get_running_loop().remove_reader(self.fd)
            os.close(self.fd)
            self.eof.set_result(None)


# Readers of pipes still held open by background children after their command returned; they
# drop what they read. `close_drainers` ends them when the sandbox closes.
_DRAINERS: set[_PipeReader] = set()


def close_drainers(readers: set[_PipeReader] | None = None) -> None:
    for reader in list(readers if readers is not None else _DRAINERS):
        reader.close()
        _DRAINERS.discard(reader)


def exit_status(returncode: int | None) -> int | None:
    """A shell-style exit status: a process killed by signal N gives 128 + N."""
    if returncode is None:
        return None
    return 128 - returncode if returncode < 0 else returncode


async def kill_process_group(proc: Any) -> None:
    """The fallback kill: the command's process group (it was started in a new session)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(proc.pid, signal.SIGKILL)


async def end_process(proc: asyncio.subprocess.Process, timeout_s: float = 5.0) -> None:
    """Kill `proc` if it runs, wait for it, and read its pipes to their end. Its transport is then
    closed while the loop runs: a pipe still open when the loop closes (a grandchild held it a
    moment longer) would make the transport's ``__del__`` report "Event loop is closed"."""
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
    try:
        await asyncio.wait_for(proc.communicate(), timeout_s)
    except (asyncio.TimeoutError, ValueError, OSError):
        # a pipe still held elsewhere after timeout_s (a loaded machine): close the transport now,
        # while the loop runs, rather than leave it to __del__ after the loop has closed
        abandon_process(proc)
    except BaseException:  # cancelled while waiting (the run stops): the same, then go on stopping
        abandon_process(proc)
        raise


def abandon_process(proc: asyncio.subprocess.Process) -> None:
    """Kill ``proc`` and close its transport now, without waiting (the loop must be running): for a
    process whose orderly end (``end_process``) was cut short by a cancellation."""
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
    transport = getattr(proc, "_transport", None)
    if transport is not None:
        transport.close()


class Proc(Protocol):
    """A started process: asyncio's Process, or a command forked by the bwrap spawner."""

    pid: int
    returncode: int | None

    async def wait(self) -> int: ...


# (stdout+stderr write fd, stdin read fd or None for /dev/null) -> the started process.
Spawn = Callable[[int, "int | None"], Awaitable[Proc]]


def subprocess_spawn(argv: list[str], env: dict[str, str], cwd: str | None = None) -> Spawn:
    """A Spawn for a plain host subprocess in a new session (local and container sandboxes)."""

    async def spawn(out_fd: int, in_fd: int | None) -> Proc:
        return await asyncio.create_subprocess_exec(
            *argv, stdin=in_fd if in_fd is not None else asyncio.subprocess.DEVNULL,
            stdout=out_fd, stderr=out_fd, env=env, cwd=cwd, start_new_session=True,
        )

    return spawn


async def run_process(
    spawn: Spawn,
    *,
    timeout_s: float,
    limit: int,
    kill: KillFn | None = None,
    drainers: set | None = None,
) -> CommandResult:
    """Run one command under a timeout; stdout+stderr on one pipe, cut to ``limit`` characters."""
    cap = OutputCap(limit)
    read_fd, write_fd = os.pipe()
    started = time.monotonic()
    try:
        proc = await spawn(write_fd, None)
    except BaseException:
        os.close(read_fd)
        raise
    finally:
        os.close(write_fd)
    reader = _PipeReader(read_fd, cap.feed_bytes)
    timed_out = False
    try:
        try:
            await asyncio.wait_for(proc.wait(), timeout=timeout_s)
        except asyncio.TimeoutError:
            timed_out = True
            await (kill or kill_process_group)(proc)
            await proc.wait()
    except BaseException:  # cancelled (e.g. the trial's wall clock): leave nothing running
        await (kill or kill_process_group)(proc)
        with contextlib.suppress(BaseException):
            await asyncio.wait_for(proc.wait(), timeout=5)
        reader.close()
        raise
    reader.drain()
    if not reader.eof.done():  # a background child still holds the pipe: stop keeping output
        cap.frozen = True  # the reader keeps draining; a frozen cap drops what it reads
        (_DRAINERS if drainers is None else drainers).add(reader)
    text, omitted = cap.result()
    return CommandResult(
        exit_code=None if timed_out else exit_status(proc.returncode),
        output=text, omitted_chars=omitted, timed_out=timed_out,
        duration_s=time.monotonic() - started,
    )
