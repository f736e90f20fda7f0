"""Running commands: stateless and persistent shells, timeouts that kill everything, bounded output.

Every sandbox kind turns a command into an argv (``bash -lc COMMAND`` behind its own entry, e.g.
``nsenter`` into a bwrap sandbox) and hands it to this module:

- ``run_process`` runs one argv with stdout and stderr on one pipe, under a timeout. At the
  timeout the sandbox's ``kill`` callback ends the command and every process it started (a
  cgroup under bwrap, so ``setsid sleep 1000 &`` and ``nohup`` daemons die too; the process
  group elsewhere). When the command itself exits, whatever is in the pipe is read at once and
  the call returns; a background child that keeps the pipe open does not hold the call — its
  later output is read and dropped until it exits or the sandbox closes.
- ``PersistentShell`` keeps one ``bash`` per trial (``cd``, ``export`` and background jobs
  survive between commands) on the same streams, timeouts and output caps. Each command is sent
  as ``eval $'...'`` followed by an end-of-command marker carrying a random token and ``$?``. A
  command that times out kills the shell (and what it started); the next command gets a fresh
  shell in the working directory and the result says so. A command sent with ``detach_after_s``
  (Terminal-Bench's ``block: false``) is left running after that long, and ``wait_idle`` waits
  for what was typed ahead to end.
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
import re
import secrets
import signal
import time
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from agentrig.procs import abandon_process, finish_despite_cancel, settle_process

from .core.base import CommandResult
from .core.netfail import FETCH_FAILURE

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


KILL_BOUND_S = 10.0  # a cancelled command's kill (an engine ``exec … kill``) is given this long


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
    except BaseException:  # cancelled (the trial's wall clock, Ctrl-C): leave nothing running
        # the kill finishes even if the stop cancels this trial again meanwhile (procs.py)
        with contextlib.suppress(Exception, asyncio.CancelledError):
            await finish_despite_cancel((kill or kill_process_group)(proc), KILL_BOUND_S)
        await settle_process(proc, 5)
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


def ansi_c_quote(text: str) -> str:
    """``$'...'`` with every byte escaped: bash decodes it without any external program."""
    return "$'" + "".join(f"\\x{b:02x}" for b in text.encode()) + "'"


_MARKER_WINDOW = 64  # characters held back while a marker may be arriving split across reads


class _Pending:
    """A command sent to the persistent shell, until its end marker comes."""

    def __init__(self, marker: re.Pattern[str], cap: OutputCap, done: asyncio.Future[int]) -> None:
        self.marker, self.cap, self.done = marker, cap, done
        self.detached = False  # its caller moved on (block: false); later output is dropped

    def feed(self, text: str) -> None:
        if not self.detached:
            self.cap.feed(text)


class PersistentShell:
    """One bash per trial; commands keep ``cd``, ``export`` and background jobs."""

    def __init__(
        self,
        spawn: Spawn,
        *,
        limit: int,
        kill: KillFn | None = None,
        before_command: Callable[[Proc], Awaitable[None]] | None = None,
    ) -> None:
        self.spawn = spawn  # starts `bash` reading commands from stdin, in the working directory
        self.limit = limit
        self.kill = kill or kill_process_group
        self.before_command = before_command  # e.g. move the shell into a fresh cgroup
        self.proc: Proc | None = None
        self._stdin: asyncio.WriteTransport | None = None
        self._reader: _PipeReader | None = None
        self._queue: deque[_Pending] = deque()  # commands sent whose end marker has not come yet
        self._buffer = ""
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.restarts = 0

    async def _start(self) -> None:
        read_fd, write_fd = os.pipe()
        in_read, in_write = os.pipe()
        try:
            self.proc = await self.spawn(write_fd, in_read)
        except BaseException:
            os.close(read_fd)
            os.close(in_write)
            raise
        finally:
            os.close(write_fd)
            os.close(in_read)
        loop = asyncio.get_running_loop()
        self._stdin, _ = await loop.connect_write_pipe(asyncio.Protocol, os.fdopen(in_write, "wb", buffering=0))
        self._queue.clear()
        self._buffer = ""
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._reader = _PipeReader(read_fd, self._dispatch)

    async def run(self, command: str, timeout_s: float, env: dict[str, str] | None = None,
                  detach_after_s: float | None = None) -> CommandResult:
        """Send one command and wait for its end marker (``timeout_s``). With ``detach_after_s``
        the call returns after that long even when the command is still running — as keys typed
        into a terminal with ``block: false`` — and the next command is queued behind it (bash
        reads it when the running one ends, as a terminal's typeahead); a detached command's later
        output is dropped. A later command's timeout also covers the wait behind it."""
        note = None
        if self.proc is None or self.proc.returncode is not None:
            if self.proc is not None:
                self.restarts += 1
            await self._stop()
            await self._start()
        assert self.proc is not None and self._stdin is not None and self._reader is not None
        if self.before_command is not None:
            await self.before_command(self.proc)
        token = secrets.token_hex(8)
        entry = _Pending(re.compile(rf"\n__AGENTRIG_DONE_{token}_(\d+)__\n"), OutputCap(self.limit),
                         asyncio.get_running_loop().create_future())
        self._queue.append(entry)
        done = entry.done
        exports = "".join(f"export {k}={_sh_quote(v)}; " for k, v in (env or {}).items() if _NAME.match(k))
        line = f"eval {ansi_c_quote(exports + command)} </dev/null; printf '\\n__AGENTRIG_DONE_{token}_%s__\\n' \"$?\"\n"
        started = time.monotonic()
        timed_out = detached = False
        exit_code: int | None = None
        proc, reader = self.proc, self._reader
        if not self._stdin.is_closing():
            self._stdin.write(line.encode())
        wait_s = timeout_s if detach_after_s is None else min(timeout_s, detach_after_s)
        try:
            finished = asyncio.ensure_future(asyncio.wait({done, reader.eof}, return_when=asyncio.FIRST_COMPLETED))
            try:
                await asyncio.wait_for(asyncio.shield(finished), timeout=wait_s)
            except asyncio.TimeoutError:
                timed_out = not done.done()
            finally:
                finished.cancel()
            if done.done():
                exit_code, timed_out = done.result(), False
            elif timed_out and detach_after_s is not None and detach_after_s < timeout_s:
                timed_out, detached = False, True
                entry.detached = True
                note = (f"still running after {detach_after_s:g} s: the next command is queued behind it "
                        "(typed ahead, as into a terminal)")
            elif timed_out:
                await self.kill(proc)
                await proc.wait()
                reader.drain()
                self._queue.clear()
                note = "timed out: the shell and everything it started were killed; the next command gets a fresh shell (cd/export state lost)"
            else:  # the shell ended (e.g. `exit 3`)
                await proc.wait()
                exit_code = exit_status(proc.returncode)
                self._queue.clear()
                note = "the shell exited; the next command gets a fresh shell (cd/export state lost)"
        except BaseException:
            await self.kill(proc)
            self._queue.clear()
            raise
        if not done.done() and not detached:
            entry.cap.feed(self._buffer + self._decoder.decode(b"", final=True))
            self._buffer = ""
        text, omitted = entry.cap.result()
        return CommandResult(
            exit_code=None if (timed_out or detached) else exit_code, output=text, omitted_chars=omitted,
            timed_out=timed_out, duration_s=time.monotonic() - started, note=note,
        )

    async def wait_idle(self, timeout_s: float) -> bool:
        """Wait until every command sent has ended — those typed ahead (``detach_after_s``) too —
        or the shell has ended; at most `timeout_s`. True when nothing is left running."""
        if not self._queue or self._reader is None:
            return True
        last = self._queue[-1].done  # the markers come in order: the last one comes after all others
        waiter = asyncio.ensure_future(asyncio.wait({last, self._reader.eof}, return_when=asyncio.FIRST_COMPLETED))
        try:
            await asyncio.wait_for(asyncio.shield(waiter), timeout=max(timeout_s, 0))
        except asyncio.TimeoutError:
            return False
        finally:
            waiter.cancel()
        return True

    def _dispatch(self, data: bytes) -> None:
        """The shell's output, to the oldest command still waiting for its marker (then the next)."""
        if not self._queue:
            return  # background output between commands is dropped
        self._buffer += self._decoder.decode(data)
        while self._queue:
            head = self._queue[0]
            found = head.marker.search(self._buffer)
            if found is None:
                keep = _MARKER_WINDOW
                if len(self._buffer) > keep:
                    head.feed(self._buffer[:-keep])
                    self._buffer = self._buffer[-keep:]
                return
            head.feed(self._buffer[: found.start()])
            self._buffer = self._buffer[found.end():]
            if not head.done.done():
                head.done.set_result(int(found.group(1)))
            self._queue.popleft()
        self._buffer = ""

    async def _stop(self) -> None:
        cancelled: asyncio.CancelledError | None = None
        if self.proc is not None and self.proc.returncode is None:
            # the kill and the reaping finish even when the stop is itself cancelled (procs.py)
            try:
                await finish_despite_cancel(self.kill(self.proc), KILL_BOUND_S)
            except asyncio.CancelledError as exc:
                cancelled = exc
            except Exception:  # noqa: BLE001 - the shell is reaped (and killed) below all the same
                pass
            await settle_process(self.proc, 5)
        if self._stdin is not None:
            self._stdin.close()
        if self._reader is not None:
            self._reader.close()
        self.proc, self._stdin, self._reader = None, None, None
        if cancelled is not None:
            raise cancelled

    async def close(self) -> None:
        await self._stop()


_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _sh_quote(value: str) -> str:
    return "'" + value.replace("'", "'\"'\"'") + "'"
