"""Docker/Podman sandboxes: only where a client and a daemon answer (else skipped, saying why)."""

from __future__ import annotations

import asyncio

import pytest

from agentrig.bench.terminal.sandbox import open_sandbox, sandbox_check
from agentrig.bench.terminal.sandbox.docker import engine_problem

from .sandbox_support import make_task, settings

PROBLEM = asyncio.run(engine_problem("docker"))


async def test_the_doctor_reports_the_engine_state():
    findings = await sandbox_check("docker")
    assert len(findings) == 1 and findings[0].ok == (PROBLEM is None)
    if PROBLEM:
        assert findings[0].detail == PROBLEM


@pytest.mark.skipif(PROBLEM is not None, reason=f"docker sandbox unavailable: {PROBLEM}")
async def test_docker_trial_container(tmp_path):
    task = make_task(tmp_path, "FROM ubuntu:24.04\nWORKDIR /app\nRUN echo built > /built\n")
    sandbox = await open_sandbox(task, settings(tmp_path, kind="docker"))
    try:
        result = await sandbox.run("cat /built; pwd", 60)
        assert result.output == "built\n/app\n"
        timed = await sandbox.run("sleep 1000", 1)
        assert timed.timed_out
    finally:
        await sandbox.close()
