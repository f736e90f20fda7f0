"""AppWorld's own environment: a separate venv holding ``appworld`` (and its old pins), installed.

AppWorld pins pydantic 1, SQLAlchemy 1.4, fastapi 0.110 …: it cannot share agentrig's environment.
``agentrig appworld setup`` makes a venv for it, installs the ``appworld`` package from the
package index, and runs ``appworld install`` (which unpacks AppWorld's apps into that venv, offline;
their licence asks that they are redistributed only encrypted: nothing of it is ever copied out).

Where: ``--env DIR``, else ``$AGENTRIG_APPWORLD_ENV``, else ``~/.cache/agentrig/appworld-env``.
A run uses ``[benchmark] python`` when set, else that venv's python.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ENV_VAR = "AGENTRIG_APPWORLD_ENV"
PACKAGE = "appworld>=0.1.3"
SETUP_FIX = "run `agentrig appworld setup` (makes the venv, installs appworld, runs `appworld install`)"
ENGINE_DIR = Path(__file__).parent / "engine"


def default_env() -> Path:
    value = os.environ.get(ENV_VAR)
    if value:
        return Path(value).expanduser()
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "agentrig" / "appworld-env"


def python_of(env: Path) -> Path:
    return env / "bin" / "python"


def resolve_python(value: str | None) -> Path:
    return Path(value).expanduser() if value else python_of(default_env())


# finds the package without importing it (AppWorld's import takes a second; a run checks this once)
_PROBE = """
import json, os, sys
from importlib import metadata, util
out = {"python": sys.version.split()[0]}
try:
    spec = util.find_spec("appworld")
    if spec is None or not spec.origin:
        raise ImportError("No module named 'appworld'")
    out["appworld"] = metadata.version("appworld")
    base = os.path.dirname(spec.origin)
    out["installed"] = os.path.isfile(os.path.join(base, "apps", "simple_note", "apis.py"))
except Exception as exc:
    out["error"] = f"{type(exc).__name__}: {exc}"
print(json.dumps(out))
"""


@dataclass
class EnvStatus:
    python: Path
    ok: bool
    problem: str | None = None
    fix: str | None = None
    appworld: str | None = None


def check(python: Path) -> EnvStatus:
    """Whether ``python`` has AppWorld with its apps installed (a subprocess, ~50 ms; the doctor's
    world check then imports it for real)."""
    if not python.exists():
        return EnvStatus(python, False, f"{python} does not exist (no AppWorld environment)", SETUP_FIX)
    try:
        done = subprocess.run([str(python), "-c", _PROBE], capture_output=True, text=True, timeout=120)
        info = json.loads(done.stdout.strip().splitlines()[-1])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError) as exc:
        return EnvStatus(python, False, f"{python} cannot run ({type(exc).__name__}: {exc})", SETUP_FIX)
    if "error" in info:
        return EnvStatus(python, False, f"{python} cannot import appworld ({info['error']})", SETUP_FIX)
    if not info.get("installed"):
        return EnvStatus(python, False, f"appworld {info.get('appworld')} is there but its apps are not unpacked",
                         f"run `{python.parent / 'appworld'} install` (or `agentrig appworld setup`)", info.get("appworld"))
    return EnvStatus(python, True, appworld=info.get("appworld"))


def setup(env: Path, *, base_python: str | None = None, quiet: bool = False) -> EnvStatus:
    """Make (or complete) the venv at ``env``: venv, ``pip install appworld``, ``appworld install``.
    Idempotent: an environment that already passes ``check`` is left as it is."""
    python = python_of(env)
    status = check(python) if python.exists() else None
    if status is not None and status.ok:
        return status
    run = (lambda cmd: subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL if quiet else None))
    if not python.exists():
        run([base_python or sys.executable, "-m", "venv", str(env)])
    run([str(python), "-m", "pip", "install", "-q", PACKAGE])
    run([str(env / "bin" / "appworld"), "install"])
    return check(python)
