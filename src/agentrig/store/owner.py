"""A run directory's place and its owner.

``make_dir(path)`` is the one check of where a run directory goes, for every command that plays
into one (``run``, ``run --smoke``, ``run --estimate``'s smoke play, ``demo``): a path that is a
file, lies under a file, or cannot be made is one ``DataError`` naming the path and the fix.
``reader_dir(path)`` is its counterpart for the commands that read a run (store/rundir.py
``open_run_dir``): a file, or a path that does not exist, is named as such.

``claim(directory, what)`` makes the directory and takes its **owner lock**: an exclusive
``flock`` on ``run.lock`` in it, held for as long as the writer lives (``Owner.release``, or the
end of the process). The file holds a small JSON record of the holder — pid, host, start time,
command — which a second writer reads to say who holds the directory (``RunDirBusy``: exit 1 at
the CLI). The kernel drops the lock when its holder dies, however it dies: a SIGKILLed run leaves
no stale lock, only its record, which the next claimant reads (``Owner.stale``: the run ended
without releasing the directory) and then overwrites. A clean release empties the file; the file
itself is never removed (removing a lock file lets two processes lock two different files).
The lock's descriptor is not inherited by the processes a run starts (sandboxes, workers, Ray).

Who claims: a run playing into its directory (store/rundir.py ``open_run``), a smoke check into
``RUN/smoke`` (a run directory of its own, so a smoke check may run beside the full run), and
``agentrig instability`` (it spends model calls and writes the store). Readers (``analyze``,
``report``, ``export``, ``usage``, ``compare``, ``run --estimate`` from stored trials) never take it
and are never blocked. The lock is as good as the file system's ``flock``: local disks and NFS
(Linux emulates it with POSIX locks there) hold it; a file system without locks is refused.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import shlex
import socket
import sys
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from agentrig.errors import AgentrigError, DataError
from agentrig.redact import redact

LOCK_FILE = "run.lock"
_MAX_RECORD = 64 * 1024
_READ_WAIT_S = 2.0  # a holder writes its record right after it locks: a claimant waits this long for it


class RunDirBusy(AgentrigError):
    """Another process holds the run directory (``holder``: its record, empty when unreadable)."""

    def __init__(self, directory: Path, holder: dict[str, Any]):
        self.directory = directory
        self.holder = holder
        super().__init__(f"{directory}: in use by {describe(holder)}; a run directory has one writer at a time "
                         "(two runs in one would play every trial twice and spend twice)\n"
                         f"  fix: wait for it to end, or stop it ({_how_to_stop(holder)}) and rerun the same command "
                         "to resume; to play a separate run at the same time, pass another --dir")


def describe(holder: dict[str, Any]) -> str:
    """``agentrig run exp.toml (pid 123 on host, since …)`` from a holder's record."""
    if not holder.get("pid"):
        return f"another process (its record in {LOCK_FILE} is unreadable)"
    command = holder.get("command") or holder.get("what") or "a process"
    since = f", since {holder['started_at']}" if holder.get("started_at") else ""
    return f"`{command}` (pid {holder['pid']} on {holder.get('host') or 'an unknown host'}{since})"


def _how_to_stop(holder: dict[str, Any]) -> str:
    if not holder.get("pid"):
        return "Ctrl-C where it runs"
    return f"Ctrl-C where it runs, or `kill {holder['pid']}` on {holder.get('host') or 'its host'}"


# --------------------------------------------------------------------------------- the place


def _not_a(p: Path, what: str) -> str:
    if p.is_symlink() and not p.exists():
        return f"is a broken symbolic link, not a {what}"
    return f"is a file, not a {what}" if p.is_file() else f"is not a {what}"


