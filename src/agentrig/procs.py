"""Ending things while the run is being stopped: a teardown that a cancellation does not cut short,
and a child process that is reaped and closed before the event loop is.

Ctrl-C cancels the trials in flight, and the executor cancels again every ``RECANCEL_S`` a trial
that has not ended yet (run/executor.py). A cleanup that awaits (a container's removal, the ``kill``
of a command group) would be cut at its first ``await``: the container stays, and the engine's
client goes on running after ``asyncio.run`` has closed the loop — its transport's ``__del__`` then
prints "Event loop is closed" as a traceback on the user's terminal. The two helpers here let such
a cleanup finish, within a bound, and then pass the cancellation on.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable
from typing import Any, TypeVar

T = TypeVar("T")


def abandon_process(proc: Any) -> None:
    """Kill ``proc`` and close its transport now, without waiting (the loop must be running): for a
    process whose orderly end was cut short. A closed transport never reports from ``__del__``."""
    kill = getattr(proc, "kill", None)  # a spawner's process is killed by its group, elsewhere
    if proc.returncode is None and kill is not None:
        with contextlib.suppress(ProcessLookupError, OSError):
            kill()
    transport = getattr(proc, "_transport", None)  # asyncio's Process; a spawner's process has none
    if transport is not None:
        transport.close()


async def _wait_absorbing(fut: asyncio.Future, bound_s: float) -> bool:
    """Wait up to ``bound_s`` for ``fut``, cancellations of the caller included (they are counted,
    not obeyed). True when it is done; the caller re-raises the cancellation it was ending for."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + bound_s
    while not fut.done():
        left = deadline - loop.time()
        if left <= 0:
            return False
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait({fut}, timeout=left)  # asyncio.wait never cancels what it waits for
    return True


async def settle_process(proc: Any, grace_s: float, kill_wait_s: float = 2.0) -> None:
    """A command whose caller was cancelled: let it finish for ``grace_s`` (a removal half done would
    leave a container), then kill it; reaped (or abandoned, its transport closed) either way, while
    the loop still runs."""
    waiter = asyncio.ensure_future(proc.wait())
    if not await _wait_absorbing(waiter, grace_s):
        abandon_process(proc)
        await _wait_absorbing(waiter, kill_wait_s)
    if not waiter.done():
        waiter.cancel()
    abandon_process(proc)


async def finish_despite_cancel(aw: Awaitable[T], bound_s: float) -> T | None:
    """Await ``aw`` (a teardown) to its end even if the caller is cancelled meanwhile — for at most
    ``bound_s`` after the first cancellation — then re-raise that cancellation. Not cancelled: its
    result, as a plain ``await``."""
    task = asyncio.ensure_future(aw)
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        if not task.done() and not await _wait_absorbing(task, bound_s):
            task.cancel()
            await _wait_absorbing(task, 1.0)
        if task.done() and not task.cancelled():
            task.exception()  # retrieved: a failed teardown during a stop is not reported later
        raise
