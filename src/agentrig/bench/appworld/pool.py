"""Pooled AppWorld workers: processes in AppWorld's venv (``engine/worker.py``), one world each.

    pool = get_pool(python, data_root, size)       # one pool per (python, data root) per process
    async with pool.lease() as worker:             # an idle worker (started when none is free)
        await worker.call("open", task_id=…)       # → the answer's dict
        await worker.call("execute", code=…, timeout_s=…)

A worker is started once and reused trial after trial (the import of AppWorld, ~1 s, is paid once);
each trial opens its task's world anew, which resets it. Requests are JSON lines over the worker's
pipes, one at a time.

A worker dies with the process that started it, even in the middle of a request (a lifeline pipe:
see ``engine/worker.py``), and the scratch directories a runner killed by SIGKILL left behind are
removed by the next process that starts workers (``reap_scratch``).

Faults of the worker are infrastructure faults (``WorkerError``): the process died or closed its
pipe, an answer was not JSON, or a request outlived its timeout (the worker is then killed: a
hung world). The trial that met one is invalid and replayed; the worker is discarded and the
pool starts a fresh one for the next lease. An error the engine itself raised while answering
(an unknown task id …) is an ``EngineError``.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import json
import os
import select
import signal
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import AsyncIterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from agentrig.errors import InfrastructureFault
from agentrig.owners import owner_alive, owner_tag

from .env import ENGINE_DIR

WORKER_SCRIPT = ENGINE_DIR / "worker.py"
START_TIMEOUT_S = 180.0  # importing AppWorld on a busy machine
LINE_LIMIT = 64 * 1024 * 1024
# the threads that wait on workers' pipes (one per request in flight: at most the pools' sizes)
_EXECUTOR = ThreadPoolExecutor(max_workers=64, thread_name_prefix="appworld-pipe")


class WorkerError(InfrastructureFault):
    """The worker process failed (died, hung, garbled its answer): an infrastructure fault."""


class EngineError(InfrastructureFault):
    """AppWorld answered a request with an error of its own (``trace``: its traceback)."""

    def __init__(self, message: str, trace: str = ""):
        super().__init__(message)
        self.trace = trace


# the only variables a worker inherits: the agent's code runs in it, and the run's API keys (read
# from the environment at call time by the channel) must not be within its reach
_PASSED = ("PATH", "HOME", "LANG", "LC_ALL", "TZ", "TMPDIR", "APPWORLD_CACHE", "SSL_CERT_FILE")


def worker_env() -> dict[str, str]:
    env = {k: os.environ[k] for k in _PASSED if k in os.environ}
    env["PYTHONUNBUFFERED"] = "1"
    return env


# Each worker's scratch directory (its APPWORLD_ROOT: a link to the data, the outputs of its worlds)
# lives under one directory per process, removed when the pools close: a worker is killed, not asked
# to exit, so it cannot remove its own. That directory names its owner (an ``owner`` file:
# ``<pid>@<boot id>``); a runner killed by SIGKILL cannot remove it, so the next process that makes
# one first removes those whose owner is gone (``reap_scratch``).
SCRATCH_ENV = "AGENTRIG_APPWORLD_SCRATCH"
SCRATCH_PREFIX = "agentrig-appworld-"
LIFELINE_ENV, PARENT_ENV = "AGENTRIG_APPWORLD_LIFELINE", "AGENTRIG_APPWORLD_PARENT"  # engine/worker.py
_SCRATCH: list[Path] = []


def reap_scratch(where: Path | None = None) -> list[Path]:
    """Remove the scratch directories (``agentrig-appworld-*`` in the temporary directory) whose owner
    process is gone (a runner killed by SIGKILL); directories without an owner file are left alone."""
    removed = []
    for path in Path(where or tempfile.gettempdir()).glob(f"{SCRATCH_PREFIX}*"):
        try:
            owner = (path / "owner").read_text(encoding="utf-8")
        except OSError:
            continue
        if not owner_alive(owner):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


_SCRATCH_LOCK = threading.Lock()  # workers start in parallel threads: one directory per process


def _scratch_parent() -> Path:
    with _SCRATCH_LOCK:
        if not _SCRATCH or not _SCRATCH[0].is_dir():
            reap_scratch()
            parent = Path(tempfile.mkdtemp(prefix=f"{SCRATCH_PREFIX}{os.getpid()}-"))
            (parent / "owner").write_text(f"{owner_tag()}\n", encoding="utf-8")
            _SCRATCH[:] = [parent]
        return _SCRATCH[0]


class Worker:
    """One worker process. Its pipes are plain blocking pipes read with ``select`` in a thread of
    the pool's executor, not asyncio transports: a worker outlives the event loop of the run
    that started it (``run_command`` in tests and notebooks runs one loop per run)."""

    def __init__(self, proc: subprocess.Popen, info: dict, lifeline: int | None = None):
        self.proc = proc
        self.lifeline = lifeline  # the write end of the worker's lifeline (engine/worker.py), never written
        self.info = info
        self.pid = proc.pid
        self.next_id = 0
        self.broken: str | None = None
        self.trials = 0
        self._buf = b""
        self._inflight: Future | None = None  # the last request's round trip (its thread)

    @classmethod
    async def start(cls, python: Path, data_root: Path) -> "Worker":
        return await asyncio.get_running_loop().run_in_executor(_EXECUTOR, cls._start, python, data_root)

    @classmethod
    def _start(cls, python: Path, data_root: Path) -> "Worker":
        # the worker dies with this process: it holds the read end of a pipe whose write end only this
        # process holds (not inheritable), and ends itself at its end of file
        life_r, life_w = os.pipe()
        env = {**worker_env(), SCRATCH_ENV: str(_scratch_parent()), LIFELINE_ENV: str(life_r),
               PARENT_ENV: str(os.getpid())}
        try:
            proc = subprocess.Popen([str(python), "-u", str(WORKER_SCRIPT), str(data_root)], stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True,
                                    pass_fds=(life_r,), env=env)
        except OSError as exc:
            os.close(life_w)
            raise WorkerError(f"the AppWorld worker could not start ({python}: {exc})") from None
        finally:
            os.close(life_r)
        worker = cls(proc, {}, life_w)
        _STARTING.add(proc)  # killed by close_pools should the run end while it starts (Ctrl-C)
        try:
            info = json.loads(worker._readline(START_TIMEOUT_S, "start") or b"{}")
        except (WorkerError, ValueError, OSError):
            info = {}
        finally:
            _STARTING.discard(proc)
        if not info.get("ready"):
            worker.kill()
            why = info.get("error") or ("it exited" if proc.poll() is not None else "no ready line")
            raise WorkerError(f"the AppWorld worker did not start: {why}")
        worker.info = info
        return worker

    def _readline(self, timeout_s: float, op: str) -> bytes:
        """One line from the worker within ``timeout_s`` (b"" at end of file)."""
        deadline = time.monotonic() + timeout_s
        fd = self.proc.stdout.fileno()  # type: ignore[union-attr]
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(op)
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                line, self._buf = self._buf, b""
                return line
            self._buf += chunk
            if len(self._buf) > LINE_LIMIT:
                raise ValueError("an answer over the line limit")
        line, _, self._buf = self._buf.partition(b"\n")
        return line + b"\n"

    def _roundtrip(self, line: bytes, timeout_s: float, op: str) -> bytes:
        self.proc.stdin.write(line)  # type: ignore[union-attr]
        self.proc.stdin.flush()  # type: ignore[union-attr]
        return self._readline(timeout_s, op)

    async def call(self, op: str, *, timeout_s: float = 60.0, **args: Any) -> dict:
        """One request and its answer. WorkerError: the worker failed (it is killed); EngineError:
        AppWorld raised an error answering (the worker stays usable)."""
        await self._settle()
        if self.broken:
            raise WorkerError(self.broken)
        self.next_id += 1
        rid = self.next_id
        line = (json.dumps({"id": rid, "op": op, **args}) + "\n").encode()
        self._inflight = _EXECUTOR.submit(self._roundtrip, line, timeout_s, op)
        try:
            raw = await asyncio.wrap_future(self._inflight)
            self._inflight = None
        except TimeoutError:
            self._fail(f"the AppWorld worker (pid {self.pid}) did not answer `{op}` within {timeout_s:g} s (killed)")
        except BrokenPipeError:
            raw = b""  # it died before it could read the request: said below as an exit
        except (OSError, ValueError) as exc:  # a failed read, a line over the limit
            self._fail(f"the AppWorld worker (pid {self.pid}) failed during `{op}`: {type(exc).__name__}: {exc}")
        if not raw:
            self._fail(f"the AppWorld worker (pid {self.pid}) exited during `{op}` (exit code {self._exit_code()})")
        try:
            answer = json.loads(raw)
        except ValueError:
            self._fail(f"the AppWorld worker (pid {self.pid}) sent an unreadable answer to `{op}`")
        if answer.get("id") != rid:
            self._fail(f"the AppWorld worker (pid {self.pid}) answered request {answer.get('id')}, not {rid}")
        if not answer.get("ok"):
            raise EngineError(str(answer.get("error") or "error"), str(answer.get("trace") or ""))
        return answer

    async def _settle(self) -> None:
        """Wait for a round trip whose caller stopped waiting (a trial's time ran out while its code
        ran): its answer is read and dropped, so that the next answer is the next request's. A
        round trip that failed meanwhile (the worker hung or died) breaks the worker."""
        pending = self._inflight
        if pending is None:
            return
        if not pending.done():
            try:
                await asyncio.shield(asyncio.wrap_future(pending))
            except asyncio.CancelledError:
                raise  # still in flight: the next call settles it
            except Exception:  # noqa: BLE001 - read below
                pass
        self._inflight = None
        if pending.cancelled():
            return  # never started: nothing was sent
        failed = pending.exception()
        if failed is not None or not pending.result():
            why = f"{type(failed).__name__}" if failed is not None else "it exited"
            self.broken = f"the AppWorld worker (pid {self.pid}) failed an earlier request ({why}; killed)"
            _kill(self.proc)

    def _exit_code(self) -> int | None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            return self.proc.wait(2.0)
        return None

    def _fail(self, why: str) -> None:
        self.broken = why
        _kill(self.proc)
        raise WorkerError(why)

    def alive(self) -> bool:
        return self.broken is None and self.proc.poll() is None

    def kill(self) -> None:
        _kill(self.proc)
        if self.lifeline is not None:
            with contextlib.suppress(OSError):
                os.close(self.lifeline)
            self.lifeline = None


def _kill(proc: Any) -> None:
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(5)
    for pipe in (proc.stdin, proc.stdout):
        with contextlib.suppress(OSError):
            if pipe is not None:
                pipe.close()


class WorkerPool:
    """Up to ``size`` workers, started on demand and reused; trials wait for a free one."""

    def __init__(self, python: Path, data_root: Path, size: int):
        self.python, self.data_root, self.size = python, data_root, size
        self.idle: list[Worker] = []
        self.started = 0  # workers ever started (figures and tests)
        self.discarded = 0
        self._slots: asyncio.Semaphore | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.all: set[Worker] = set()

    def _bind(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        if self._slots is None or self._loop is not loop:  # a semaphore belongs to one event loop
            self._slots, self._loop = asyncio.Semaphore(self.size), loop
        return self._slots

    @contextlib.asynccontextmanager
    async def lease(self) -> AsyncIterator[Worker]:
        slots = self._bind()
        async with slots:
            worker = None
            while self.idle and worker is None:
                w = self.idle.pop()
                if w.alive():
                    worker = w
                else:
                    self._discard(w)
            if worker is None:
                worker = await Worker.start(self.python, self.data_root)
                self.started += 1
                self.all.add(worker)
            try:
                yield worker
            finally:
                worker.trials += 1
                if worker.alive():
                    self.idle.append(worker)
                else:
                    self._discard(worker)

    def _discard(self, worker: Worker) -> None:
        worker.kill()
        self.all.discard(worker)
        self.discarded += 1

    def prestart(self, n: int) -> int:
        """Start up to ``n`` idle workers now, synchronously (``Benchmark.warm``: a Ray worker's
        first trial then finds a warm world); returns how many were started."""
        started = 0
        while len(self.all) < min(n, self.size):
            w = Worker._start(self.python, self.data_root)
            self.all.add(w)
            self.idle.append(w)
            self.started += 1
            started += 1
        return started

    def close(self) -> None:
        for w in list(self.all):
            w.kill()
        self.all.clear()
        self.idle.clear()


_POOLS: dict[tuple[str, str], WorkerPool] = {}
_STARTING: set[subprocess.Popen] = set()  # workers started, not yet ready (their thread waits for the ready line)


def get_pool(python: Path, data_root: Path, size: int) -> WorkerPool:
    key = (str(python), str(data_root))
    pool = _POOLS.get(key)
    if pool is None:
        pool = _POOLS[key] = WorkerPool(python, data_root, size)
    if size != pool.size:  # the next run's setting (a new semaphore at its first lease)
        pool.size, pool._slots = size, None
        while len(pool.idle) > size:
            pool._discard(pool.idle.pop(0))
    return pool


@atexit.register
def close_pools() -> None:
    """Kill every worker this process started (they are in their own process groups), those still
    starting too, and remove their scratch directories."""
    for proc in list(_STARTING):
        _kill(proc)
    for pool in _POOLS.values():
        pool.close()
    with _SCRATCH_LOCK:
        for parent in _SCRATCH:
            shutil.rmtree(parent, ignore_errors=True)
        _SCRATCH.clear()


# At the interpreter's exit, threading joins the executor's threads before ``atexit`` runs; a thread
# still waits on a worker's pipe (a request of a trial cancelled by Ctrl-C, a worker starting) until
# the worker answers. The workers are killed first (threading's exit hooks run last registered
# first, after concurrent.futures' own): the threads see the pipes end, and the process exits now.
threading._register_atexit(close_pools)  # type: ignore[attr-defined]
