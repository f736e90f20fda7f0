"""The local sandbox: a temporary directory, no isolation, a warning, nothing of our env, and
Dockerfile steps played once per task in its private mounts (as root) or refused (without)."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from agentrig.bench.terminal.benchmark import task_support
from agentrig.bench.terminal.sandbox import TaskBuildError, localns, open_sandbox

from .sandbox_support import make_task, settings


async def test_local_runs_in_a_temporary_root_with_a_warning(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local-must-not-leak")
    task = make_task(tmp_path, "FROM ubuntu:24.04\nWORKDIR /app\nCOPY data.txt ./\nENV MODE=local\n", {"data.txt": "hello\n"})
    with pytest.warns(UserWarning, match="without any isolation"):
        sandbox = await open_sandbox(task, settings(tmp_path, kind="local"))
    try:
        assert sandbox.workdir == sandbox.sandbox_path("/app")  # the root's app/, seen where commands see it
        assert (sandbox.root / "app" / "data.txt").read_text() == "hello\n"
        result = await sandbox.run("pwd; cat data.txt; echo $MODE; env", 30)
        assert result.output.startswith(f"{sandbox.workdir}\nhello\nlocal\n")
        assert "sk-local-must-not-leak" not in result.output
        await sandbox.copy_in(task.tests_dir, "/tests")
        check = await sandbox.run_verifier("ls $TEST_DIR", 30, env={"TEST_DIR": sandbox.sandbox_path("/tests")}, extra_ro_binds={})
        assert "test_outputs.py" in check.output
    finally:
        await sandbox.close()
    assert not sandbox.root.exists()


needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="the local sandbox's private mounts need root")

MAKE = """set -eu
echo "$GREETING from $(pwd)" > /app/made.txt
echo scratch > /tmp/{scratch}
echo home > "$HOME/{scratch}"
ls /tmp > /app/build-tmp.txt
"""


@needs_root
async def test_local_runs_dockerfile_run_steps_in_its_private_mounts_once_per_task(tmp_path):
    scratch = f"agentrig-probe-{uuid.uuid4().hex}"
    task = make_task(tmp_path, "FROM ubuntu:24.04\nWORKDIR /app\nCOPY make.sh /tmp/make.sh\nENV GREETING=hello\n"
                     "RUN bash /tmp/make.sh && rm /tmp/make.sh\nRUN chmod 600 /app/made.txt\n",
                     {"make.sh": MAKE.format(scratch=scratch)})
    boxes = []
    try:
        for _ in range(2):
            with pytest.warns(UserWarning, match="RUN steps too"):
                boxes.append(await open_sandbox(task, settings(tmp_path, kind="local")))
        first, second = boxes
        made = first.root / "app" / "made.txt"
        assert made.read_text() == "hello from /app\n" and made.stat().st_mode & 0o777 == 0o600
        assert (first.root / "root" / scratch).read_text() == "home\n"  # the build's HOME is the trial's
        # the build's /tmp was its own (what the build put there, none of the host's), and nothing leaked
        assert set((first.root / "app" / "build-tmp.txt").read_text().split()) == {"make.sh", scratch}
        assert not Path("/tmp", scratch).exists() and not (Path.home() / scratch).exists()
        result = await first.run("cat /app/made.txt && echo trial-one > /app/mine.txt", 30)
        assert result.exit_code == 0 and result.output == "hello from /app\n"
        assert not (second.root / "app" / "mine.txt").exists()  # each trial has its own copy
        templates = [p for p in (tmp_path / "cache" / "local").iterdir() if p.is_dir()]
        assert len(templates) == 1  # built once, reused by the second trial
    finally:
        for box in boxes:
            await box.close()
    assert not any(Path("/app").iterdir())  # the host's mount point stayed empty


@needs_root
async def test_local_build_failures_and_misplaced_files(tmp_path):
    broken = make_task(tmp_path, "FROM ubuntu:24.04\nWORKDIR /app\nRUN echo about to fail && exit 3\n", task_id="broken")
    with pytest.warns(UserWarning), pytest.raises(TaskBuildError) as info:
        await open_sandbox(broken, settings(tmp_path, kind="local"))
    assert info.value.exclusion is None  # the task's own build fails: a broken task
    assert "line 3: RUN exited 3" in str(info.value) and "about to fail" in str(info.value)
    target = f"/usr/local/bin/agentrig-probe-{uuid.uuid4().hex}"
    outside = make_task(tmp_path, f"FROM ubuntu:24.04\nWORKDIR /app\nCOPY tool {target}\n", {"tool": "x"}, task_id="outside")
    assert "would write this machine's" in task_support(outside, "local").reason
    with pytest.raises(TaskBuildError) as info:
        await open_sandbox(outside, settings(tmp_path, kind="local"))
    assert info.value.exclusion == "needs_container" and not Path(target).exists()


async def test_local_without_private_mounts_never_runs_dockerfile_run_steps(tmp_path, monkeypatch):
    # as a non-root user: no private mount namespace, so RUN steps are refused, never run on the host
    monkeypatch.setattr(localns, "unavailable", lambda: "not running as root")
    marker = Path(tmp_path, "should-not-exist")
    task = make_task(tmp_path, f"FROM ubuntu:24.04\nRUN touch {marker}\n")
    found = task_support(task, "local")
    assert not found.ok and found.exclusion == "needs_container" and "RUN steps" in found.reason
    with pytest.raises(TaskBuildError) as info:
        await open_sandbox(task, settings(tmp_path, kind="local"))
    assert info.value.exclusion == "needs_container"
    assert not marker.exists()
