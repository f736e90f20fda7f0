"""The consistency-guidelines example files: they parse, follow the protocol (5 reruns, fixed seed,
temperature 0, top_p 1, one channel, held-out split), and — with a guidelines file in place —
resolve to arms whose only difference is the plug-in, recorded with the file's hash and source
tasks. Without the file, loading says which file is missing and how to make it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from agentrig.analysis.config_diff import SideConfig, differences
from agentrig.errors import ConfigError
from agentrig.plugins.guidelines.filemodel import file_sha
from agentrig.run.experiment import load, load_experiment
from agentrig.run.snapshot import comparability, config_snapshot

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
FILES = ["consistency_guidelines_source.toml", "consistency_guidelines.toml",
         "consistency_guidelines_terminal_source.toml", "consistency_guidelines_terminal.toml"]


@pytest.mark.parametrize("name", FILES)
def test_examples_follow_the_protocol(name):
    exp, _ = load_experiment(EXAMPLES / name)
    assert exp.run.trials == 5 and exp.run.seed == 1313
    agent = exp.roles["agent"]
    assert agent.temperature == 0.0 and agent.extra_body == {"top_p": 1.0}
    assert all(not arm.roles for arm in exp.arms)  # one channel: no arm overrides a role
    if "source" not in name:
        assert [a.name for a in exp.arms] == ["baseline", "guidelines"]
        assert [p.kind for p in exp.arms[1].plugins] == ["guidelines"] and exp.arms[0].plugins == []
    if exp.benchmark.kind == "tau2":
        assert exp.benchmark.split == ("train" if "source" in name else "test")


def test_terminal_examples_keep_source_and_held_out_tasks_apart():
    src, _ = load_experiment(EXAMPLES / FILES[2])
    ev, _ = load_experiment(EXAMPLES / FILES[3])
    assert set(src.benchmark.task_ids).isdisjoint(ev.benchmark.task_ids)


def test_the_guidelines_arm_differs_by_the_plugin_only(tmp_path, tau2_root):
    exp_file = tmp_path / "consistency_guidelines.toml"
    text = (EXAMPLES / FILES[1]).read_text().replace('split = "test"', f'split = "test"\ndata = "{tau2_root}"')
    exp_file.write_text(text)
    with pytest.raises(ConfigError, match=r"(?s)telecom-train.json not found.*agentrig guidelines derive"):
        load(exp_file, tmp_path / "run")
    (tmp_path / "guidelines").mkdir()
    gfile = tmp_path / "guidelines" / "telecom-train.json"
    gfile.write_text(json.dumps({"provenance": {"run_id": "src-1", "arm": "baseline", "split": "train",
                                                "source_tasks": ["telecom/x", "telecom/y"]},
                                 "guidelines": [{"id": "g1", "text": "Check the line before acting.",
                                                 "category": "strategy"}]}))
    r = load(exp_file, tmp_path / "run")
    comp = comparability(r)
    plug = comp["arms"]["guidelines"]["plugins"]
    assert plug == [{"kind": "guidelines", "select": "all", "top_k": 5, "window": 4, "file_sha": file_sha(gfile),
                     "guidelines": 1, "source_run": "src-1", "source_arm": "baseline", "source_split": "train",
                     "source_tasks": ["telecom/x", "telecom/y"]}]
    snap = config_snapshot(r, "run-1")
    diffs = differences(SideConfig("A", "baseline", snap, comp), SideConfig("B", "guidelines", snap, comp))
    assert [(d.path, d.kind) for d in diffs] == [("arm.plugins", "intended")]
    # the same file moved elsewhere: the same snapshot (its hash, not its path, is compared)
    moved = tmp_path / "elsewhere"
    moved.mkdir()
    shutil.copy(exp_file, moved / exp_file.name)
    shutil.copytree(tmp_path / "guidelines", moved / "guidelines")
    assert comparability(load(moved / exp_file.name, tmp_path / "run2"))["arms"] == comp["arms"]
