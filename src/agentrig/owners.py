"""Who owns a thing a run leaves behind — a container, a scratch directory: ``owner_tag()`` is
``"<pid>@<boot id>"`` of this process, and ``owner_alive(tag)`` says whether that process still
runs. A tag from before this boot names a process that is gone, whatever its pid; a pid that cannot
be signalled (another user's) counts as alive. The next run reaps what a killed one left by it
(bench/terminal/sandbox/engine.py: containers; bench/appworld/pool.py: scratch directories)."""

from __future__ import annotations

import os
from pathlib import Path


def boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return "unknown"


def owner_tag() -> str:
    return f"{os.getpid()}@{boot_id()}"


def owner_alive(tag: str) -> bool:
    pid, _, boot = tag.strip().partition("@")
    if boot != boot_id():
        return False  # made before this boot: its owner is gone
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except (PermissionError, ValueError):
        return True
    return True
