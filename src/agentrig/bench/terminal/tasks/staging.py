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
one such pytest line and the reward file written from its status gets a ``RewardPlan``
instead (``plain_pytest``, ``harbor_reward``: the last part of this module); any doubt leaves both None. This module knows
the task only by its attributes (no import of ``taskmodel``: ``taskmodel.support`` uses it).
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import os
import re
import shutil
import sys
import sysconfig
import tempfile
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from . import testscripts

TESTS_DIR = "/tests"
VERIFIER_DIR = "/logs/verifier"


class RewardPlan(BaseModel):
    """A Harbor ``test.sh`` (as rewritten) that runs one plain pytest and then writes the reward
    file from pytest's exit status and nothing else: what the warm verifier needs to play it."""

    script: str  # the script's path in the sandbox (for the message of a failed write)
    pytest_args: list[str]
    cd: str | None = None  # the directory the script changes to before pytest
    path: str  # the reward file the script writes
    passed: str  # what it writes there when pytest exits 0 (echo's output)
    failed: str | None  # … otherwise; None: `set -e` stops the script at the failed pytest first
    errexit: bool = False  # `set -e` is on when the reward is written (a failed write ends the script)
    exit: Literal["last", "zero", "pytest"] = "last"  # the script's status: its last command's, `exit 0`, `exit $status`
    programs: list[str] = Field(default_factory=list)  # programs the script runs besides bash and pytest


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
    python, binds = _verifier_python()
    return python, dict(binds)


@functools.lru_cache(maxsize=1)  # the same for every trial of a process
def _verifier_python() -> tuple[str, dict[str, str]]:
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
    # where agentrig's pytest lives (a dependency); found, not imported (the runner never runs it)
    spec = importlib.util.find_spec("pytest")
    if spec is None or spec.origin is None:
        raise ImportError("pytest is not installed beside agentrig (it is a dependency); reinstall agentrig")
    binds.append(str(Path(spec.origin).resolve().parent.parent))
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


# ---- which test scripts the warm verifier may play ----------------------------------------

_PWD_CHECK = ('if [ "$PWD" = "/" ]; then', "exit 1", "fi")
_SET = re.compile(r"set\s+(-e|-eu|-ue|-euo\s+pipefail|-eo\s+pipefail|-o\s+pipefail)")
_PLAIN_ARG = re.compile(r"[A-Za-z0-9_./:=,+@%-]+")


def _commands(text: str) -> list[str]:
    return [ln for ln in (raw.strip() for raw in testscripts._logical_lines(text))
            if ln and not ln.startswith("#") and not ln.startswith(": # agentrig offline verifier")]


def _flatten(text: str, scripts: dict[str, str], tests: str, level: int = 0) -> list[tuple[str, int]] | None:
    """The script's commands with ``source $TEST_DIR/x.sh`` inlined and a last ``bash
    $TEST_DIR/y.sh`` inlined one shell level down: (command, level); None if neither fits."""
    lines = _commands(text)
    out: list[tuple[str, int]] = []
    for n, line in enumerate(lines):
        m = re.fullmatch(r"(source|\.|bash)\s+(?:\$\{?TEST_DIR\}?|" + re.escape(tests) + r")/([\w.-]+\.sh)", line)
        if m is None:
            out.append((line, level))
            continue
        if m.group(2) not in scripts or level > 3 or (m.group(1) == "bash" and n != len(lines) - 1):
            return None
        inner = _flatten(scripts[m.group(2)], scripts, tests, level + (m.group(1) == "bash"))
        if inner is None:
            return None
        out += inner
    return out


