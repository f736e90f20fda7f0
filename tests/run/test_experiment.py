"""The experiment TOML: parsing, validation errors, task selection, role checks."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from agentrig.errors import ConfigError, DataError
from agentrig.run import experiment

BASE = """
[benchmark]
domains = ["bikeshop"]
[user]
kind = "scripted"
[judge]
nl_assertions = "never"
"""
GOLD_ARM = """
[[arms]]
name = "gold"
agent = { kind = "gold" }
"""


def write(tmp_path: Path, text: str, name: str = "exp.toml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def error_of(path: Path, exc=ConfigError) -> str:
    with pytest.raises(exc) as info:
        experiment.load(path)
    return str(info.value)


def test_minimal_experiment_resolves_with_defaults(tmp_path, monkeypatch):
    monkeypatch.delenv("AGENTRIG_TAU2_DATA", raising=False)
    r = experiment.load(write(tmp_path, BASE + GOLD_ARM, "my-exp.toml"))
    assert r.name == "my-exp"  # the file's stem
    assert r.run_dir == tmp_path / "runs" / "my-exp"
    assert r.data_root is None  # bikeshop is built in
    assert r.splits == {"bikeshop": "base"}  # tau2's default split when the domain has one
    assert len(r.tasks) == 16 and all(d == "bikeshop" for d, _ in r.tasks)
    run = r.exp.run
    assert (run.trials, run.seed, run.max_steps, run.max_errors, run.max_invalid_retries, run.send_seed) == \
        (1, 300, 200, 10, 3, True)
    assert r.arms[0].roles_needed == []  # gold agent + scripted user + no judge: no model at all


def test_split_task_ids_and_num_tasks(tmp_path):
    r = experiment.load(write(tmp_path, BASE.replace('["bikeshop"]', '["bikeshop"]\nsplit = "train"') + GOLD_ARM))
    assert len(r.tasks) == 10
    r = experiment.load(write(tmp_path, BASE.replace('["bikeshop"]', '["bikeshop"]\nsplit = "all"\nnum_tasks = 3')
                              + GOLD_ARM))
    assert [t.id for _, t in r.tasks] == ["rent_city_bike", "cancel_ebike_full_refund", "cancel_late_fee_no_waiver"]
    r = experiment.load(write(tmp_path, BASE.replace('["bikeshop"]', '"bikeshop"\ntask_ids = ["refuse_ebike_minor"]')
                              + GOLD_ARM))
    assert [t.id for _, t in r.tasks] == ["refuse_ebike_minor"]


def test_unknown_top_level_and_nested_keys_name_file_and_field(tmp_path):
    path = write(tmp_path, BASE + GOLD_ARM + "\n[run]\ntrails = 3\n")
    msg = error_of(path)
    assert str(path) in msg and "run.trails" in msg and "unknown setting" in msg and "'trials'" in msg
    msg = error_of(write(tmp_path, "colour = 1\n" + BASE + GOLD_ARM))
    assert "colour: unknown setting" in msg


def test_unknown_arm_field_names_the_arm(tmp_path):
    msg = error_of(write(tmp_path, BASE + GOLD_ARM + '[[arms]]\nname = "b"\nmodle = "x"\n'))
    assert "arms[1] (arm 'b').modle: unknown setting" in msg
    msg = error_of(write(tmp_path, BASE + '[[arms]]\nname = "a"\nagent = { kind = "gold", tool_mod = "text" }\n'))
    assert "arms[0] (arm 'a').agent.tool_mod" in msg and "'tool_mode'" in msg
    msg = error_of(write(tmp_path, BASE + '[[arms]]\nname = "a"\nroles.agent = { modell = "m" }\n'))
    assert "arms[0] (arm 'a').roles.agent.modell" in msg and "'model'" in msg
    msg = error_of(write(tmp_path, BASE + '[[arms]]\nname = "a"\nagent = { kind = "genius" }\n'))
    assert "agent.kind" in msg and "gold" in msg


def test_duplicate_and_unsafe_arm_names(tmp_path):
    msg = error_of(write(tmp_path, BASE + GOLD_ARM + GOLD_ARM))
    assert "two [[arms]] are named 'gold'" in msg
    msg = error_of(write(tmp_path, BASE + '[[arms]]\nname = "../x"\n'))
    assert "not usable in paths" in msg
    msg = error_of(write(tmp_path, BASE))
    assert "arms: required" in msg
    msg = error_of(write(tmp_path, BASE + '[arms]\nname = "a"\n'))
    assert "[[arms]]" in msg


def test_nl_assertion_task_without_judge_model_is_refused_up_front(tmp_path):
    text = BASE.replace('nl_assertions = "never"', 'nl_assertions = "auto"') + GOLD_ARM
    msg = error_of(write(tmp_path, text))
    assert "arm 'gold'" in msg and "judge role has no model" in msg
    assert "bikeshop/refuse_ebike_minor" in msg and "[roles.judge]" in msg and 'nl_assertions = "never"' in msg
    # fine once the judge has a model, or when NL assertions are not judged, or no NL task is selected
    r = experiment.load(write(tmp_path, text + '[roles.judge]\nmodel = "judge-model"\n'))
    assert r.arms[0].roles_needed == ["judge"]
    r = experiment.load(write(tmp_path, text.replace('"bikeshop"]', '"bikeshop"]\nsplit = "test"')))
    assert r.arms[0].roles_needed == []


def test_llm_roles_without_a_model(tmp_path):
    msg = error_of(write(tmp_path, BASE + '[[arms]]\nname = "llm"\n'))
    assert "arm 'llm'" in msg and "agent role has no model" in msg and "[roles.agent]" in msg
    msg = error_of(write(tmp_path, BASE.replace('kind = "scripted"', 'kind = "llm"') + GOLD_ARM))
    assert "user role has no model" in msg and '"scripted"' in msg


def test_arm_role_overrides_merge_over_experiment_roles(tmp_path):
    text = BASE + """