def make_dir(path: Path, *, what: str = "run directory", fix: str = "give another --dir (or [run] dir in the "
             "experiment), or move that file away") -> Path:
    """The directory ``path``, made if missing (with its parents); a ``DataError`` naming the path
    and the fix when that cannot be (``what`` the directory is, for the message)."""
    path = Path(path).expanduser()
    for p in (path, *path.parents):
        if p.is_dir():
            break
        if p.exists() or p.is_symlink():
            problem = _not_a(p, what) if p == path else f"{_not_a(p, 'directory')} (the {what} {path} would be in it)"
            raise DataError(f"{p}: {problem}\n  fix: {fix}")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DataError(f"{path}: cannot make the {what} ({exc.strerror or exc})\n"
                        f"  fix: check the path and its permissions, or {fix.split(', or ')[0]}") from None
    return path


def reader_dir(path: Path, store_file: str) -> Path:
    """``path`` as a run directory to read: a file or a missing path is a ``DataError`` saying so."""
    path = Path(path).expanduser()
    if path.is_dir():
        return path
    if path.is_file() and path.name == store_file:
        raise DataError(f"{path}: is the run's store, not its directory; give its directory: {path.parent}")
    if path.exists() or path.is_symlink():
        raise DataError(f"{path}: {_not_a(path, 'run directory')}; give the directory `agentrig run` printed")
    raise DataError(f"{path}: not a run directory (no such directory); give the directory `agentrig run` printed "
                    "(`run directory: …` in its summary)")


# --------------------------------------------------------------------------------- the owner


def _record(what: str) -> dict[str, Any]:
    argv = [Path(sys.argv[0]).name if sys.argv and sys.argv[0] else "agentrig", *sys.argv[1:]]
    return {"pid": os.getpid(), "host": socket.gethostname(),
            "started_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "command": redact(shlex.join(argv)), "what": what}


def _read(fd: int) -> dict[str, Any]:
    try:
        value = json.loads(os.pread(fd, _MAX_RECORD, 0) or b"{}")
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


@dataclass
class Owner:
    """A held run directory: ``release()`` (or the end of the process) lets it go."""

    directory: Path
    fd: int
    stale: dict[str, Any] | None = None  # the record of a holder that ended without releasing (killed)

    def stale_note(self) -> str | None:
        if not self.stale:
            return None
        return (f"the previous holder of {self.directory}, {describe(self.stale)}, ended without releasing it "
                "(killed?); taking it over: every trial it finished is kept")

    def release(self) -> None:
        if self.fd < 0:
            return
        try:
            os.ftruncate(self.fd, 0)  # a clean end: no record left for the next claimant to report
        except OSError:
            pass
        os.close(self.fd)  # closes the lock's only descriptor: the kernel releases it
        self.fd = -1

    def __enter__(self) -> "Owner":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()


def claim(directory: Path, what: str) -> Owner:
    """Make ``directory`` (``make_dir``) and take its owner lock for ``what`` (e.g. ``agentrig run``);
    ``RunDirBusy`` naming the holder when another process has it."""
    directory = make_dir(directory)
    path = directory / LOCK_FILE
    deadline = time.monotonic() + _READ_WAIT_S
    while True:
        try:  # O_CLOEXEC: no process this one starts inherits (and so outlives it holding) the lock
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            raise DataError(f"{path}: cannot open the run directory's lock file ({exc.strerror or exc})\n"
                            "  fix: check the directory's permissions") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            holder = _read(fd) if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN) else None
            os.close(fd)
            if holder is None:
                raise DataError(f"{path}: cannot lock the run directory ({exc.strerror or exc}); the file system "
                                "does not support locks\n  fix: put the run directory on a local disk "
                                "(--dir, or [run] dir in the experiment)") from None
            if holder or time.monotonic() > deadline:  # else: the holder has not written its record yet
                raise RunDirBusy(directory, holder) from None
            time.sleep(0.05)
            continue
        try:
            if os.fstat(fd).st_ino != os.stat(path).st_ino:  # the file was replaced meanwhile: lock the new one
                os.close(fd)
                continue
        except FileNotFoundError:
            os.close(fd)
            continue
        try:
            stale = _read(fd)
            os.ftruncate(fd, 0)
            os.pwrite(fd, (json.dumps(_record(what), ensure_ascii=False) + "\n").encode("utf-8"), 0)
        except BaseException:
            os.close(fd)
            raise
        return Owner(directory, fd, stale or None)
