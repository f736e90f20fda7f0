"""The built root a task's ``FROM`` stands for under ``[sandbox] root = "image"`` (built on demand)."""

from __future__ import annotations

import asyncio
import contextlib
import sys
import threading
from pathlib import Path
from typing import Any

from ..dockerfile import BuildPlan
from .base import SandboxSettings, TaskBuildError


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

    cancel = threading.Event()
    build = asyncio.ensure_future(asyncio.to_thread(ensure_base_root, recipe, progress, cancel=cancel,
                                                    host_settings=settings.build_network == "host-settings"))
    try:
        root = await asyncio.shield(build)
    except asyncio.CancelledError:  # the run stops (Ctrl-C): the thread gives up its wait or its build,
        cancel.set()  # and ends before the loop does (a loop's end waits for its threads)
        while not build.done():
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.wait([build])
        if not build.cancelled():
            build.exception()  # retrieved: InterruptedError, or the build's own end
        raise
    return recipe, root
