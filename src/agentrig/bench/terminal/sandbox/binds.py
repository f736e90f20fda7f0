"""A trial's private copies of the binds of the task's own folder (``compose_volumes.Bind``).

A compose file's agent service may bind the task's folder, or a directory of it, into the
container (LiveCodeBench-Pro's ``./:/app``, ``./data:/data:ro``). Every sandbox that honours it
(bwrap, podman, docker) gives the trial a **copy** of the source, made in the trial's own directory
before it starts and mounted at the target (read-only for ``:ro``): what the trial writes there
stays in the trial, and the task's folder on the host is never modified — the one difference from
Docker's bind, which writes through to the host. Symlinks are copied as symlinks (they resolve
inside the trial, as in a container), never followed out of the task's folder; a source that does
not exist is an empty directory.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any


def private_copies(binds: list[Any], into: Path) -> list[tuple[str, str, bool]]:
    """Copy each bind's source to ``into/N``; (the copy, the target, read-only) each, in mount order
    (a bind whose target lies inside another's after it)."""
    out: list[tuple[str, str, bool]] = []
    Path(into).mkdir(parents=True, exist_ok=True)
    for number, bind in enumerate(binds):
        copy = Path(into) / str(number)
        source = Path(bind.source)
        if source.is_dir():
            shutil.copytree(source, copy, symlinks=True)
        elif source.is_file():
            copy.mkdir()
            copy = copy / source.name
            shutil.copy2(source, copy)
        else:
            copy.mkdir()
        out.append((str(copy), bind.target, bool(bind.read_only)))
    return out
