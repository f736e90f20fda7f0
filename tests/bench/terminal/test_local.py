"""The local sandbox through `agentrig run`: the built-in tasks run unchanged (their absolute paths
are the trial's own directories, through private mounts), including the ones whose Dockerfile has
RUN steps (played once per task in those private mounts, into a cached template each trial copies):
the oracle passes every built-in task, the noop fails every task not designed lenient, and the
host's mount points stay empty.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agentrig.bench.terminal.sandbox import build_plan
from agentrig.bench.terminal.sandbox.localbuild import needs_template

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
    assert doc.get("excluded", {}) == {}  # no task left out
    with_run = {t.id for t in BUILTIN_TASKS if any(s.op == "RUN" for s in build_plan(t).steps)}
    assert len(with_run) >= 4  # tasks whose Dockerfile builds something: played, not excluded
    every = {t.id for t in BUILTIN_TASKS}
    assert len(every) >= 15
    oracle = records(doc["run_dir"], arm="oracle")
    assert {r.key.task_id for r in oracle} == every
    assert [r.key.task_id for r in oracle if r.verdict.reward != 1.0] == []
    noop = records(doc["run_dir"], arm="noop")
    assert {r.key.task_id for r in noop} == every
    assert {r.key.task_id for r in noop if r.verdict.reward == 1.0} == LENIENT
    assert LENIENT and not LENIENT & with_run
    assert all(r.verdict.valid for r in oracle + noop)
    # each task with Dockerfile steps was built once (two trials each), into one cached template
    built = [t for t in BUILTIN_TASKS if needs_template(build_plan(t))]
    assert with_run <= {t.id for t in built}
    contents = {(build_plan(t).content_hash(t.build_context), build_plan(t).workdir) for t in built}
    assert len([p for p in (tmp_path / "cache" / "local").iterdir() if p.is_dir()]) == len(contents)
    # the trials' files stayed in their own directories: the host's mount points are empty
    for top in ("app", "tests", "logs", "oracle", "solution"):
        host = Path("/", top)
        assert not host.is_dir() or not any(host.iterdir()), top
