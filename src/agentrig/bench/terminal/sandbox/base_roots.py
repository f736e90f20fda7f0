"""The built root a task's ``FROM`` stands for under ``[sandbox] root = "image"`` (built on demand)."""

from __future__ import annotations

import asyncio
import contextlib
import sys
import threading
from pathlib import Path
from typing import Any, Callable

from ..core.base import SandboxSettings, TaskBuildError
from ..tasks.dockerfile import BuildPlan


async def base_root(plan: BuildPlan, settings: SandboxSettings) -> tuple[Any, Path | None]:
    """(recipe, built root) for the plan's FROM when ``[sandbox] root = "image"``; (None, None):
    the host's root stands in (root = "host", or a task without a Dockerfile)."""
    if settings.root != "image" or not plan.base:
        return None, None
    from ..images import ensure_base_root, resolve_base

    recipe = resolve_base(plan.base)
    if recipe is None:
        raise TaskBuildError(f"no recipe builds the base image {plan.base} from packages", exclusion="needs_container")

    def progress(message: str) -> None:
        print(f"agentrig: {message}", file=sys.stderr, flush=True)

    root = await in_thread(ensure_base_root, recipe, progress, host_settings=settings.build_mode() == "host-settings")
    return recipe, root


async def in_thread(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, cancel=EVENT, **kwargs)`` in a thread (a base image's build or import: minutes,
    or a wait for another process's). Cancelled (the run stops: Ctrl-C), EVENT is set, ``fn`` gives
    up (``InterruptedError``) and its thread ends before this returns — a loop's end waits for its
    threads, so a thread left waiting would keep the process alive after the Ctrl-C."""
    cancel = threading.Event()
    job = asyncio.ensure_future(asyncio.to_thread(fn, *args, cancel=cancel, **kwargs))
    try:
        return await asyncio.shield(job)
    except asyncio.CancelledError:
        cancel.set()
        while not job.done():
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.wait([job])
        if not job.cancelled():
            job.exception()  # retrieved: InterruptedError, or the job's own end
        raise
