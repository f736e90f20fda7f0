"""Preparing the verifier: agentrig's own Python for it, and the tests staged as /tests will hold them.

``stage_tests`` copies a task's tests into a host directory (what ``/tests`` will hold), rewrites
its shell scripts for the offline tool chain (``testscripts``) and picks the command the verifier
runs; ``needs_network`` says whether a task's tests need the network even so. This module knows
the task only by its attributes (no import of ``taskmodel``: ``taskmodel.support`` uses it).
"""

from __future__ import annotations

import os
import shutil
import sys
import sysconfig
import tempfile
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from . import testscripts

TESTS_DIR = "/tests"
VERIFIER_DIR = "/logs/verifier"


class VerifierPlan(BaseModel):
    command: str
    offline: bool
    needs_network: str | None = None
    notes: list[str] = Field(default_factory=list)


# ---- agentrig's own Python for the verifier -------------------------------------------------

_SYSTEM_PREFIXES = {"/", "/usr", "/usr/local"}


def verifier_python() -> tuple[str, dict[str, str]]:
    """The interpreter the verifier runs pytest with, and the host paths to bind read-only
    (host path -> same path in the sandbox) so that the agent's layer cannot alter it."""
    binds: list[str] = []
    if sys.prefix != sys.base_prefix:
        binds.append(sys.prefix)  # a virtual environment: a directory of its own
    if os.path.realpath(sys.base_prefix) not in _SYSTEM_PREFIXES:
        binds.append(sys.base_prefix)  # e.g. a pyenv or uv-managed install
    else:  # a system Python: bind only what it is made of, not all of /usr
        paths = sysconfig.get_paths()
        binds += [os.path.realpath(sys.executable), paths["stdlib"], paths["platstdlib"],
                  paths["purelib"], paths["platlib"]]
        if sysconfig.get_config_var("Py_ENABLE_SHARED"):
            lib = Path(sysconfig.get_config_var("LIBDIR") or "") / (sysconfig.get_config_var("LDLIBRARY") or "")
            if lib.exists():
                binds.append(os.path.realpath(lib))
    import pytest  # noqa: PLC0415 - where agentrig's pytest lives (a dependency)

    binds.append(str(Path(pytest.__file__).resolve().parent.parent))
    unique: list[str] = []
    for p in sorted({os.path.realpath(b) for b in binds if b and os.path.exists(b)}, key=len):
        if not any(p == u or p.startswith(u.rstrip("/") + "/") for u in unique):
            unique.append(p)
    extra = [sys.prefix] if sys.prefix != os.path.realpath(sys.prefix) else []  # symlinked venv path
    return sys.executable, {p: p for p in unique + extra}


def _pytest_cmds(python: str, staged: Path, tests: str) -> tuple[str, str]:
    """(for `pytest`/`uv run pytest`, for `python -m pytest`): hardened pytest command lines."""
    ini = next((f"{tests}/{n}" for n in ("pytest.ini", ".pytest.ini") if (staged / n).is_file()), "/dev/null")
    flags = f"-p no:cacheprovider --confcutdir={tests} -c {ini} --rootdir=."
    py = testscripts.shlex.quote(python)
    return f"{py} -s -P -m pytest {flags}", f"{py} -s -m pytest {flags}"


# ---- the plan: which command, which scripts --------------------------------------------------


def _test_scripts(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and testscripts.is_shell_script(p))


def stage_tests(task: Any, staging: Path, python: str | None, network: bool, *,
                tests: str = TESTS_DIR, logs: str = VERIFIER_DIR, workdir: str | None = None) -> VerifierPlan:
    """Copy the task's tests into `staging` (what /tests will hold) and decide the command.
    `tests`, `logs` and `workdir` are the paths as the sandbox's commands see them. `python`
    None: agentrig's Python cannot be given to this sandbox (a container): the scripts run as
    written, and a tool-chain download counts as needing the network."""
    if staging.exists():
        shutil.rmtree(staging)
    if task.tests_dir is not None and task.tests_dir.is_dir():
        shutil.copytree(task.tests_dir, staging, symlinks=False)
    else:
        staging.mkdir(parents=True)
    if task.format == "tb1" and task.run_tests is not None:
        shutil.copy2(task.run_tests, staging / "run-tests.sh")
    pytest_cmd, pytest_m_cmd = _pytest_cmds(python or "python3", staging, tests)
    rewrites = {p: testscripts.rewrite_script(p.read_text(errors="replace"), pytest_cmd, pytest_m_cmd, python or "python3")
                for p in _test_scripts(staging)}
    if python is None:  # nothing is rewritten: the bootstrap itself needs the network
        for r in rewrites.values():
            if r.bootstrap and not r.needs_network:
                r.needs_network = f"downloads its test tool chain: {r.bootstrap[0][:160]}"
            r.changed = False
        pytest_cmd = "python3 -m pytest"
    needs = next((f"{p.relative_to(staging)}: {r.needs_network}" for p, r in rewrites.items() if r.needs_network), None)
    notes = [n for r in rewrites.values() for n in r.notes] if python else []
    offline = needs is None
    if offline:
        for p, r in rewrites.items():
            if r.changed:
                p.write_text(r.text)
    elif network:
        notes.append(f"the test scripts run as written, with the network ({needs})")
    cd = f"cd {testscripts.shlex.quote(workdir or task.workdir)} 2>/dev/null || cd /"
    if task.format == "harbor":
        command = f"mkdir -p {logs}; {cd}; bash {tests}/test.sh"
    elif task.run_tests is not None:
        command = f"{cd}; bash {tests}/run-tests.sh"
    else:
        command = f"{cd}; {pytest_cmd} {tests}/test_outputs.py -rA"
    if any(r.changed for r in rewrites.values()) and offline:
        notes.insert(0, "the test tool chain (uv, pytest) is agentrig's own Python, not downloaded")
    uses_ours = python is not None and (any(r.changed for r in rewrites.values())
                                        or (task.format == "tb1" and task.run_tests is None))
    return VerifierPlan(command=command, offline=offline and uses_ours,
                        needs_network=None if (offline or network) else needs, notes=notes)


def needs_network(task: Any) -> str | None:
    """Why the task's tests need the network even with agentrig's offline Python, or None."""
    python, _ = verifier_python()
    with tempfile.TemporaryDirectory(prefix="agentrig-verify-") as tmp:
        return stage_tests(task, Path(tmp) / "tests", python, network=False).needs_network


