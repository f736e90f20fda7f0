"""The verifier phase: the task's hidden tests, run after the agent stopped, by a process it never controlled.

Order of events (``verify``), after the agent phase ended for whatever reason (it submitted, hit
its timeout, ran out of steps, …), in the trial's final sandbox state:

1. ``/tests`` is removed (whatever the agent put there goes) and the task's tests are copied in
   fresh: Terminal-Bench 1 places ``run-tests.sh`` and the contents of ``tests/`` in ``/tests``;
   Harbor places ``tests/`` there (``/tests/test.sh``). The agent never saw them.
2. The sandbox runs the tests as a fresh process (``Sandbox.run_verifier``), never through the
   agent's shell, with ``TEST_DIR=/tests`` (as Terminal-Bench's compose file sets it) and the
   task's ``[verifier] env``, from the task's working directory, under the task's test timeout.
   Harbor's ``/logs/verifier`` is a directory the sandbox creates fresh for the verifier, so a
   reward file the agent wrote earlier is not there.
3. Terminal-Bench 1: ``bash /tests/run-tests.sh`` (or pytest on ``/tests/test_outputs.py -rA``
   when the task has no run-tests.sh); the output is read by the task's ``parser_name``
   (``tb_parsers.read``: ``pytest`` by ``parsers.parse_pytest``, or ``swebench``, ``sweperf``,
   ``mlebench``, ``swelancer``); reward 1 when every result it reads passed. Harbor:
   ``bash /tests/test.sh``; the reward file is read by ``parsers.parse_reward_dir``, and when the
   script's output holds pytest's short test summary (``pytest -rA``) its per-test outcomes are
   recorded beside the reward (``tests``; they never change it).

Test scripts that bootstrap uv + pytest from the internet are rewritten to use agentrig's own
Python and pytest, bound read-only into the verifier's process (``testscripts``); pytest is
run with ``-p no:cacheprovider --confcutdir=/tests`` and an explicit ini file so that a
``conftest.py`` or ``pytest.ini`` the agent left above ``/tests`` is not loaded, and with
``PYTEST_DISABLE_PLUGIN_AUTOLOAD=1`` (a bare pytest, as Terminal-Bench installs it; ``staging``).
Under bwrap a plan that is one plain pytest run (``VerifierPlan.pytest_args``), or a Harbor
``test.sh`` that is one plain pytest run and the reward file written from its status
(``VerifierPlan.reward``), is played by the warm verifier (``sandbox/warm.py``: pytest imported
once per runner, forked into the trial's sandbox with the cold command's namespaces, binds,
capabilities, directory, environment and arguments; for Harbor its child then writes the reward
file as the script would); when it cannot, the cold command runs (``VerifierResult.warm`` says
which ran).

Failure modes (``FAILURE_MODES``; documented in docs/terminal.md): the verifier's own
(test_timeout, parse_error, broke_environment) win over how the agent phase ended
(agent_timeout, format_errors, limits_exceeded, context_overflow, never_submitted), which win over wrong_output;
a resolved trial keeps the agent phase's end (submitted, or e.g. agent_timeout when the work
was done before the clock ran out, as Terminal-Bench records it). needs_network,
needs_container, needs_services, missing_files and unsupported (a parser_name Terminal-Bench does not
have) exclude the trial: it could not be judged in this sandbox.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import tempfile
from collections.abc import Iterator
import time
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from .core.base import DISK_FULL, SandboxError
from .tasks import parsers, tb_parsers, testscripts
from .tasks.staging import (
    BASE_PATH,
    TESTS_DIR,
    VERIFIER_DIR,
    VerifierPlan,
    fetch_test_packages,
    needs_network,
    stage_tests,
    venv_commands,
    verifier_python,
)
from .tasks.taskmodel import TerminalTask

__all__ = ["FAILURE_MODES", "EXCLUDED_MODES", "VerifierResult", "VerifierPlan", "ShellState", "verify",
           "capture_shell_state", "needs_network", "stage_tests", "verifier_python", "TESTS_DIR", "VERIFIER_DIR"]

AgentEnd = Literal["submitted", "agent_timeout", "format_errors", "limits_exceeded", "context_overflow",
                   "never_submitted"]
FailureMode = Literal["submitted", "wrong_output", "agent_timeout", "test_timeout", "parse_error",
                      "format_errors", "limits_exceeded", "context_overflow", "never_submitted", "broke_environment",
                      "needs_network", "needs_container", "needs_services", "missing_files", "unsupported"]

FAILURE_MODES: dict[str, str] = {
    "submitted": "the agent submitted and the tests passed (resolved; not a failure)",
    "wrong_output": "the tests ran and at least one failed (Harbor: reward below 1)",
    "agent_timeout": "the agent phase hit the task's agent timeout; the tests still ran",
    "test_timeout": "the tests did not finish within the task's test timeout",
    "parse_error": "the tests' result could not be read: no pytest summary, no SWE-bench/SWE-Perf result markers, "
                   "or no/invalid reward file",
    "format_errors": "the agent's replies could not be parsed into actions too many times in a row",
    "limits_exceeded": "the agent phase hit a step, cost or token limit",
    "context_overflow": "the conversation outgrew the model's context window even with old outputs elided",
    "never_submitted": "the agent stopped without submitting (e.g. it ended its turn with no action)",
    "broke_environment": "the verifier could not start in the final state (shell or interpreter gone)",
    "needs_network": "excluded: the tests need the network and the sandbox has none",
    "needs_container": "excluded: the task needs a real container runtime (see TaskSupport)",
    "needs_services": "excluded: the task's compose file runs services beside the agent's machine",
    "missing_files": "excluded: files of the task are not in this copy (Git LFS pointers, not their content; a COPY source the build context lacks)",
    "unsupported": "excluded: the task's parser_name is none of Terminal-Bench's parsers: its output cannot be judged",
}
EXCLUDED_MODES = frozenset({"needs_network", "needs_container", "needs_services", "missing_files", "unsupported"})
_AGENT_FAILURES = ("agent_timeout", "format_errors", "limits_exceeded", "context_overflow", "never_submitted")


class VerifierResult(BaseModel):
    task_id: str
    format: Literal["tb1", "harbor"]
    resolved: bool
    reward: float  # TB1: 1.0 resolved / 0.0; Harbor: the reward file's number
    tests: list[parsers.TestResult] = Field(default_factory=list)
    components: dict[str, float] = Field(default_factory=dict)  # test name -> 1/0; Harbor's numbers
    failure_mode: FailureMode
    excluded: bool = False
    detail: str | None = None  # why (parse error, the network line, …)
    output: str = ""  # the verifier's output, bounded by the sandbox
    omitted_chars: int = 0
    exit_code: int | None = None
    timed_out: bool = False
    duration_s: float = 0.0
    offline: bool = False  # the test scripts ran with agentrig's Python and pytest
    warm: bool = False  # pytest was run by the warm verifier (not a fresh interpreter)
    notes: list[str] = Field(default_factory=list)


# Not carried from the agent's shell into the verifier: what changes how its bash, python and
# pytest start (what they import or load, their options, functions that shadow commands).
_UNSAFE_PREFIXES = ("PYTHON", "PYTEST", "LD_", "BASH_FUNC_")
_UNSAFE_NAMES = frozenset({"TEST_DIR", "PWD", "OLDPWD", "SHLVL", "_", "BASH_ENV", "ENV", "SHELLOPTS",
                           "BASHOPTS", "IFS", "PS4", "GLOBIGNORE", "CDPATH"})


class ShellState(BaseModel):
    """The agent shell's exported variables and directory (for ``run_tests_in_same_shell``)."""

    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None


