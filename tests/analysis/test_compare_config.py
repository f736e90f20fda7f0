"""agentrig compare: the controlled-variable check, on snapshots of real experiments and real runs."""

from __future__ import annotations

import copy
import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from agentrig.commands.compare import compare_command
from agentrig.analysis.config_diff import SideConfig, differences
from agentrig.run import experiment, snapshot
from agentrig.commands.run import run_command
from agentrig.store.store import Store
from agentrig.testing.fake_endpoint import ThreadedFakeEndpoint
from agentrig.bench.tau.scripted.gold_endpoint import GoldEndpoint

KEY_ENV = "AGENTRIG_COMPARE_TEST_KEY"

LLM = """\
name = "{name}"
[benchmark]
domains = ["bikeshop"]
num_tasks = {num_tasks}
[run]
trials = {trials}
seed = {seed}
max_steps = {max_steps}
concurrency = {concurrency}
[user]
kind = "scripted"
[judge]
nl_assertions = "never"
[channel]
base_url = "{base_url}"
api_key_env = "{key_env}"
model = "m-base"
{channel_extra}
[roles.agent]
temperature = {temperature}
[[arms]]
name = "base"
agent = {{ kind = "llm" }}
[[arms]]
name = "cand"
agent = {{ kind = "llm"{cand_agent} }}
roles.agent = {{ model = "m-cand", base_url = "http://127.0.0.1:9/v2" }}
"""
DEFAULTS = dict(num_tasks=3, trials=2, seed=1, max_steps=200, concurrency=4, base_url="http://127.0.0.1:9/v1",
                key_env=KEY_ENV, channel_extra="", temperature=0.0, cand_agent="")


def side(tmp_path: Path, arm: str, name: str = "x", **over) -> SideConfig:
    """The snapshots `agentrig run` would store for this experiment (nothing is played)."""
    path = tmp_path / f"{name}.toml"
    path.write_text(LLM.format(name=name, **(DEFAULTS | over)), encoding="utf-8")
    r = experiment.load(path, tmp_path / name)
    return SideConfig(label=f"{name}:{arm}", arm=arm, config=snapshot.config_snapshot(r, f"{name}-id"),
                      comparability=snapshot.comparability(r))


def kinds(diffs) -> dict[str, str]:
    return {d.path: d.kind for d in diffs}


def test_same_run_two_arms_only_intended(tmp_path: Path):
    base, cand = side(tmp_path, "base"), side(tmp_path, "cand")
    diffs = differences(base, cand)
    assert kinds(diffs) == {"roles.agent.model": "intended", "roles.agent.base_url": "intended"}
    model = next(d for d in diffs if d.path == "roles.agent.model")
    assert (model.a, model.b) == ("m-base", "m-cand")
    assert differences(base, side(tmp_path, "base", name="y")) == []  # another run, same settings


def test_settings_outside_the_arm_tables_are_mismatches(tmp_path: Path):
    base = side(tmp_path, "base")
    other = side(tmp_path, "base", name="y", temperature=0.7, trials=3, max_steps=50,
                 base_url="http://127.0.0.1:9/other")
    assert kinds(differences(base, other)) == {
        "roles.agent.temperature": "mismatch", "run.trials": "mismatch", "limits.max_steps": "mismatch",
        "roles.agent.base_url": "mismatch"}
    # the cand arm overrides base_url itself: its endpoint change stays intended, the rest does not
    cand_other = side(tmp_path, "cand", name="z", temperature=0.7, base_url="http://127.0.0.1:9/other")
    assert kinds(differences(side(tmp_path, "cand"), cand_other)) == {"roles.agent.temperature": "mismatch"}
    assert kinds(differences(base, cand_other)) == {"roles.agent.model": "intended", "roles.agent.base_url": "intended",
                                                    "roles.agent.temperature": "mismatch"}


def test_seed_and_execution_settings_are_informational(tmp_path: Path):
    base = side(tmp_path, "base")
    other = side(tmp_path, "base", name="y", seed=2, concurrency=16,
                 channel_extra="timeout_s = 9\nmax_attempts = 2")
    assert kinds(differences(base, other)) == {
        "run.seed": "info", "run.concurrency": "info", "roles.agent.timeout_s": "info",
        "roles.agent.max_attempts": "info"}


