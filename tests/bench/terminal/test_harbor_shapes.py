"""Shapes of real Harbor-format (and TB1) task sets, each on a task folder made here (tmp_path):

- Harbor's own log mounts in a task's compose file (``${HOST_VERIFIER_LOGS_PATH}:${ENV_VERIFIER_LOGS_PATH}``,
  the agent's and the artifacts' alike, ``${VAR:-default}`` forms read whole) are the harness's: the
  task plays on bwrap (oracle 1, no-op 0); a mount that stays unsupported (``${HOME}/x``) is the
  one the reason names;
- a Harbor ``test.sh`` that runs ``pytest -rA``: the verifier records the tests of its short
  summary beside the reward, so a broken oracle's reason names the failing test;
- a task with no reference solution (TB1: no solution.sh nor solution.yaml; Harbor: no
  solution/solve.sh) is said to be one, and the coverage's ``verdict()`` makes it ``no_solution``.
"""

from __future__ import annotations

import asyncio
import importlib.util
from pathlib import Path

import pytest

from agentrig.bench.terminal.audit import audit_task
from agentrig.bench.terminal.availability import task_support
from agentrig.bench.terminal.tasks.compose import ComposeError
from agentrig.bench.terminal.tasks.compose_check import check_compose
from agentrig.bench.terminal.tasks.compose_volumes import agent_binds
from agentrig.bench.terminal.tasks.taskfile import load_task

from .run_support import write_task
from .sandbox_support import settings
from .test_warm_harbor import TEMPLATE

SOLVE = "#!/bin/bash\necho ok > /app/out.txt\n"
REWARD_SH = ("#!/bin/bash\nmkdir -p /logs/verifier\n"
             "if [ \"$(cat /app/out.txt 2>/dev/null)\" = ok ]; then echo 1 > /logs/verifier/reward.txt; "
             "else echo 0 > /logs/verifier/reward.txt; fi\n")
HARBOR_LOGS = ("      - ${HOST_VERIFIER_LOGS_PATH:-./logs}:${ENV_VERIFIER_LOGS_PATH}\n"
               "      - ${HOST_AGENT_LOGS_PATH:-./agent-logs}:${ENV_AGENT_LOGS_PATH:-/logs/agent}\n"
               "      - ${HOST_ARTIFACTS_PATH}:${ENV_ARTIFACTS_PATH}\n")
COMPOSE = ("services:\n  main:\n    build:\n      context: .\n      dockerfile: Dockerfile\n"
           "    image: ${{MAIN_IMAGE_NAME:-made-here}}\n    command: [\"sh\", \"-c\", \"sleep infinity\"]\n"
           "    volumes:\n{volumes}")


def harbor_task(root: Path, name: str, *, test_sh: str = REWARD_SH, solve: str | None = SOLVE,
                volumes: str | None = None, tests: dict[str, str] | None = None):
    d = root / name
    (d / "tests").mkdir(parents=True)
    (d / "environment").mkdir()
    (d / "instruction.md").write_text("Write ok to /app/out.txt.\n")
    (d / "task.toml").write_text('version = "1.0"\n\n[verifier]\ntimeout_sec = 60.0\n\n'
                                 '[agent]\ntimeout_sec = 60.0\n\n[environment]\nallow_internet = false\n')
    (d / "environment" / "Dockerfile").write_text("FROM ubuntu:24.04\nWORKDIR /app\n")
    if volumes is not None:
        (d / "environment" / "docker-compose.yaml").write_text(COMPOSE.format(volumes=volumes))
    (d / "tests" / "test.sh").write_text(test_sh)
    for file, text in (tests or {}).items():
        (d / "tests" / file).write_text(text)
    if solve is not None:
        (d / "solution").mkdir()
        (d / "solution" / "solve.sh").write_text(solve)
    return load_task(d)