# ---- running it --------------------------------------------------------------------------------


async def capture_shell_state(sandbox: Any) -> ShellState:
    """Read the agent shell's exported variables and directory (persistent shell), for tasks
    with ``run_tests_in_same_shell``. Variables that would let the agent steer the verifier's
    own processes are dropped (``_UNSAFE_PREFIXES``/``_UNSAFE_NAMES``: PYTHON*, PYTEST*, LD_*,
    exported bash functions, BASH_ENV …)."""
    res = await sandbox.run("pwd -P; env -0 | base64 -w0; echo", timeout_s=10)
    lines = (res.output or "").splitlines()
    if res.exit_code != 0 or len(lines) < 2:
        return ShellState()
    try:
        raw = base64.b64decode(lines[1].strip()).decode("utf-8", "replace")
    except ValueError:
        return ShellState(cwd=lines[0].strip() or None)
    env = {}
    for item in raw.split("\0"):
        key, sep, value = item.partition("=")
        if sep and key and not key.startswith(_UNSAFE_PREFIXES) and key not in _UNSAFE_NAMES:
            env[key] = value
    return ShellState(env=env, cwd=lines[0].strip() or None)


def _mode(agent_end: AgentEnd, resolved: bool, verifier_mode: str | None) -> str:
    if verifier_mode:
        return verifier_mode
    if agent_end in _AGENT_FAILURES:
        return agent_end
    return "submitted" if resolved else "wrong_output"


