"""The local sandbox through `agentrig run`: the built-in tasks run unchanged (their absolute paths
are the trial's own directories, through private mounts), the oracle passes every task it plays,
the noop fails every task not designed lenient, and tasks whose Dockerfile has RUN steps (never
run on the host) are excluded with the reason, never played.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agentrig.bench.terminal.sandbox import build_plan

from .run_support import BUILTIN_TASKS, LENIENT, experiment, records, run_json

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the local sandbox's private mounts need root")

ARMS = """
[[arms]]
name = "oracle"
agent = { kind = "oracle" }
[[arms]]
name = "noop"
agent = { kind = "noop" }
"""


def test_builtin_tasks_under_the_local_sandbox(tmp_path):
    path = experiment(tmp_path, "local", ARMS, cache=tmp_path / "cache", sandbox='kind = "local"')
    doc = run_json(path)
    with_run = {t.id for t in BUILTIN_TASKS if any(s.op == "RUN" for s in build_plan(t).steps)}
    assert {k.split("/", 1)[1] for k in doc["excluded"]} == with_run
    assert all("RUN steps" in why for why in doc["excluded"].values())
    played = {t.id for t in BUILTIN_TASKS} - with_run
    assert len(played) >= 10
    oracle = records(doc["run_dir"], arm="oracle")
    assert {r.key.task_id for r in oracle} == played
    assert [r.key.task_id for r in oracle if r.verdict.reward != 1.0] == []
    noop = records(doc["run_dir"], arm="noop")
    assert {r.key.task_id for r in noop if r.verdict.reward == 1.0} == LENIENT & played
    assert all(r.verdict.valid for r in oracle + noop)
    # the trials' files stayed in their own directories: the host's mount points are empty
    for top in ("app", "tests", "logs", "oracle", "solution"):
        host = Path("/", top)
        assert not host.is_dir() or not any(host.iterdir()), top
