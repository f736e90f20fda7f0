"""Issue 23.9: `tasks list --bench terminal` does not say "yes" for docker / podman on a machine
where that engine cannot be used (it said yes on every task, then that they cannot be used here)."""

from __future__ import annotations

import json

from agentrig.bench.terminal.tasks.taskfile import builtin_tasks_dir

from .run_support import agentrig


def test_a_sandbox_kind_whose_engine_is_missing_is_not_yes():
    tasks = str(builtin_tasks_dir())
    listing = agentrig("tasks", "list", "--bench", "terminal", "--tasks", tasks, "--json")
    assert listing.returncode == 0, listing.stderr
    doc = json.loads(listing.stdout)
    for row in doc["tasks"]:
        for kind, problem in doc["engines"].items():
            s = row["sandboxes"][kind]
            assert s["usable_here"] is (s["ok"] and problem is None), (row["id"], kind)
    human = agentrig("tasks", "list", "--bench", "terminal", "--tasks", tasks)
    broken = [k for k, p in doc["engines"].items() if p is not None]
    can = sum(row["sandboxes"][k]["ok"] for row in doc["tasks"] for k in broken)
    assert human.stdout.count("no engine here") == can, human.stdout
