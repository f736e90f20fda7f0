"""AppWorld test fixtures: AppWorld's own environment and the synthetic data, made once and cached.

- ``appworld_python``: the python of AppWorld's venv — ``$AGENTRIG_APPWORLD_PYTHON``, else the
  repository's ``.venv-appworld`` (``make test`` makes it: ``make appworld``), made here when
  missing (``agentrig appworld setup``; a minute with a warm pip cache). When it cannot be had the
  tests SKIP, except under CI (``CI=true``), where they FAIL.
- ``synthetic_root``: ``bench/appworld/synthetic.build`` run once into a cache directory keyed by
  the builder's sources and the AppWorld version (``.appworld-test-data/``, git-ignored); pytest-xdist
  workers share it (a file lock).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
from contextlib import contextmanager
from pathlib import Path

import pytest

from agentrig.bench.appworld import env as aw_env
from agentrig.bench.appworld.synthetic import SOURCES, build

REPO = Path(__file__).resolve().parents[3]
VENV = REPO / ".venv-appworld"
CACHE = REPO / ".appworld-test-data"


@contextmanager
def _locked(path: Path):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _unavailable(why: str) -> None:
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"AppWorld's environment is required under CI: {why}")
    pytest.skip(f"AppWorld's environment is not available: {why}")


@pytest.fixture(scope="session")
def appworld_python() -> Path:
    given = os.environ.get("AGENTRIG_APPWORLD_PYTHON")
    python = Path(given) if given else aw_env.python_of(VENV)
    with _locked(CACHE / ".env.lock"):
        status = aw_env.check(python)
        if not status.ok and not given:
            try:
                status = aw_env.setup(VENV, quiet=True)
            except Exception as exc:  # noqa: BLE001 - any failure to make it: skip (fail under CI)
                _unavailable(f"`agentrig appworld setup --env {VENV}` failed: {exc}")
    if not status.ok:
        _unavailable(f"{status.problem} ({status.fix})")
    return python


@pytest.fixture(scope="session")
def synthetic_root(appworld_python: Path) -> Path:
    status = aw_env.check(appworld_python)
    key = hashlib.blake2b(b"".join(p.read_bytes() for p in SOURCES) + str(status.appworld).encode(),
                          digest_size=8).hexdigest()
    root = CACHE / key
    with _locked(CACHE / f".{key}.lock"):
        if not (root / "synthetic.json").is_file():
            build(appworld_python, root)
    return root