def test_header_names_compared_values_not(tmp_path: Path):
    base = side(tmp_path, "base", channel_extra='headers = { "X-Team" = "red" }')
    same_name = side(tmp_path, "base", name="y", channel_extra='headers = { "X-Team" = "blue" }')
    assert differences(base, same_name) == []
    renamed = side(tmp_path, "base", name="z",
                   channel_extra='headers = { "X-Team" = "red" }\nheaders_from_env = { "X-Route" = "ROUTE_VAR" }')
    diffs = differences(base, renamed)
    assert kinds(diffs) == {"roles.agent.headers": "mismatch"}
    assert (diffs[0].a, diffs[0].b) == (["X-Team"], ["X-Route", "X-Team"])


def test_prompt_file_is_the_arms_change_but_a_changed_builtin_prompt_is_not(tmp_path: Path):
    (tmp_path / "p.txt").write_text("Be brief.", encoding="utf-8")
    cand = side(tmp_path, "cand", cand_agent=', prompt = "p.txt"')
    diffs = kinds(differences(side(tmp_path, "base"), cand))
    assert diffs["arm.agent.prompt"] == "intended" and diffs["arm.prompt_sha"] == "intended"
    # the same file name, new content, in a second run: still the arm's own prompt
    (tmp_path / "p.txt").write_text("Be very brief.", encoding="utf-8")
    cand2 = side(tmp_path, "cand", name="y", cand_agent=', prompt = "p.txt"')
    assert kinds(differences(cand, cand2)) == {"arm.prompt_sha": "intended"}
    # the built-in prompt changed under the same settings (another agentrig): a mismatch
    base = side(tmp_path, "base")
    newer = copy.deepcopy(base.comparability)
    newer["arms"]["base"]["prompt_sha"] = "0" * 24
    assert kinds(differences(base, SideConfig("n:base", "base", base.config, newer))) == {"arm.prompt_sha": "mismatch"}


def test_data_versions_plugins_and_missing_snapshots(tmp_path: Path):
    base = side(tmp_path, "base")
    comp = copy.deepcopy(base.comparability)
    task = next(iter(comp["tasks"]))
    comp["tasks"][task] = "f" * 24
    comp["tasks"]["bikeshop/only_here"] = "e" * 24  # played on one side only: no difference
    comp["domains"]["bikeshop"]["db"]["db.json"] = "d" * 24
    comp["domains"]["bikeshop"]["policies"]["default"] = "c" * 24
    got = kinds(differences(base, SideConfig("d:base", "base", base.config, comp)))
    assert got == {f"data.tasks.{task}": "mismatch", "data.bikeshop.db.db.json": "mismatch",
                   "data.bikeshop.policy": "mismatch"}
    # a plug-in (and the memory role it calls) is the arm's change; a memory role alone is not
    plug = copy.deepcopy(base.comparability)
    plug["arms"]["base"]["plugins"] = [{"kind": "memory", "budget": 3}]
    plug["arms"]["base"]["roles"]["memory"] = dict(plug["arms"]["base"]["roles"]["agent"])
    assert kinds(differences(base, SideConfig("p:base", "base", base.config, plug))) == {
        "arm.plugins": "intended", "roles.memory": "intended"}
    del plug["arms"]["base"]["plugins"][0]
    assert kinds(differences(base, SideConfig("p:base", "base", base.config, plug))) == {"roles.memory": "mismatch"}
    old = differences(base, SideConfig("o:base", "base", base.config, None))
    assert [(d.path, d.a, d.b, d.kind) for d in old][:1] == [("snapshot.comparability", "stored", "missing", "mismatch")]


# --------------------------------------------------------------------------------- real runs


SCRIPTED = """\
name = "{name}"
[benchmark]
domains = ["bikeshop"]
[run]
trials = 4
seed = 2026
concurrency = 8
[user]
kind = "scripted"
[judge]
nl_assertions = "never"
[[arms]]
name = "gold"
agent = {{ kind = "gold" }}
[[arms]]
name = "noop"
agent = {{ kind = "noop" }}
"""

LLM_USER = """\
name = "{name}"
[benchmark]
domains = ["bikeshop"]
[run]
trials = 1
seed = 5
concurrency = 8
[user]
kind = "llm"
guidelines = "builtin"
[judge]
nl_assertions = "never"
[channel]
base_url = "{base_url}"
api_key_env = "{key_env}"
max_attempts = 2
[roles.user]
model = "{user_model}"
[[arms]]
name = "gold"
agent = {{ kind = "gold" }}
"""