[channel]
base_url = "http://127.0.0.1:9/v1"
api_key_env = "SOME_KEY"
extra_body = { a = 1 }
[roles.agent]
model = "base-model"
temperature = 0.0
[[arms]]
name = "a"
[[arms]]
name = "b"
[arms.roles.agent]
model = "other-model"
extra_body = { b = 2 }
"""
    r = experiment.load(write(tmp_path, text))
    a, b = (arm.channel.resolve("agent") for arm in r.arms)
    assert (a.model, a.temperature, a.extra_body) == ("base-model", 0.0, {"a": 1})
    assert (b.model, b.temperature, b.extra_body) == ("other-model", 0.0, {"a": 1, "b": 2})
    assert r.arms[1].roles_needed == ["agent"]


def test_unknown_domain_split_task_and_plugin(tmp_path):
    msg = error_of(write(tmp_path, BASE.replace('"bikeshop"]', '"bikeshop", "bikeshopp"]') + GOLD_ARM))
    assert "unknown domain 'bikeshopp'" in msg
    msg = error_of(write(tmp_path, BASE.replace('"bikeshop"]', '"bikeshop"]\nsplit = "tset"') + GOLD_ARM), DataError)
    assert "unknown split 'tset'" in msg and "test" in msg
    msg = error_of(write(tmp_path, BASE.replace('"bikeshop"]', '"bikeshop"]\ntask_ids = ["nope"]') + GOLD_ARM),
                   DataError)
    assert "'nope'" in msg
    msg = error_of(write(tmp_path, BASE + GOLD_ARM.replace('}', '}\nplugins = [{ kind = "telepathy" }]')))
    assert "unknown plug-in kind 'telepathy'" in msg


def test_paths_are_relative_to_the_toml(tmp_path, tau2_root):
    sub = tmp_path / "exps"
    sub.mkdir()
    (sub / "preamble.txt").write_text("You are a careful agent.\n")
    rel = os.path.relpath(tau2_root, sub)
    text = f"""
name = "rel"
[benchmark]
data = "{rel}"
domains = ["mock"]
[user]
kind = "scripted"
[run]
dir = "out/here"
[roles.agent]
model = "m"
[[arms]]
name = "a"
agent = {{ prompt = "preamble.txt" }}
"""
    r = experiment.load(write(sub, text))
    assert r.data_root == tau2_root
    assert r.run_dir == sub / "out" / "here"
    assert r.arms[0].agent.prompt == str(sub / "preamble.txt")
    (sub / "preamble.txt").unlink()
    assert "agent.prompt file" in error_of(sub / "exp.toml")


def test_task_ids_list_needs_one_domain(tmp_path, tau2_root):
    text = f"""
[benchmark]
data = "{tau2_root}"
domains = ["mock", "bikeshop"]
task_ids = ["x"]
[user]
kind = "scripted"
""" + GOLD_ARM
    assert "task_ids = { airline" in error_of(write(tmp_path, text))
    r = experiment.load(write(tmp_path, text.replace('task_ids = ["x"]', 'task_ids = { bikeshop = ["rent_city_bike"] }')))
    assert [(d, t.id) for d, t in r.tasks if d == "bikeshop"] == [("bikeshop", "rent_city_bike")]
    assert len([1 for d, _ in r.tasks if d == "mock"]) == 10


@pytest.mark.parametrize("name", ["airline.toml", "ab_airline.toml"])
def test_shipped_examples_load(name, monkeypatch, tau2_root):
    monkeypatch.setenv("AGENTRIG_TAU2_DATA", str(tau2_root))
    r = experiment.load(Path(__file__).resolve().parents[2] / "examples" / name)
    assert r.tasks and all(d == "airline" for d, _ in r.tasks)
    assert all(a.roles_needed == ["agent", "user"] for a in r.arms)
    if name == "ab_airline.toml":
        models = [a.channel.resolve("agent").model for a in r.arms]
        temps = [a.channel.resolve("agent").temperature for a in r.arms]
        assert models == ["gpt-4.1", "gpt-4.1-mini"] and temps == [0.0, 0.0]
