"""Preparing the verifier: agentrig's own Python for it, and the tests staged as /tests will hold them.

``stage_tests`` copies a task's tests into a host directory (what ``/tests`` will hold), rewrites
its shell scripts for the offline tool chain (``testscripts``) and picks the command the verifier
runs; ``needs_network`` says whether a task's tests need the network even so.

With agentrig's pytest the plan's ``env`` sets ``PYTEST_DISABLE_PLUGIN_AUTOLOAD=1``: Terminal-Bench
installs a bare pytest for the tests, so the plugins of agentrig's own environment (pytest-asyncio
…) are not the task's — unless the task's script installs a package that is a pytest plugin and
agentrig's environment provides it (then autoload stays on). When the whole command is one plain
pytest run — TB1 without ``run-tests.sh``, or a ``run-tests.sh`` whose only command left after the
rewrite is the pytest line (plus the template's ``$PWD`` check) — ``pytest_args`` holds pytest's
arguments so that the warm verifier (``sandbox/warm.py``) can run it; a Harbor ``test.sh`` that is
one such pytest line and the reward file written from its status (``warm_plans.py``) gets a
``RewardPlan`` instead; any doubt leaves both None. This module knows
the task only by its attributes (no import of ``taskmodel``: ``taskmodel.support`` uses it).
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import shutil
import sys
import sysconfig
import tempfile
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from . import testscripts
from .warm_plans import RewardPlan, harbor_reward, plain_pytest

TESTS_DIR = "/tests"
VERIFIER_DIR = "/logs/verifier"


class VerifierPlan(BaseModel):
    command: str
    offline: bool
    needs_network: str | None = None
    notes: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)  # added to the verifier's environment
    pytest_args: list[str] | None = None  # the command is `python -s -P -m pytest ARGS` and nothing else
    strict_cwd: bool = False  # the script stops when the directory is / (its $PWD check)
    shlvl: int = 0  # SHLVL the cold command's pytest would see (1 under run-tests.sh)
    reward: RewardPlan | None = None  # Harbor: test.sh is one pytest run and the reward file from its status
    fetch: dict[str, list[str]] = Field(default_factory=dict)  # host directory -> requirements the tests need fetched
    # the tests ran in a uv-managed environment (`uv run pytest`, Terminal-Bench's default run-tests.sh),
    # whose `python` comes first on PATH: a test's `python x.py` gets the verifier's interpreter too
    venv_path: bool = False


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
                  paths["purelib"], paths["platlib"],
                  paths["include"], paths["platinclude"]]  # Python.h: tests that build a C extension
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


def _pytest_flags(staged: Path, tests: str) -> list[str]:
    ini = next((f"{tests}/{n}" for n in ("pytest.ini", ".pytest.ini") if (staged / n).is_file()), "/dev/null")
    return ["-p", "no:cacheprovider", f"--confcutdir={tests}", "-c", ini, "--rootdir=."]


def _pytest_cmds(python: str, staged: Path, tests: str) -> tuple[str, str]:
    """(for `pytest`/`uv run pytest`, for `python -m pytest`): hardened pytest command lines."""
    flags = " ".join(testscripts.shlex.quote(f) for f in _pytest_flags(staged, tests))
    py = testscripts.shlex.quote(python)
    return f"{py} -s -P -m pytest {flags}", f"{py} -s -m pytest {flags}"


def _test_scripts(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and testscripts.is_shell_script(p))


_PIP_PYTEST = re.compile(r"^\s*(?:python3?\s+-m\s+)?pip3?\s+install\b[^\n]*\bpytest\b", re.MULTILINE)


def image_tool_chain(staging: Path) -> bool:
    """The scripts install pytest with the image's own pip (``pip install pytest==…`` then
    ``pytest``), not with uv: the tests are meant to run on the image's Python and see what its
    build installed there (``RUN pip install mlflow``)."""
    return any(_PIP_PYTEST.search(p.read_text(errors="replace")) for p in _test_scripts(staging))


def packaged_project(task: Any) -> bool:
    """The task's build context (what its Dockerfile copies from) holds a pyproject.toml declaring
    a build system: a project that ``uv add``/``uv sync`` in the workdir would install."""
    context = getattr(task, "build_context", None) or getattr(task, "path", None)
    if context is None:
        return False
    try:
        text = (Path(context) / "pyproject.toml").read_text(errors="replace")
    except OSError:
        return False
    return re.search(r"(?m)^\[build-system\]", text) is not None


def stage_tests(task: Any, staging: Path, python: str | None, network: bool, *,
                tests: str = TESTS_DIR, logs: str = VERIFIER_DIR, workdir: str | None = None,
                image_python: bool = False) -> VerifierPlan:
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
    if python is not None and network and image_python and image_tool_chain(staging):
        # with the network, on a root built for the image: the image's pip and pytest, as written
        python = None
        image_note = ("the tests run as written on the image's Python (its pip installs pytest), "
                      "with the network: they see the packages its build installed")
    else:
        image_note = None
    pytest_cmd, pytest_m_cmd = _pytest_cmds(python or "python3", staging, tests)
    packaged = packaged_project(task)
    rewrites = {p: testscripts.rewrite_script(p.read_text(errors="replace"), pytest_cmd, pytest_m_cmd, python or "python3",
                                              fetch=network and python is not None, packaged_project=packaged)
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
    if image_note:
        notes.append(image_note)
    plan = VerifierPlan(command=command, offline=offline and uses_ours,
                        needs_network=None if (offline or network) else needs, notes=notes,
                        fetch={d: r for rw in rewrites.values() for d, r in rw.fetch.items()} if offline else {})
    if plan.offline:
        plan.venv_path = any(r.in_venv for r in rewrites.values()) or (task.format == "tb1" and task.run_tests is None)
        plugins = [n for r in rewrites.values() for n in r.provided if _is_pytest_plugin(n)]
        if plugins:
            plan.notes.append(f"pytest plugin autoload stays on: the script installs {', '.join(plugins)}")
        else:
            plan.env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
            flags = _pytest_flags(staging, tests)
            if task.format == "tb1" and task.run_tests is None:
                plan.pytest_args = [*flags, f"{tests}/test_outputs.py", "-rA"]
            elif task.format == "tb1":
                scripts = {p.name: r.text for p, r in rewrites.items() if p.parent == staging}
                plain = plain_pytest(scripts["run-tests.sh"], scripts, pytest_cmd, tests)
                if plain is not None:
                    plan.pytest_args, plan.strict_cwd, plan.shlvl = [*flags, *plain[0]], plain[1], plain[2]
            elif task.format == "harbor" and (staging / "test.sh").is_file():
                script = rewrites[staging / "test.sh"].text
                harbor = harbor_reward(script, pytest_cmd, tests, logs)
                if harbor is not None:  # SHLVL: bash test.sh is the cold command's last (exec'd) command
                    harbor[0].pytest_args = [*flags, *harbor[0].pytest_args]
                    plan.reward, plan.strict_cwd, plan.shlvl = harbor[0], harbor[1], 1
    return plan


def _is_pytest_plugin(dist: str) -> bool:
    try:
        return any(ep.group == "pytest11" for ep in importlib.metadata.distribution(dist).entry_points)
    except importlib.metadata.PackageNotFoundError:
        return False


def needs_network(task: Any) -> str | None:
    """Why the task's tests need the network even with agentrig's offline Python, or None."""
    python, _ = verifier_python()
    with tempfile.TemporaryDirectory(prefix="agentrig-verify-") as tmp:
        return stage_tests(task, Path(tmp) / "tests", python, network=False).needs_network




BASE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def venv_commands(python: str) -> Path:
    """A directory holding ``python`` and ``python3`` that run the verifier's interpreter: first on
    the tests' PATH where Terminal-Bench's tests run in a uv environment (``uv run`` puts its
    ``python`` there), so a test's ``python x.py`` finds the packages the tests were given, as there.
    Only those two names: the environment's other commands (pip …) stay the image's. One directory
    per interpreter in the user cache (every trial sees the same PATH, warm or cold)."""
    import hashlib

    root = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    bin_dir = Path(root, "agentrig", "verifier-bin", hashlib.sha256(python.encode()).hexdigest()[:12]).resolve()
    bin_dir.mkdir(parents=True, exist_ok=True)
    body = f"#!/bin/sh\nexec {testscripts.shlex.quote(python)} \"$@\"\n"
    for name in ("python", "python3"):
        script = bin_dir / name
        if not script.is_file() or script.read_text() != body:
            fresh = bin_dir / f".{name}.{os.getpid()}"
            fresh.write_text(body)
            fresh.chmod(0o755)
            os.replace(fresh, script)
    return bin_dir


def fetch_test_packages(target: str, reqs: list[str], timeout_s: float = 1800) -> str | None:
    """Install `reqs` into `target` once (agentrig's own pip, with the host's package-index settings),
    for the verifier to bind read-only; None when done (or already there), else why it failed."""
    import fcntl
    import subprocess

    final = Path(target)
    if (final / ".agentrig-complete").exists():
        return None
    final.parent.mkdir(parents=True, exist_ok=True)
    with open(final.parent / f"{final.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (final / ".agentrig-complete").exists():
            return None
        staging = final.parent / f".{final.name}-{os.getpid()}"
        shutil.rmtree(staging, ignore_errors=True)
        try:
            proc = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check",
                                   "--target", str(staging), *reqs], capture_output=True, text=True,
                                  stdin=subprocess.DEVNULL, timeout=timeout_s)
        except (OSError, subprocess.TimeoutExpired) as exc:
            shutil.rmtree(staging, ignore_errors=True)
            return f"pip install {' '.join(reqs)}: {exc}"
        if proc.returncode != 0:
            shutil.rmtree(staging, ignore_errors=True)
            tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-6:])
            return f"pip install {' '.join(reqs)} exited {proc.returncode}:\n{tail}"
        (staging / ".agentrig-complete").write_text(" ".join(reqs) + "\n")
        shutil.rmtree(final, ignore_errors=True)
        os.rename(staging, final)
    return None