def compare(a: str, b: str, *, as_json: bool = True, **kw):
    buf = io.StringIO()
    kw.setdefault("fail_if_worse", True)
    kw.setdefault("allow_mismatch", False)
    code = compare_command(a, b, as_json=as_json, out=Console(file=buf, width=200), **kw)
    return code, (json.loads(buf.getvalue()) if as_json else buf.getvalue())


def test_real_run_gold_vs_noop_is_significantly_worse(tmp_path: Path):
    exp = tmp_path / "ab.toml"
    exp.write_text(SCRIPTED.format(name="ab"), encoding="utf-8")
    run_dir = tmp_path / "ab"
    assert run_command(exp, run_dir=run_dir, as_json=True, out=Console(file=io.StringIO())) == 0
    # the hand figures, straight from the store
    with Store.open(run_dir / "trials.sqlite", create=False) as store:
        rows = store.verdict_rows(valid=True)
    noop_fails = {r.task_id for r in rows if r.arm == "noop" and r.reward < 1}
    assert all(r.reward == 1 for r in rows if r.arm == "gold") and 10 <= len(noop_fails) < 16

    code, out = compare(f"{run_dir}:gold", f"{run_dir}:noop")
    assert code == 1
    assert [(d["path"], d["kind"]) for d in out["config"]["differences"]] == [("arm.agent.kind", "intended")]
    assert out["comparable"] and out["mismatch"] == []
    p1 = out["metrics"]["pass^1"]
    assert p1["delta"] == pytest.approx(-len(noop_fails) / 16) and p1["significance"] == "worse"
    assert out["metrics"]["pass^k"]["name"] == "pass^4" and out["metrics"]["pass^k"]["significance"] == "worse"
    assert {f["task_id"] for f in out["flips"]["worse"]} == noop_fails and out["flips"]["better"] == []
    assert out["mcnemar"]["p"] == pytest.approx(2 / 2 ** len(noop_fails))
    assert out["gate"]["tripped"] and "significantly worse" in out["gate"]["reason"]
    code, text = compare(f"{run_dir}:noop", f"{run_dir}:gold", as_json=False)
    assert code == 0 and "significantly better" in text and "gate: pass" in text


def test_real_runs_differing_in_the_user_model(tmp_path: Path, monkeypatch):
    key = "sk-compare-test-0123456789"
    monkeypatch.setenv(KEY_ENV, key)
    dirs = {}
    with ThreadedFakeEndpoint(endpoint=GoldEndpoint(None, api_key=key)) as served:
        for model in ("gold", "gold-user"):
            exp = tmp_path / f"u-{model}.toml"
            exp.write_text(LLM_USER.format(name=f"u-{model}", base_url=served.base_url, key_env=KEY_ENV,
                                           user_model=model), encoding="utf-8")
            dirs[model] = tmp_path / f"u-{model}"
            assert run_command(exp, run_dir=dirs[model], as_json=True, out=Console(file=io.StringIO())) == 0
    a, b = str(dirs["gold"]), str(dirs["gold-user"])

    code, out = compare(a, b)  # refused: the gate fails with the reason
    assert code == 1 and not out["comparable"]
    assert out["mismatch"] == ["roles.user.model: gold → gold-user"]
    assert out["metrics"]["pass^1"]["significance"] is None
    assert out["verdict"].startswith("not comparable") and "--allow-mismatch" in out["gate"]["reason"]
    code, out = compare(a, b, fail_if_worse=False)  # a report: exit 0, still not comparable
    assert code == 0 and out["verdict"].startswith("not comparable")

    code, out = compare(a, b, allow_mismatch=True)  # allowed: computed, and flagged
    assert code == 0 and out["allow_mismatch"] and out["mismatch"] == ["roles.user.model: gold → gold-user"]
    assert out["metrics"]["pass^1"]["significance"] == "none" and "despite 1 configuration mismatch" in out["verdict"]
    code, text = compare(a, b, allow_mismatch=True, as_json=False)
    assert text.splitlines()[0].startswith("!! MISMATCH ALLOWED")
    assert "MISMATCH roles.user.model: gold → gold-user" in " ".join(text.split())
