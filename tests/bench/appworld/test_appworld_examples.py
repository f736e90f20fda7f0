"""The AppWorld consistency example files: they parse and follow the protocol (5 runs per task,
temperature 0, top_p 1, one channel, guidelines from `train`, evaluated on the held-out
`test_normal`), and — on data in AppWorld's format, with a guidelines file in place — resolve to two
arms whose only difference is the plug-in."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentrig.analysis.config_diff import SideConfig, differences
from agentrig.errors import ConfigError
from agentrig.run.experiment import load, load_experiment
from agentrig.run.snapshot import comparability, config_snapshot

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
SOURCE, HELD_OUT = "appworld_consistency_source.toml", "appworld_consistency.toml"


@pytest.mark.parametrize("name", [SOURCE, HELD_OUT])
def test_the_examples_follow_the_protocol(name):
    exp, _ = load_experiment(EXAMPLES / name)
    assert exp.benchmark.kind == "appworld" and exp.run.trials == 5
    assert exp.benchmark.dataset == ("train" if name == SOURCE else "test_normal")
    agent = exp.roles["agent"]
    assert agent.model == "gpt-4.1" and agent.temperature == 0.0 and agent.extra_body == {"top_p": 1.0}
    assert all(not arm.roles for arm in exp.arms) and all(a.agent.kind == "llm" for a in exp.arms)
    if name == HELD_OUT:
        assert [a.name for a in exp.arms] == ["baseline", "guidelines"]
        assert [p.kind for p in exp.arms[1].plugins] == ["guidelines"] and exp.arms[0].plugins == []
        assert exp.arms[0].agent == exp.arms[1].agent


def test_the_guidelines_arm_differs_by_the_plugin_only(tmp_path, synthetic_root, appworld_python):
    text = (EXAMPLES / HELD_OUT).read_text().replace(
        '# data = "~/appworld"', f'data = "{synthetic_root}"\npython = "{appworld_python}"')
    exp_file = tmp_path / HELD_OUT
    exp_file.write_text(text)
    with pytest.raises(ConfigError, match=r"(?s)appworld-train.json not found.*agentrig guidelines derive"):
        load(exp_file, tmp_path / "run")
    (tmp_path / "guidelines").mkdir()
    (tmp_path / "guidelines" / "appworld-train.json").write_text(json.dumps({
        "provenance": {"run_id": "src-1", "arm": "baseline", "split": "train", "source_tasks": ["appworld/5a1c0de_1"]},
        "guidelines": [{"id": "g1", "text": "Read an API's doc before its first call.", "category": "strategy"}]}))
    r = load(exp_file, tmp_path / "run")
    assert [t.id for _, t in r.tasks] == ["5a1c0de_2", "8d4f3ab_1"]
    comp = comparability(r)
    snap = config_snapshot(r, "run-1")
    diffs = differences(SideConfig("A", "baseline", snap, comp), SideConfig("B", "guidelines", snap, comp))
    assert [(d.path, d.kind) for d in diffs] == [("arm.plugins", "intended")]
