"""The anchors' own code, for the export tests: Terminal-Bench, mini-SWE-agent and Harbor from PyPI
(pinned releases) in one scratch venv of their own, made once per set of pins and kept in the user's
cache, ``~/.cache/agentrig/anchors/<hash of the pins>/`` (``$AGENTRIG_ANCHORS_VENV`` names another
place), so a fresh clone — CI's among them — reuses it. They need Python >= 3.12 (Terminal-Bench and Harbor refuse older ones): the first of
``$AGENTRIG_ANCHOR_PYTHON``, ``python3.13``/``python3.12``/``python3.14`` on PATH, or a pyenv
version (``$PYENV_ROOT/versions/3.1x*``) that runs is used; none is downloaded.

``make anchors`` (a prerequisite of ``make test``) runs ``python -m tests.anchors``; the tests call
``anchor_python()``, which makes the venv when it is missing. When it cannot be made the tests
SKIP, except under CI (``CI=true``), where they FAIL — as the AppWorld environment's tests do.
"""

from __future__ import annotations

import fcntl
import glob
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

PACKAGES = ("terminal-bench==0.2.18", "mini-swe-agent==2.4.6", "harbor==0.26.0")
_CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "agentrig" / "anchors"
VENV = Path(os.environ.get("AGENTRIG_ANCHORS_VENV")
            or _CACHE / hashlib.sha256("\n".join(PACKAGES).encode()).hexdigest()[:12]).expanduser()
STAMP = VENV / ".installed"  # holds the packages installed, one a line
MIN_PYTHON = (3, 12)


class Unavailable(Exception):
    """The anchors' venv cannot be made here (the reason is the message)."""


def _works(python: str) -> bool:
    try:
        done = subprocess.run([python, "-c", "import sys, venv, ensurepip; sys.exit(0 if sys.version_info >= (3, 12) else 1)"],
                              capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def find_python() -> str:
    """A Python >= 3.12 on this machine (see the module docstring), or Unavailable."""
    given = os.environ.get("AGENTRIG_ANCHOR_PYTHON")
    if given:
        if not _works(given):
            raise Unavailable(f"AGENTRIG_ANCHOR_PYTHON={given} is not a working Python >= 3.12")
        return given
    candidates = [p for name in ("python3.13", "python3.12", "python3.14") if (p := shutil.which(name))]
    pyenv = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv")
    candidates += sorted(glob.glob(str(pyenv / "versions" / "3.1[2-9]*" / "bin" / "python3")), reverse=True)
    if sys.version_info >= MIN_PYTHON:
        candidates.insert(0, sys.executable)
    for python in candidates:
        if _works(python):
            return python
    raise Unavailable("no Python >= 3.12 here (Terminal-Bench and Harbor need one): install python3.12 "
                      "(or newer) or set AGENTRIG_ANCHOR_PYTHON=/path/to/python3.12")


def python_of(venv: Path = VENV) -> Path:
    return venv / "bin" / "python"


def ready(venv: Path = VENV) -> bool:
    stamp = venv / STAMP.name
    return python_of(venv).exists() and stamp.is_file() and stamp.read_text().split() == list(PACKAGES)


def build(venv: Path = VENV, *, quiet: bool = True) -> Path:
    """Make (or remake, when the pins changed) the venv; returns its python. Raises Unavailable."""
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.parent / f".{venv.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # pytest-xdist workers and make share one build
        if ready(venv):
            return python_of(venv)
        python = find_python()
        shutil.rmtree(venv, ignore_errors=True)
        steps = [[python, "-m", "venv", str(venv)],
                 [str(python_of(venv)), "-m", "pip", "install", *(["-q"] if quiet else []), *PACKAGES]]
        for step in steps:
            done = subprocess.run(step, capture_output=quiet, text=True)
            if done.returncode != 0:
                tail = (done.stderr or "")[-1500:] if quiet else ""
                raise Unavailable(f"`{' '.join(step)}` failed ({done.returncode}) {tail}".strip())
        (venv / STAMP.name).write_text("\n".join(PACKAGES) + "\n")
        return python_of(venv)


def anchor_python() -> Path:
    """The anchors' python for a test: made when missing; skip (fail under CI) when it cannot be."""
    import pytest

    try:
        return python_of() if ready() else build()
    except Unavailable as exc:
        msg = f"the anchors' venv ({VENV}) is not available: {exc}"
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(f"{msg} (required under CI)")
        pytest.skip(msg)


if __name__ == "__main__":  # `make anchors`
    ci = os.environ.get("CI", "").lower() in ("1", "true", "yes")
    if ready():
        sys.exit(0)
    print(f"making the anchors' venv {VENV} ({', '.join(PACKAGES)}): the export tests load exports with them")
    try:
        build(quiet=False)
    except Unavailable as exc:
        if ci:
            print(f"error: the anchors' venv could not be made (required under CI): {exc}")
            sys.exit(1)
        print(f"note: the anchors' venv could not be made; the export anchor tests will skip: {exc}")
