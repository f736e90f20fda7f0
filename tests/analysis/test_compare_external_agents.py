"""agentrig compare's controlled-variable check when the agent is one we did not write (issue 35,
item 4): two arms that differ only in their plug-ins differ only there — whatever the agent's own
fields (version, config, args, run, mount…) — and a change of one of those fields is listed by its
name. On the snapshots a real experiment file gives (``run/snapshot.py``, as `agentrig run` stores
them); nothing is played."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentrig.analysis.config_diff import SideConfig, differences
from agentrig.run import experiment, snapshot

AGENTS = {
    "codex": '{ kind = "codex", version = "0.150.0", step_limit = 40, cost_limit = 2.5, '
             'config = { model_reasoning_effort = "high", "sandbox_workspace_write.network_access" = true }, '
             'args = ["--skip-git-repo-check"] }',
    "claude-code": '{ kind = "claude-code", token_limit = 90000, config = { cleanupPeriodDays = 1 } }',
    "mini-swe-agent": '{ kind = "mini-swe-agent", config = { "agent.step_limit" = 7 }, args = ["--cost-limit", "0"] }',
    "command": '{ kind = "command", mount = "mine", run = "python3 {tool}/agent.py {instruction}", step_limit = 30 }',
}
# one of each agent's own settings changed: (the arm's agent, the field that differs)
CHANGED = {
    "codex": (AGENTS["codex"].replace('"high"', '"low"'), "config"),
    "claude-code": (AGENTS["claude-code"].replace("90000", "50000"), "token_limit"),
    "mini-swe-agent": (AGENTS["mini-swe-agent"].replace('"0"]', '"1"]'), "args"),
    "command": (AGENTS["command"].replace("python3 ", "python3 -u "), "run"),
}
MEMORY = '[{ kind = "memory", mode = "selective", interval = 2 }]'


def sides(tmp_path: Path, agent: str, changed: str) -> dict[str, SideConfig]:
    (tmp_path / "mine").mkdir(exist_ok=True)
    text = f"""
name = "ext"
[benchmark]
kind = "terminal"
task_ids = ["merge-json-config", "fix-python-bug"]
[sandbox]
kind = "bwrap"
cache_dir = "{tmp_path / 'cache'}"
[run]
seed = 5
[channel]
base_url = "http://127.0.0.1:9/v1"
model = "m"
[[arms]]
name = "plain"
agent = {agent}
[[arms]]
name = "memory"
agent = {agent}
plugins = {MEMORY}
[[arms]]
name = "changed"
agent = {changed}
"""
    path = tmp_path / "ext.toml"
    path.write_text(text, encoding="utf-8")
    r = experiment.load(path, tmp_path / "run", prepare=False)
    config, comp = snapshot.config_snapshot(r, "ext-id"), snapshot.comparability(r)
    return {arm: SideConfig(label=f"ext:{arm}", arm=arm, config=config, comparability=comp)
            for arm in ("plain", "memory", "changed")}


@pytest.mark.parametrize("kind", list(AGENTS))
def test_arms_of_an_external_agent_that_differ_in_plugins_differ_only_there(tmp_path, kind):
    agent, (changed, field) = AGENTS[kind], CHANGED[kind]
    assert changed != agent
    s = sides(tmp_path, agent, changed)
    diffs = differences(s["plain"], s["memory"])
    assert {d.path: d.kind for d in diffs} == {"arm.plugins": "intended", "roles.memory": "intended"}, diffs
    plugins = next(d for d in diffs if d.path == "arm.plugins")
    assert plugins.a == [] and plugins.b[0]["kind"] == "memory" and plugins.b[0]["interval"] == 2
    # the agent's own settings are compared field by field: a changed one is named, as intended
    diffs = differences(s["plain"], s["changed"])
    assert {d.path: d.kind for d in diffs} == {f"arm.agent.{field}": "intended"}, diffs
    assert differences(s["plain"], s["plain"]) == []
