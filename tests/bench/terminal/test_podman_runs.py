"""Acceptance of issue 24's container sandbox on the built-in tasks, through the real stack: podman
(Debian's, with runc) on base images imported from roots built from packages, `agentrig run` as a
subprocess with an oracle arm and a bash arm whose model is the solution endpoint answering 20%
of requests with faults, the runner killed by SIGKILL mid-run and the same command run again
(``agentrig.bench.terminal.scripted.killed_run``): every planned trial is stored valid exactly once, every trial
is solved, the channel's retries are counted, and neither runner leaves a container, task image
or volume behind (the killed one's are reaped by the resumed run). Real Terminal-Bench tasks:
``perf/terminal_podman_acceptance.py`` (docs/terminal.md)."""

from __future__ import annotations

import pytest

from agentrig.bench.terminal.scripted.killed_run import killed_and_resumed, problems

from .podman_support import need_podman
from .run_support import BUILTIN_TASKS

pytestmark = pytest.mark.slow


def test_builtin_tasks_under_podman_with_faults_sigkill_and_resume(tmp_path):
    need_podman()
    report = killed_and_resumed(tmp_path, sandbox="podman", build_network="host-settings", trials=1,
                                concurrency=3, fault_rate=0.2, kill_after=4)
    planned = {f"{arm}/{t.id}#0" for arm in ("oracle", "bash") for t in BUILTIN_TASKS}
    assert problems(report, planned) == [], report
    left = report["left_at_kill"]
    assert left["containers"] and left["images"]  # the killed runner left a container and its task images …
    assert report["left_after"]["first_runner"] == {"containers": [], "images": []}  # … the resumed run reaped them
    assert report["retries"] > 0 and set(report["retry_causes"]) >= {"rate_limited", "server_error", "malformed"}
