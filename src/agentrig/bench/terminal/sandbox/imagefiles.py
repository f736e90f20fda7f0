"""A file of a bwrap trial's image as the image has it, before the agent touched anything.

A trial's root is overlays per top-level directory: the task's build layer (``upper``, then
``top``) over the base root (a built root, or the host's for ``root = "host"``), with the
trial's own upper layer on top. ``image_file`` resolves a path through the lower layers only —
the image — following symlinks inside the image; the warm verifier compares the programs its
cold command would run (``bash`` …) with what the sandbox has now (``pytest_server``), so a
program the agent replaced sends the tests to the cold command.
"""

from __future__ import annotations

import os
import posixpath
import stat
from pathlib import Path


def _lowers(layer_dir: Path | None, base_root: Path | None, name: str) -> list[Path]:
    out = []
    if layer_dir is not None:
        out += [layer_dir / "upper" / name, layer_dir / "top" / name]
    out.append(Path(base_root or "/", name))
    return out


def _whiteout(st: os.stat_result) -> bool:
    return stat.S_ISCHR(st.st_mode) and st.st_rdev == 0


def image_file(path: str, layer_dir: Path | None, base_root: Path | None, _depth: int = 0) -> Path | None:
    """The host path of the image's file at absolute `path` (symlinks followed within the image), or None."""
    if _depth > 16:
        return None
    parts = [p for p in posixpath.normpath(path).split("/") if p]
    if not parts:
        return None
    top = Path(base_root or "/", parts[0])
    if base_root is not None and top.is_symlink():  # bin -> usr/bin in a merged-/usr root
        return image_file(posixpath.join("/", os.readlink(top), *parts[1:]), layer_dir, base_root, _depth + 1)
    for lower in _lowers(layer_dir, base_root, parts[0]):
        candidate = lower.joinpath(*parts[1:])
        try:
            st = candidate.lstat()
        except OSError:
            continue
        if _whiteout(st):
            return None
        if stat.S_ISLNK(st.st_mode):
            target = os.readlink(candidate)
            joined = target if target.startswith("/") else posixpath.join(posixpath.dirname("/" + "/".join(parts)), target)
            return image_file(joined, layer_dir, base_root, _depth + 1)
        return candidate
    return None


def image_program_ids(names: list[str], search_path: str, layer_dir: Path | None,
                      base_root: Path | None) -> dict[str, list[int] | None]:
    """For each program name: (mode, size, mtime ns) of the file the image's PATH finds first
    (as ``shutil.which`` in the sandbox would on the untouched image), or None."""
    out: dict[str, list[int] | None] = {}
    for name in names:
        found = None
        for directory in search_path.split(":"):
            if not directory.startswith("/"):
                continue
            host = image_file(posixpath.join(directory, name), layer_dir, base_root)
            if host is not None and host.is_file() and os.access(host, os.X_OK):
                st = host.stat()
                found = [st.st_mode, st.st_size, st.st_mtime_ns]
                break
        out[name] = found
    return out