async def verify(sandbox: Any, task: TerminalTask, *, agent_end: AgentEnd = "submitted",
                 network: bool | None = None, shell_state: ShellState | None = None,
                 support_reason: str | None = None) -> VerifierResult:
    """Run the task's tests in `sandbox` (after the agent phase) and judge them.

    `network`: whether the sandbox has network (None: the task's allow_internet);
    `shell_state`: the agent shell's state, for tasks with ``run_tests_in_same_shell``;
    `support_reason`: ``TaskSupport.reason`` when the task cannot run in this sandbox."""
    base = dict(task_id=task.id, format=task.format, resolved=False, reward=0.0)
    support_reason = support_reason or tb_parsers.unsupported_parser(task)  # nothing could judge its output
    if support_reason:
        mode = support_reason.split(":", 1)[0].strip()
        mode = mode if mode in EXCLUDED_MODES else "needs_container"
        return VerifierResult(**base, failure_mode=mode, excluded=True, detail=support_reason)
    has_net = task.allow_internet if network is None else network
    # binds: bwrap, and a container whose namespaces agentrig can enter (docker.py); any other
    # container takes no new binds: its own tools run the scripts as written
    binds_in = getattr(sandbox, "kind", None) == "bwrap" or getattr(sandbox, "binds_verifier", False)
    container = getattr(sandbox, "kind", None) in ("docker", "podman") and not binds_in
    python, binds = (None, {}) if container else verifier_python()
    tests, logs = sandbox.sandbox_path(TESTS_DIR), sandbox.sandbox_path(VERIFIER_DIR)
    started = time.monotonic()
    with _staging_dir(sandbox) as tmp:
        staged, reward_dir = Path(tmp) / "tests", Path(tmp) / "verifier"
        reward_dir.mkdir()
        plan = stage_tests(task, staged, python, network=has_net, tests=tests, logs=logs, workdir=sandbox.workdir,
                           image_python=getattr(sandbox, "image_root", False))
        if plan.needs_network:
            return VerifierResult(**base, failure_mode="needs_network", excluded=True, detail=plan.needs_network,
                                  notes=plan.notes)
        for target, reqs in plan.fetch.items():  # packages the tests install that agentrig lacks: once, on the host
            failed = await asyncio.to_thread(fetch_test_packages, target, reqs)
            if failed and DISK_FULL in failed:  # fetched onto this machine's disk: the host's fault, never the task's
                raise SandboxError(f"the packages the tests need could not be fetched: this machine's disk is full "
                                   f"({DISK_FULL}) under {Path(target).parent}; free space and run again\n{failed}")
            if failed:
                return VerifierResult(**base, failure_mode="needs_network", excluded=True, notes=plan.notes,
                                      detail=f"the packages the tests need could not be fetched: {failed}")
            binds = {**binds, target: target}
        same_shell = bool(shell_state and task.run_tests_in_same_shell)
        env = {**(shell_state.env if same_shell else {}), "TEST_DIR": tests, **plan.env, **task.verifier_env}
        if plan.venv_path and python is not None:
            venv_bin = venv_commands(python)
            binds = {**binds, str(venv_bin): str(venv_bin)}
            env["PATH"] = f"{venv_bin}:{env.get('PATH') or getattr(sandbox, 'env', {}).get('PATH') or BASE_PATH}"
        command = plan.command
        if same_shell and shell_state.cwd:
            command = f"cd {testscripts.shlex.quote(shell_state.cwd)} 2>/dev/null; " + command.split("; ", 1)[1]
        q = testscripts.shlex.quote
        if not binds_in:  # with binds the verifier's own process removes /tests (`remove`)
            await sandbox.run_verifier(f"rm -rf {q(tests)}" + (f" {q(logs)}; mkdir -p {q(logs)}" if container else ""),
                                       timeout_s=60, env={}, extra_ro_binds={})
        # copy_in and the binds take paths as the task names them (the sandbox maps them itself);
        # commands and TEST_DIR use them as the sandbox's commands see them (`tests`, `logs`)
        rw: dict[str, str] | None = None if container else {str(reward_dir): VERIFIER_DIR}
        res = None
        if binds_in:
            # this trial's own copy, writable as in Terminal-Bench (tests that build into /tests:
            # `setup.py build_ext --inplace`); bound only in the verifier's mount namespace, so a
            # process the agent left running cannot see it, let alone rewrite the tests mid-run
            rw = {**(rw or {}), str(staged): TESTS_DIR}
            args = plan.pytest_args or (plan.reward.pytest_args if plan.reward else None)
            if args and not same_shell:
                harbor = {"reward": plan.reward.model_dump()} if plan.reward else {}
                res = await sandbox.run_pytest(args, timeout_s=task.test_timeout_s, env=env, extra_ro_binds=binds,
                                               remove=[TESTS_DIR], strict_cwd=plan.strict_cwd, shlvl=plan.shlvl,
                                               rw_binds=rw, **harbor)
        else:
            await sandbox.copy_in(staged, TESTS_DIR)
        warm = res is not None
        if res is None:
            res = await sandbox.run_verifier(command, timeout_s=task.test_timeout_s, env=env, extra_ro_binds=binds,
                                             rw_binds=rw, **({"remove": [TESTS_DIR]} if binds_in else {}))
        out = dict(output=res.output, omitted_chars=res.omitted_chars, exit_code=res.exit_code,
                   timed_out=res.timed_out, offline=plan.offline, notes=plan.notes, warm=warm)
        if res.timed_out:
            result = VerifierResult(**base, **out, failure_mode="test_timeout",
                                    detail=f"the tests ran longer than {task.test_timeout_s:g} s")
        elif task.format == "harbor":
            if container:
                await _fetch_rewards(sandbox, logs, reward_dir)
            result = _judge_harbor(base, out, reward_dir, agent_end)
        else:
            result = _judge_tb1(base, out, res, agent_end, task.parser_name)
    result.duration_s = time.monotonic() - started
    return result