def plain_pytest(text: str, scripts: dict[str, str], pytest_cmd: str, tests: str) -> tuple[list[str], bool, int] | None:
    """(pytest's arguments after the flags, whether the $PWD check is there, SHLVL) when the
    rewritten run-tests.sh (and what it sources or runs last) runs nothing but one pytest line."""
    flat = _flatten(text, scripts, tests)
    if flat is None:
        return None
    lines = [line for line, _ in flat]
    args: list[str] | None = None
    check, shlvl, i = False, 1, 0
    while i < len(lines):
        line = lines[i]
        if line == _PWD_CHECK[0] and lines[i + 2:i + 4] == list(_PWD_CHECK[1:]) \
                and re.fullmatch(r'echo "[^"$`\\]*"', lines[i + 1]) and not check and args is None:
            check, i = True, i + 4
            continue
        if _SET.fullmatch(line) and args is None:
            i += 1
            continue
        if not line.startswith(pytest_cmd + " ") or args is not None:
            return None
        rest = line[len(pytest_cmd) + 1:].replace("${TEST_DIR}", tests).replace("$TEST_DIR", tests).split()
        if not rest or not all(_PLAIN_ARG.fullmatch(w) for w in rest):
            return None
        args, shlvl, i = rest, 1 + flat[i][1], i + 1
    return (args, check, shlvl) if args else None


_STATUS_TEST = re.compile(r'if \[\[? "?\$\{?(?P<var>\?|[A-Za-z_]\w*)\}?"? (?P<op>-eq|-ne|==?|!=) "?0"? \]\]?; then')
_ECHO = re.compile(r"""echo (?P<q>["']?)(?P<value>[0-9.]+)(?P=q) ?> ?(?P<r>["']?)(?P<path>[\w./-]+)(?P=r)""")
_NO_UV = re.compile(r"if ! command -v [\w.-]+(?: ?&> ?/dev/null| ?> ?/dev/null(?: 2>&1)?| 2>&1)?; then")


def _errexit(line: str, errexit: bool) -> bool | None:
    """`set` with -e/+e/-u/-o pipefail …: whether errexit is on after it; None if not such a line."""
    words = line.split()
    if words[:1] != ["set"] or len(words) < 2:
        return None
    option: str | None = None
    for word in words[1:]:
        if option is not None:
            if word not in ("pipefail", "errexit", "nounset"):
                return None
            errexit = option == "-" if word == "errexit" else errexit
            option = None
        elif re.fullmatch(r"[-+](?:[eu]+o?|o)", word):
            errexit = word[0] == "-" if "e" in word else errexit
            option = word[0] if word.endswith("o") else None
        else:
            return None
    return None if option is not None else errexit


def _harbor_prelude(lines: list[str], pytest_cmd: str, logs: str) -> tuple | None:
    """Walk the set-up lines up to the pytest line: (its arguments, whether it is `if PYTEST;
    then`, its index, errexit there, the $PWD check, the `cd` target, the programs run); None
    when a line is not one the warm verifier can play or skip."""
    errexit, check, cd, programs, i = False, False, None, {"mkdir"}, 0  # the cold command itself runs mkdir
    while i < len(lines):
        line, after = lines[i], lines[i + 1:i + 4]
        if (state := _errexit(line, errexit)) is not None:
            errexit, i = state, i + 1
        elif re.fullmatch(rf'mkdir -p "?{re.escape(logs)}/?"?', line):
            i += 1
        elif re.fullmatch(rf'rm -f "?{re.escape(logs)}/[\w.-]+"?', line):
            programs.add("rm")  # the directory is empty until pytest runs: nothing to remove
            i += 1
        elif line == _PWD_CHECK[0] and after[1:] == list(_PWD_CHECK[1:]) and not check and cd is None \
                and re.fullmatch(r'echo "[^"$`\\]*"', after[0]):
            check, i = True, i + 4
        elif _NO_UV.fullmatch(line) and after[:1] == ["fi"]:  # its body became `:` lines
            i += 2
        elif (m := re.fullmatch(r'cd "?(/[\w./-]*?)/?"?(?: \|\| exit(?: \d+)?)?', line)) and cd is None \
                and os.path.normpath(m.group(1) or "/") == (m.group(1) or "/"):
            cd, i = m.group(1) or "/", i + 1  # a failed cd: the warm child exits COLD and the script runs
        else:
            if_form = line.startswith("if ") and line.endswith("; then")
            call = line[3:-6] if if_form else line
            if not call.startswith(pytest_cmd + " "):
                return None
            args = call[len(pytest_cmd) + 1:].split()
            if not args or not all(_PLAIN_ARG.fullmatch(w) for w in args):
                return None
            return args, if_form, i, errexit, check, cd, programs
    return None


