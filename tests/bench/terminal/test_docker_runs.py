"""Issue 24's acceptance of the container sandbox, on docker as on podman (test_podman_runs.py):
`agentrig run` as a subprocess on the built-in tasks with an oracle arm and a bash arm whose model
answers 20% of requests with faults, the runner killed by SIGKILL mid-run and the same command run
again: every planned trial stored valid once and solved, the retries counted, and neither runner
leaves a container or task image behind (the killed one's are reaped by the resumed run)."""

from __future__ import annotations

import pytest

from agentrig.bench.terminal.scripted.killed_run import killed_and_resumed, problems

from ...dockerd import need_docker
from .run_support import BUILTIN_TASKS

pytestmark = pytest.mark.slow


def test_builtin_tasks_under_docker_with_faults_sigkill_and_resume(tmp_path, docker_daemon):
    need_docker(docker_daemon)
    report = killed_and_resumed(tmp_path, sandbox="docker", build_network="host-settings", trials=1,
                                concurrency=3, fault_rate=0.2, kill_after=4)
    planned = {f"{arm}/{t.id}#0" for arm in ("oracle", "bash") for t in BUILTIN_TASKS}
    assert problems(report, planned) == [], report
    left = report["left_at_kill"]
    assert left["containers"] and left["images"]
    assert report["left_after"]["first_runner"] == {"containers": [], "images": []}
    assert report["retries"] > 0 and set(report["retry_causes"]) >= {"rate_limited", "server_error", "malformed"}