@contextlib.contextmanager
def _staging_dir(sandbox: Any) -> Iterator[str]:
    """Where the tests are staged: inside a bwrap trial's own directory (outside what its commands
    see; deleted with the trial, off the trial's path), else a temporary directory deleted here."""
    trial_dir = getattr(sandbox, "trial_dir", None) if getattr(sandbox, "kind", None) == "bwrap" else None
    if trial_dir is not None and not getattr(sandbox, "keep", False) and Path(trial_dir).is_dir():
        yield tempfile.mkdtemp(prefix="verify-", dir=trial_dir)
        return
    with tempfile.TemporaryDirectory(prefix="agentrig-verify-") as tmp:
        yield tmp


async def _fetch_rewards(sandbox: Any, logs: str, into: Path) -> None:
    """Copy the reward files out of a container (it has no bind back to the host)."""
    res = await sandbox.run_verifier(
        f"cd {testscripts.shlex.quote(logs)} 2>/dev/null && for f in reward.json reward.txt; do "
        f"[ -f \"$f\" ] && printf '@@%s@@%s\\n' \"$f\" \"$(head -c 65536 \"$f\" | base64 -w0)\"; done; true",
        timeout_s=30, env={}, extra_ro_binds={})
    for line in (res.output or "").splitlines():
        parts = line.split("@@")
        if len(parts) == 3 and parts[1] in ("reward.json", "reward.txt"):
            try:
                (into / parts[1]).write_bytes(base64.b64decode(parts[2]))
            except ValueError:
                continue


def _judge_tb1(base: dict, out: dict, res: Any, agent_end: AgentEnd, parser_name: str) -> VerifierResult:
    """The task's parser reads the output (``tb_parsers.read``); exit 126/127 with nothing it looks
    for in the output is ``broke_environment`` (the shell or an interpreter the tests need is gone)."""
    broke = res.exit_code in (126, 127) and (parser_name != "pytest" or
                                             "short test summary info" not in (res.output or "").lower())
    try:
        reading = tb_parsers.read(parser_name, res.output or "")
    except parsers.ParseError as exc:
        if broke:
            return VerifierResult(**base, **out, failure_mode="broke_environment",
                                  detail=f"the tests could not start (exit {res.exit_code}): {(res.output or '').strip()[:300]}")
        return VerifierResult(**base, **out, failure_mode="parse_error", detail=str(exc))
    tests = reading.tests
    if not reading.found and broke:
        return VerifierResult(**base, **out, tests=tests, failure_mode="broke_environment",
                              detail=f"the tests could not start (exit {res.exit_code}): {(res.output or '').strip()[:300]}")
    if not tests:
        return VerifierResult(**base, **out, failure_mode="parse_error",
                              detail="the short test summary lists no test result")
    ok = parsers.resolved(tests)
    return VerifierResult(**{**base, "resolved": ok, "reward": 1.0 if ok else 0.0}, **out, tests=tests,
                          components={t.name: 1.0 if t.passed else 0.0 for t in tests},
                          failure_mode=_mode(agent_end, ok, None), detail=None if ok else reading.detail)


def _judge_harbor(base: dict, out: dict, rdir: Path, agent_end: AgentEnd) -> VerifierResult:
    try:
        reward = parsers.parse_reward_dir(rdir)
    except parsers.ParseError as exc:
        mode = "broke_environment" if out["exit_code"] in (126, 127) else "parse_error"
        return VerifierResult(**base, **out, failure_mode=mode, detail=str(exc))
    ok = reward.reward >= 1.0
    return VerifierResult(**{**base, "resolved": ok, "reward": reward.reward}, **out, tests=_summary(out["output"]),
                          components=reward.components, failure_mode=_mode(agent_end, ok, None),
                          detail=f"reward {reward.reward:g} from {reward.source}")


def _summary(output: str | None) -> list[parsers.TestResult]:
    """Harbor: the tests pytest's short test summary lists when ``test.sh`` printed one (``-rA``),
    for the record and the audit's reasons only — the reward file alone decides the reward."""
    try:
        return parsers.parse_pytest(output or "")
    except parsers.ParseError:
        return []