def harbor_reward(text: str, pytest_cmd: str, tests: str, logs: str) -> tuple[RewardPlan, bool] | None:
    """The rewritten Harbor ``test.sh`` as (a plan, whether it has the template's ``$PWD`` check)
    when it is: set-up lines the warm verifier can play or skip (``set``, ``mkdir -p``/``rm -f``
    in the reward directory, the ``$PWD`` check, an emptied ``if ! command -v uv``, one ``cd``),
    one plain pytest line, the reward file written from its status (``$?``, ``status=$?`` or
    ``if pytest; then``), then nothing or ``exit 0`` / ``exit $status``. Else None: cold."""
    lines = [ln.replace("${TEST_DIR}", tests).replace("$TEST_DIR", tests) for ln in _commands(text)]
    prelude = _harbor_prelude(lines, pytest_cmd, logs)
    if prelude is None:
        return None
    args, if_form, i, errexit, check, cd, programs = prelude
    i, var, stops, then_passes = i + 1, "?", False, True
    if not if_form:  # PYTEST, then [status=$?] and `if [ $status -eq 0 ]; then`
        if i < len(lines) and (m := re.fullmatch(r"([A-Za-z_]\w*)=\$\?", lines[i])):
            var, i = m.group(1), i + 1
        stops = errexit  # set -e: a failed pytest ends the script there, before any write
        while var != "?" and i < len(lines) and (state := _errexit(lines[i], errexit)) is not None:
            errexit, i = state, i + 1
        m = _STATUS_TEST.fullmatch(lines[i]) if i < len(lines) else None
        if m is None or m.group("var") != var:
            return None
        then_passes, i = m.group("op") in ("-eq", "=", "=="), i + 1
    block = lines[i:i + 4]
    writes = [_ECHO.fullmatch(block[n]) if len(block) > n else None for n in (0, 2)]
    if len(block) < 4 or block[1] != "else" or block[3] != "fi" or None in writes \
            or {w.group("path") for w in writes} != {f"{logs}/reward.txt"}:
        return None
    exits = {(): "last", ("exit 0",): "zero", ("exit $?",): "last"}
    if var != "?":
        exits.update({(f"exit ${var}",): "pytest", (f'exit "${var}"',): "pytest", (f"exit ${{{var}}}",): "pytest"})
    end = exits.get(tuple(lines[i + 4:]))
    if end is None:
        return None
    passed, failed = writes if then_passes else writes[::-1]
    plan = RewardPlan(script=f"{tests}/test.sh", pytest_args=args, cd=cd, path=f"{logs}/reward.txt",
                      passed=passed.group("value") + "\n", failed=None if stops else failed.group("value") + "\n",
                      errexit=errexit, exit=end, programs=sorted(programs))
    return plan, check


# ---- the plan: which command, which scripts --------------------------------------------------


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


@functools.lru_cache(maxsize=512)
def _rewritten(text: str, pytest_cmd: str, pytest_m_cmd: str, python: str, fetch: bool, packaged: bool,
               _where: tuple) -> testscripts.ScriptRewrite:
    return testscripts.rewrite_script(text, pytest_cmd, pytest_m_cmd, python, fetch=fetch, packaged_project=packaged)


def _rewrite(*args: Any) -> testscripts.ScriptRewrite:
    """``rewrite_script``, read once per script and settings in a process (every trial of a task
    stages the same scripts); a copy, which the caller may change. Keyed also by the variables
    that place the fetched test packages (``testscripts._fetch_dir``)."""
    where = tuple(os.environ.get(k) for k in ("AGENTRIG_TEST_PACKAGES_DIR", "XDG_CACHE_HOME", "HOME"))
    return _rewritten(*args, where).model_copy(deep=True)


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
    rewrites = {p: _rewrite(p.read_text(errors="replace"), pytest_cmd, pytest_m_cmd, python or "python3",
                            network and python is not None, packaged)
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
