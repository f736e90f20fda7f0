"""The local sandbox: a temporary directory, no isolation, a warning, and nothing of our env."""

from __future__ import annotations

import pytest

from agentrig.bench.terminal.sandbox import TaskBuildError, open_sandbox

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


async def test_local_never_runs_dockerfile_run_steps(tmp_path):
    task = make_task(tmp_path, "FROM ubuntu:24.04\nRUN touch /should-not-exist\n")
    with pytest.raises(TaskBuildError) as info:
        await open_sandbox(task, settings(tmp_path, kind="local"))
    assert info.value.exclusion == "needs_container"