def _coverage():
    path = Path(__file__).resolve().parents[3] / "perf" / "terminal_coverage.py"
    spec = importlib.util.spec_from_file_location("terminal_coverage", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# -- Harbor's log mounts ----------------------------------------------------------------------

def test_harbors_log_mounts_are_the_harness_s_and_another_variable_is_the_one_named(tmp_path):
    task = harbor_task(tmp_path, "logs", volumes=HARBOR_LOGS)
    assert agent_binds(task.compose) == []
    for kind in ("bwrap", "podman"):
        assert check_compose(task.compose, kind) is None, kind
        assert task_support(task, kind).ok, task_support(task, kind).reason
    # a mount still unsupported after Harbor's: it is the one the reason names
    home = harbor_task(tmp_path, "home", volumes=HARBOR_LOGS + "      - ${HOME}/x:/y\n")
    for kind in ("bwrap", "podman"):
        reason = task_support(home, kind).reason or ""
        assert reason.startswith("needs_container: service 'main' mounts ${HOME}/x:/y (names the variable HOME"), reason
    # Harbor's log directory bound somewhere else than its own path is refused, naming it
    elsewhere = harbor_task(tmp_path, "elsewhere", volumes="      - ${HOST_VERIFIER_LOGS_PATH}:/results\n")
    with pytest.raises(ComposeError, match=r"mounts \$\{HOST_VERIFIER_LOGS_PATH\}:/results \(binds Harbor's /logs/verifier"):
        agent_binds(elsewhere.compose)
    # a `:-` default's colon is not a separator: a bind of the task's folder written with one is a variable
    default = harbor_task(tmp_path, "default", volumes="      - ${DATA:-./data}:/data:ro\n")
    with pytest.raises(ComposeError, match=r"names the variable DATA"):
        agent_binds(default.compose)


def test_a_harbor_task_mounting_harbors_logs_plays_on_bwrap(tmp_path):
    task = harbor_task(tmp_path, "logs", volumes=HARBOR_LOGS)
    row = asyncio.run(audit_task(task, settings(tmp_path)))
    assert row.status == "ok", row.reason
    assert row.oracle.reward == 1.0 and row.noop.reward == 0.0


# -- a Harbor oracle's failing tests ----------------------------------------------------------

def test_a_broken_harbor_oracle_names_its_failing_test(tmp_path):
    tests = {"test_outputs.py": ("from pathlib import Path\n\ndef test_written():\n"
                                 "    assert Path('/app/out.txt').read_text().strip() == 'ok'\n\n"
                                 "def test_shouted():\n    assert Path('/app/out.txt').read_text().strip() == 'OK'\n")}
    task = harbor_task(tmp_path, "pytest", test_sh=TEMPLATE, tests=tests)
    row = asyncio.run(audit_task(task, settings(tmp_path)))
    assert row.status == "broken", row.reason
    assert "reward 0 from reward.txt" in row.reason and "failed: test_shouted" in row.reason, row.reason
    assert "test_written" not in row.reason.split("failed:", 1)[1]
    assert row.oracle.failed_tests == ["test_shouted"]


# -- no reference solution --------------------------------------------------------------------

def test_a_task_without_a_reference_solution_is_said_to_be_one(tmp_path):
    write_task(tmp_path, "tb1-none", solution=None)
    tb1 = asyncio.run(audit_task(load_task(tmp_path / "tb1-none"), settings(tmp_path)))
    harbor = asyncio.run(audit_task(harbor_task(tmp_path, "harbor-none", solve=None), settings(tmp_path)))
    assert tb1.status == harbor.status == "broken"
    assert tb1.reason.startswith("no reference solution: the task has no solution.sh or solution.yaml"), tb1.reason
    assert harbor.reason.startswith("no reference solution: the task has no solution/solve.sh"), harbor.reason
    verdict = _coverage().verdict
    for row in (tb1, harbor):
        assert verdict(row.model_dump(mode="json")) == "no_solution"


def test_the_coverage_counts_both_shapes_of_a_missing_solution_as_no_solution():
    verdict = _coverage().verdict
    empty = "no reference solution: its solution.sh has no command (the solution does nothing) (the oracle does not pass: …)"
    none = "no reference solution: the task has no solution/solve.sh (the oracle does not pass: …)"
    old = "the oracle does not pass (wrong_output: …); its solution.sh has no command (the solution does nothing)"
    for reason in (empty, none, old):
        assert verdict({"status": "broken", "reason": reason}) == "no_solution"
    # what the tests could not reach is beside the point when there is nothing to play
    assert verdict({"status": "broken", "reason": none, "oracle": {"unreached": "tests could not reach x"}}) == "no_solution"


# -- uvx --with: the packages the tests import beside pytest -----------------------------------

UVX_WITH_SH = """#!/bin/bash
apt-get update
apt-get install -y curl
curl -LsSf https://astral.sh/uv/0.9.5/install.sh | sh
source $HOME/.local/bin/env
uvx \\
  -p 3.13 \\
  -w pytest==8.4.1 \\
  -w text-unidecode==1.3 \\
  -w pytest-json-ctrf==0.3.5 \\
  pytest --ctrf /logs/verifier/ctrf.json /tests/test_outputs.py -rA
if [ $? -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
"""
UVX_WITH_TEST = ("from pathlib import Path\n\nfrom text_unidecode import unidecode\n\n\n"
                 "def test_out():\n    assert unidecode(Path('/app/out.txt').read_text().strip()) == 'ok'\n")


def test_a_uvx_with_package_is_fetched_for_the_tests_and_offline_named(tmp_path):
    """TB2's template runs ``uvx -w pytest==… -w torch==… pytest``: the tests import the packages
    given with ``-w``. With the network they are fetched once (from PyPI, through this machine's
    settings) onto the tests' path — the oracle passes; without it the task needs the network,
    the package named (it used to run agentrig's pytest without them: ModuleNotFoundError, the
    oracle 'broken')."""
    task = harbor_task(tmp_path, "uvx-with", test_sh=UVX_WITH_SH, tests={"test_outputs.py": UVX_WITH_TEST})
    offline = task_support(task, "bwrap", network=False)
    assert not offline.ok and "installs 'text-unidecode==1.3' (uvx --with)" in offline.reason, offline.reason
    row = asyncio.run(audit_task(task, settings(tmp_path, network=True)))
    assert row.status == "ok", row.reason


def test_test_packages_that_fill_this_machines_disk_are_its_fault_not_the_tasks(tmp_path, monkeypatch):
    """The packages the tests need are fetched onto this machine's disk: a disk that fills up
    (here a 64 KiB tmpfs as the packages' directory) spoils the trial — invalid, the audit's
    `error` naming the full disk — never the task's `needs_network`."""
    import subprocess

    small = tmp_path / "small"
    small.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(small)], capture_output=True).returncode:
        pytest.skip("mounting a tmpfs needs root")
    try:
        monkeypatch.setenv("AGENTRIG_TEST_PACKAGES_DIR", str(small))
        task = harbor_task(tmp_path, "uvx-full", test_sh=UVX_WITH_SH, tests={"test_outputs.py": UVX_WITH_TEST})
        row = asyncio.run(audit_task(task, settings(tmp_path, network=True)))
    finally:
        subprocess.run(["umount", "-l", str(small)], check=False)
    assert row.status == "error", row.reason
    assert "disk is full (No space left on device)" in row.reason and "needs_network" not in row.reason
