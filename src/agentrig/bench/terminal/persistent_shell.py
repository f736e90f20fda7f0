"""One ``bash`` per trial whose ``cd``, ``export`` and background jobs survive between commands.

Each command is sent as ``eval $'...'`` followed by an end-of-command marker carrying a random
token and ``$?``. A command that times out kills the shell (and what it started); the next command
gets a fresh shell in the working directory and the result says so. A command sent with
``detach_after_s`` (Terminal-Bench's ``block: false``) is left running after that long, and
``wait_idle`` waits for what was typed ahead to end. Streams, timeouts and output caps are
``shell.py``'s.
"""

from __future__ import annotations

import asyncio
import codecs
import os
import re
import secrets
import time
from collections import deque
from collections.abc import Awaitable, Callable

from .sandbox.base import CommandResult
from .shell import KillFn, OutputCap, Proc, Spawn, _PipeReader, exit_status, kill_process_group


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
        if self.proc is not None and self.proc.returncode is None:
            await self.kill(self.proc)
            await self.proc.wait()
        if self._stdin is not None:
            self._stdin.close()
        if self._reader is not None:
            self._reader.close()
        self.proc, self._stdin, self._reader = None, None, None

    async def close(self) -> None:
        await self._stop()


_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _sh_quote(value: str) -> str:
    return "'" + value.replace("'", "'\"'\"'") + "'"
