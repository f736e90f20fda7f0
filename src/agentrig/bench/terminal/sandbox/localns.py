"""Private mounts for the local sandbox: a task's absolute paths at the trial's own directories.

Terminal-Bench and Harbor tasks — their Dockerfiles, solutions and tests — name absolute paths
(``/app/out.txt``, ``/tests``, ``/logs/verifier``). The local sandbox keeps the trial's files in a
temporary root (``ROOT/app``, ``ROOT/tests`` …). When it can (running as root, util-linux
``unshare`` on the PATH), every process it starts runs in a mount namespace of its own in which
those directories are bind-mounted at their absolute paths, so a task runs unchanged.

Nothing else is isolated: the host's files, processes and network stay reachable, as the local
sandbox promises. The mount points are created on the host as empty directories when they do not
exist (a visible trace of a local run: e.g. an empty ``/app``); an existing directory is covered
inside the namespace only, never written. Without root the local sandbox falls back to mapping
paths under its root (``sandbox_path``), which only tasks written with relative paths survive.
"""

from __future__ import annotations

import os
import shlex
import shutil
from pathlib import Path

# top-level directories every task may use: the working directory's is added per task
TOPS = ("app", "tests", "logs", "oracle", "solution")
# never covered: the host needs them (and the sandbox's own files live under /tmp)
_NEVER = {"", "bin", "boot", "dev", "etc", "lib", "lib32", "lib64", "libx32", "proc", "root", "run", "sbin",
          "sys", "tmp", "usr", "var", "home", "opt", "srv", "mnt", "media", "work"}


def unavailable() -> str | None:
    """Why private mounts cannot be used here (None: they can)."""
    if os.geteuid() != 0:
        return "not running as root"
    if shutil.which("unshare") is None or shutil.which("mount") is None:
        return "util-linux unshare/mount not found"
    return None


def top_of(path: str) -> str | None:
    """The top-level directory an absolute path lies in, when the namespace may cover it."""
    parts = Path(path).parts
    if len(parts) < 2 or parts[0] != "/":
        return None
    return parts[1] if parts[1] not in _NEVER else None


def prepare(root: Path, tops: list[str]) -> list[str]:
    """Create ``ROOT/top`` and the host mount point ``/top`` for each top; the tops usable."""
    usable = []
    for top in tops:
        host = Path("/", top)
        try:
            (root / top).mkdir(parents=True, exist_ok=True)
            if not host.is_dir():
                host.mkdir(exist_ok=True)
        except OSError:
            continue
        usable.append(top)
    return usable


def wrap(argv: list[str], root: Path, tops: list[str], cwd: str,
         binds: list[tuple[str, str, bool]] = (), private_tmp: Path | None = None) -> list[str]:
    """``argv`` run in a private mount namespace with ``ROOT/top`` at ``/top`` for each top, then
    ``binds`` (host path, path inside, read-only?) mounted, then ``private_tmp`` (with what the binds
    mounted inside it) at ``/tmp`` when given (Dockerfile builds: ``localbuild.py``), from ``cwd``."""
    lines = ["set -e"]
    for top in tops:
        lines.append(f"mount --bind {shlex.quote(str(root / top))} {shlex.quote('/' + top)}")
    for host, inside, readonly in binds:
        q = shlex.quote(inside)
        lines.append(f"mkdir -p {q} && mount --bind {shlex.quote(host)} {q}")
        if readonly:
            lines.append(f"mount -o remount,bind,ro {q}")
    if private_tmp is not None:
        lines.append(f"mount --rbind {shlex.quote(str(private_tmp))} /tmp")
    lines.append(f"cd {shlex.quote(cwd)} 2>/dev/null || cd {shlex.quote(str(root))}")
    lines.append('exec "$@"')
    return ["unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-c", "\n".join(lines),
            "agentrig-local", *argv]
