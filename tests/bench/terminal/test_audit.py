"""`agentrig audit --bench terminal` and `agentrig doctor --sandbox` (subprocesses, real sandboxes).

The audit of the built-in tasks reports exactly what the tasks are: every task ok (the oracle
passes, the noop fails) except the one lenient by design. On tasks written here it tells a broken
task (its solution does not pass), a lenient one (doing nothing passes), and one the sandbox cannot
run (excluded, with the reason) apart.
"""

from __future__ import annotations

import json
import shutil

from .run_support import LENIENT, agentrig, write_task
from .sandbox_support import needs_root_bwrap

pytestmark = needs_root_bwrap()


def test_audit_of_the_builtin_tasks(tmp_path):
    proc = agentrig("audit", "--bench", "terminal", "--cache-dir", tmp_path / "cache", "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    status = {t["task_id"]: t["status"] for t in doc["tasks"]}
    assert len(status) >= 12
    assert {t for t, s in status.items() if s == "lenient"} == LENIENT == {"read-only-tour"}
    assert {t for t, s in status.items() if s != "lenient"} == {t for t, s in status.items() if s == "ok"}
    for t in doc["tasks"]:
        assert t["oracle"]["reward"] == 1.0 and t["oracle"]["termination"] == "submitted"
        assert t["noop"]["reward"] == (1.0 if t["task_id"] in LENIENT else 0.0)
    assert doc["summary"] == {"ok": len(status) - 1, "broken": 0, "lenient": 1, "excluded": 0, "invalid": 0, "error": 0,
                              "base_substituted": 0, "timeout": 0}


def test_audit_tells_broken_lenient_and_excluded_tasks_apart(tmp_path):
    tasks = tmp_path / "tasks"
    write_task(tasks, "good")
    write_task(tasks, "wrong-solution", solution="#!/bin/bash\necho nope > /app/out.txt\n")
    write_task(tasks, "lenient", test="def test_nothing():\n    assert True\n")
    write_task(tasks, "needs-image", dockerfile="FROM node:20-alpine AS build\nFROM ubuntu:24.04\nWORKDIR /app\n")
    write_task(tasks, "stand-in-build", dockerfile="FROM ubuntu:24.04\nWORKDIR /app\nRUN exit 3\n")
    proc = agentrig("audit", "--bench", "terminal", "--tasks", tasks, "--cache-dir", tmp_path / "cache", "--json")
    assert proc.returncode == 0, proc.stderr
    rows = {t["task_id"]: t for t in json.loads(proc.stdout)["tasks"]}
    assert {k: v["status"] for k, v in rows.items()} == {
        "good": "ok", "wrong-solution": "broken", "lenient": "lenient", "needs-image": "excluded",
        "stand-in-build": "base_substituted"}
    assert "Debian bookworm stands in for Ubuntu 24.04" in rows["stand-in-build"]["reason"]
    assert "Ubuntu 24.04" in rows["wrong-solution"]["reason"]
    assert rows["lenient"]["reason"] == ("an agent that does nothing passes the tests on a stand-in base: "
                                         "Debian bookworm stands in for Ubuntu 24.04")
    assert "wrong_output" in rows["wrong-solution"]["reason"]
    assert rows["wrong-solution"]["reason"].endswith("; failed: test_out")  # the tests that did not pass, named
    assert rows["wrong-solution"]["oracle"]["failed_tests"] == ["test_out"]
    assert rows["needs-image"]["reason"].startswith("needs_container")
    table = agentrig("audit", "--bench", "terminal", "--tasks", tasks, "--task-ids", "good,lenient",
                     "--cache-dir", tmp_path / "cache")
    assert table.returncode == 0, table.stderr
    assert "LENIENT" in table.stdout and "good" in table.stdout and "wrong-solution" not in table.stdout


def test_doctor_sandbox(tmp_path):
    proc = agentrig("doctor", "--sandbox", "bwrap", "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads(proc.stdout)
    checks = {c["check"]: c["ok"] for c in doc["kinds"]["bwrap"]["checks"]}
    assert doc["ok"] is True and checks["binary"] and checks["start"]
    proc = agentrig("doctor", "--sandbox")
    assert proc.returncode == 0
    for kind in ("bwrap", "docker", "podman", "local"):
        assert f"{kind}: " in proc.stdout
    podman = agentrig("doctor", "--sandbox", "podman", "--json")
    works = json.loads(podman.stdout)["kinds"]["podman"]["works"]
    assert podman.returncode == (0 if works else 1)
    if shutil.which("podman") is None:
        assert works is False and "no podman client" in podman.stdout
    bad = agentrig("doctor", "--sandbox", "vm")
    assert bad.returncode == 1 and "unknown sandbox kind" in bad.stderr and "Traceback" not in bad.stderr


def test_tasks_show(tmp_path):
    proc = agentrig("tasks", "show", "--bench", "terminal", "shell-session-state")
    assert proc.returncode == 0, proc.stderr
    assert "tests run in the agent's shell" in proc.stdout and "solution.yaml, 4 step(s)" in proc.stdout
    proc = agentrig("tasks", "show", "--bench", "terminal", "no-such-task")
    assert proc.returncode == 1 and "no task named" in proc.stderr and "Traceback" not in proc.stderr


def test_audit_has_a_per_task_time_limit_and_prints_each_task_as_it_goes(tmp_path):
    # a solution that would run for minutes is cut at the limit: the task is `timeout`, naming the
    # phase, and the other task's line is printed as soon as it is known (never a silent hang)
    tasks = tmp_path / "tasks"
    write_task(tasks, "good")
    write_task(tasks, "slow", solution="#!/bin/bash\nsleep 600\necho ok > /app/out.txt\n", agent_timeout=900)
    proc = agentrig("audit", "--bench", "terminal", "--tasks", tasks, "--cache-dir", tmp_path / "cache",
                    "--task-timeout", "8", "--concurrency", "2", "--json", timeout=120)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    rows = {t["task_id"]: t for t in doc["tasks"]}
    assert rows["good"]["status"] == "ok"
    assert rows["slow"]["status"] == "timeout"
    assert "time limit (8 s per task)" in rows["slow"]["reason"] and "the oracle's trial" in rows["slow"]["reason"]
    assert doc["summary"]["timeout"] == 1 and doc["summary"]["ok"] == 1
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("[")]
    assert len(lines) == 2 and lines[0].startswith("[1/2] ok") and " good " in lines[0]  # the quick one first
    assert lines[1].startswith("[2/2] timeout") and " slow " in lines[1]
