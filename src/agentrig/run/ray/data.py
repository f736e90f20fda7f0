"""Task data for Ray workers that do not share the driver's filesystem.

A trial reads files beyond its parsed task (τ²: the domain's database, policy and the user
simulator's guidelines; terminal: the task directory — Dockerfile, tests, solution). The run's
benchmark names them (``Benchmark.worker_data``: paths under ``r.data_root``); the driver packs
them once into one archive (tar, gzip), puts it in Ray's object store, and every worker on another
node fetches it from there (one copy per node) and unpacks it once per node into its own cache,
``$XDG_CACHE_HOME/agentrig/ray-data/<digest>/`` (default ``~/.cache``), named by the archive's
digest so that a second run with the same data reuses it. Then ``Benchmark.relocate`` points the
worker's copy of the experiment at that directory. Workers on the driver's node read the files where
they are. Nothing is read from the driver's paths on another node.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import shutil
import tarfile
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from agentrig.errors import ConfigError

READY = ".agentrig-complete"  # written last: a directory without it is an interrupted unpack


class Packed(BaseModel):
    """The archive of a run's worker data: gzip'd tar bytes, their digest and what they hold."""

    digest: str
    data: bytes
    files: int
    raw_bytes: int  # the tar's size before compression


def _skip(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
    if "__pycache__" in Path(info.name).parts:
        return None
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    if not info.issym():  # the worker's copy is its own: writable by it (to be cleaned), executables kept
        info.mode = 0o755 if info.isdir() or info.mode & 0o111 else 0o644
    return info


def pack(r: Any) -> Packed | None:
    """The archive of what ``r``'s trials read from disk (None: nothing, e.g. built-in domains).

    A ConfigError names the path when it cannot be read (moved or deleted since the run started)."""
    root = r.data_root
    paths = r.benchmark.worker_data(r) if root is not None else []
    if not paths:
        return None
    root = Path(root)
    buf = io.BytesIO()
    files = 0
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path in dict.fromkeys(Path(p) for p in paths):
            try:
                rel = path.relative_to(root)
            except ValueError:
                raise ConfigError(f"{r.source}: {path} is not under the data directory {root}, so it cannot be "
                                  "sent to the Ray workers.\n  fix: keep the task files under the data directory") from None
            if not path.exists():
                raise ConfigError(f"{r.source}: {path} (under the data directory {root}) cannot be read to send it "
                                  "to the Ray workers: it is gone.\n  fix: restore it, or run again (the run resumes)")
            tar.add(path, arcname=rel.as_posix(), filter=_skip)
        files = sum(1 for m in tar.getmembers() if m.isfile())
    raw = buf.getvalue()
    return Packed(digest=hashlib.sha256(raw).hexdigest()[:32], data=gzip.compress(raw, compresslevel=1, mtime=0),
                  files=files, raw_bytes=len(raw))


def cache_root() -> Path:
    """Where a worker keeps unpacked run data on its node."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "agentrig" / "ray-data"


def unpack(digest: str, data: bytes, root: Path | None = None) -> Path:
    """The directory holding the archive's files on this node: unpacked now, or by an earlier
    worker or run (several workers of a node may race: each unpacks aside, one rename wins)."""
    root = cache_root() if root is None else root
    final = root / digest
    if (final / READY).is_file():
        return final
    root.mkdir(parents=True, exist_ok=True)
    staging = root / f".{digest}-{os.getpid()}-{time.monotonic_ns()}"
    try:
        with tarfile.open(fileobj=io.BytesIO(gzip.decompress(data)), mode="r:") as tar:
            tar.extractall(staging, filter="tar")
        (staging / READY).write_text(digest)
        if final.exists() and not (final / READY).is_file():  # left half-done by a killed worker
            shutil.rmtree(final, ignore_errors=True)
        try:
            os.rename(staging, final)
        except OSError:
            if not (final / READY).is_file():  # another worker won the race; anything else is an error
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return final


def materialize(r: Any, digest: str, data: bytes) -> Path:
    """Unpack the run's data on this node and point ``r`` (this worker's copy) at it."""
    local = unpack(digest, data)
    r.benchmark.relocate(r, local)
    return local
