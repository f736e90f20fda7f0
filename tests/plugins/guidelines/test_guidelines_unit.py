"""The guidelines file, the plug-in and the value-leak check, without a run.

- a file is validated field by field: a hand-broken file is ONE message naming the field (and
  `agentrig guidelines show` exits 1 with it, no traceback); `show` renders a good one;
- the plug-in's settings are checked with a message naming the setting; `select = "all"` puts
  every guideline in a system message of each agent call, `bm25` the ones sharing terms with the
  current step's context (the memory plug-in's BM25 index), nothing when none does;
- the value-leak check finds a task's id, amount and name in a guideline (whole tokens, any case)
  and does not flag a longer id that merely contains one; the benchmarks' `task_values` give
  those values for τ² and terminal tasks;
- the analyst's reply is read fenced or bare, and a reply without the JSON is None.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentrig.plugins.guidelines.derive import leaked_values, parse_reply
from agentrig.benchmark import get_benchmark, literal_values
from agentrig.errors import ConfigError
from agentrig.plugins import build_plugin
from agentrig.plugins.base import PluginSettings
from agentrig.plugins.guidelines import factory
from agentrig.plugins.guidelines.filemodel import GuidelinesFile, load, markdown, write
from agentrig.trial.context import TrialContext
from agentrig.types import Message, TrialKey

AGENTRIG = str(Path(sys.executable).with_name("agentrig"))

GOOD = {
    "format": "agentrig.guidelines/1",
    "provenance": {"run_id": "r-1", "arm": "baseline", "split": "train", "benchmark": "tau2",
                   "source_tasks": ["bikeshop/rent_city_bike"]},
    "guidelines": [
        {"id": "g1", "text": "Look the customer up by e-mail before any booking.", "rationale": "forks at the lookup",
         "category": "strategy", "trigger": "a booking request", "sources": [
             {"task": "bikeshop/rent_city_bike", "trial": 2, "step": 1, "kind": "unstable_step"}]},
        {"id": "g2", "text": "After a failed refund, report the error and stop.", "rationale": "",
         "category": "recovery", "trigger": "a refund tool returns an error"},
    ],
}


def _file(tmp_path: Path, data: object, name: str = "g.json") -> Path:
    p = tmp_path / name
    p.write_text(data if isinstance(data, str) else json.dumps(data, indent=2))
    return p


def _agentrig(*args: object) -> subprocess.CompletedProcess:
    return subprocess.run([AGENTRIG, *map(str, args)], capture_output=True, text=True,
                          env={**os.environ, "COLUMNS": "200"}, timeout=120)


@pytest.mark.parametrize("edit, field", [
    (lambda d: d["guidelines"][1].update(category="tactic"), "guidelines[1].category"),
    (lambda d: d["guidelines"][0].pop("text"), "guidelines[0].text"),
    (lambda d: d["guidelines"][0].update(colour="red"), "guidelines[0].colour"),
    (lambda d: d["guidelines"][0]["sources"][0].update(trial=-1), "guidelines[0].sources[0].trial"),
    (lambda d: d["guidelines"][1].update(id="g1"), "guideline id 'g1' appears twice"),
    (lambda d: d.update(format="something/2"), "format"),
])
def test_a_broken_file_is_one_message_naming_the_field(tmp_path, edit, field):
    data = json.loads(json.dumps(GOOD))
    edit(data)
    path = _file(tmp_path, data)
    with pytest.raises(ConfigError) as err:
        load(path)
    assert str(path) in str(err.value) and field in str(err.value)
    proc = _agentrig("guidelines", "show", path)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert field in proc.stderr and "invalid guidelines file" in proc.stderr


def test_not_json_and_missing_file(tmp_path):
    bad = _file(tmp_path, '{"guidelines": [,]}')
    proc = _agentrig("guidelines", "show", bad)
    assert proc.returncode == 1 and "not valid JSON at line 1" in proc.stderr and "Traceback" not in proc.stderr
    proc = _agentrig("guidelines", "show", tmp_path / "absent.json")
    assert proc.returncode == 1 and "agentrig guidelines derive" in proc.stderr


def test_show_renders_markdown(tmp_path):
    path = _file(tmp_path, GOOD)
    proc = _agentrig("guidelines", "show", path, "--plain")
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    assert text.startswith("# Consistency guidelines") and "## g1 · strategy" in text and "## g2 · recovery" in text
    assert "run `r-1`, arm `baseline`, split `train`" in text
    assert "bikeshop/rent_city_bike trial 2 step 1 (unstable_step)" in text and "**when:** a booking request" in text
    # a round trip through the writer keeps the content
    again = write(load(path), tmp_path / "again.json")
    assert load(again) == load(path) and markdown(load(again)) == markdown(load(path))


def _ctx(tmp_path: Path) -> TrialContext:
    return TrialContext(key=TrialKey(arm="g", domain="bikeshop", task_id="t", trial=0), task=None, seed=1)


def test_plugin_settings_are_checked(tmp_path):
    path = _file(tmp_path, GOOD)
    with pytest.raises(ConfigError, match=r"`select` = 'random'.*use one of: all, bm25"):
        factory.check(PluginSettings(kind="guidelines", file=str(path), select="random"), "arm 'x'")
    with pytest.raises(ConfigError, match=r"`topk`: not a setting of the guidelines plug-in"):
        factory.check(PluginSettings(kind="guidelines", file=str(path), topk=3), "arm 'x'")
    with pytest.raises(ConfigError, match=r"`file`: required"):
        factory.check(PluginSettings(kind="guidelines"), "arm 'x'")
    with pytest.raises(ConfigError, match=r"arm 'x': plug-in \"guidelines\": file .*absent.json not found"):
        factory.check(PluginSettings(kind="guidelines", file=str(tmp_path / "absent.json")), "arm 'x'")
    moved = factory.with_paths(PluginSettings(kind="guidelines", file="g.json"), tmp_path / "exp.toml")
    assert moved.options()["file"] == str(path.resolve())


def test_select_all_and_bm25(tmp_path):
    path = _file(tmp_path, GOOD)
    ctx = _ctx(tmp_path)
    plugin = build_plugin(PluginSettings(kind="guidelines", file=str(path)), ctx)
    out = asyncio.run(plugin.before_agent_step(0))
    assert len(out) == 1 and out[0].placement == "system"
    assert "Look the customer up by e-mail" in out[0].text and "After a failed refund" in out[0].text
    assert [e.kind for e in ctx.trajectory.events] == ["guidelines.loaded"]

    ctx = _ctx(tmp_path)
    plugin = build_plugin(PluginSettings(kind="guidelines", file=str(path), select="bm25", top_k=1), ctx)
    ctx.trajectory.messages.append(Message(role="assistant", content="Hi! How can I help you today?"))
    ctx.trajectory.messages.append(Message(role="user", content="Hello, the weather is nice."))
    assert asyncio.run(plugin.before_agent_step(0)) == []  # no shared term: nothing shown
    ctx.trajectory.messages.append(Message(role="assistant", content="What can I do?"))
    ctx.trajectory.messages.append(Message(role="user", content="My refund failed with an error, what now?"))
    out = asyncio.run(plugin.before_agent_step(1))
    assert len(out) == 1 and "After a failed refund" in out[0].text and "Look the customer" not in out[0].text
    picked = [e.data for e in ctx.trajectory.events if e.kind == "guidelines.select"]
    assert picked == [{"step": 1, "ids": ["g2"]}]


def test_leak_check_finds_task_values():
    values = literal_values({"user_id": "user_1", "amount": 1299.5, "name": "Yusuf", "cabin": "economy"})
    assert values >= {"user_1", "1299.5", "Yusuf"} and "economy" not in values
    g = {"text": "Refund 1299.5 to USER_1 only after checking.", "trigger": "", "rationale": ""}
    assert leaked_values(g, values) == ["1299.5", "user_1"]
    assert leaked_values({"text": "ask yusuf for the id", "trigger": "", "rationale": ""}, values) == ["Yusuf"]
    assert leaked_values({"text": "the account user_10 is not this one", "trigger": "", "rationale": ""},
                         values) == []
    assert leaked_values({"text": "Confirm the amount before refunding it.", "trigger": "a refund",
                          "rationale": "refunds forked"}, values) == []


def test_task_values_through_the_seam():
    tau = get_benchmark("tau2").task_values({"data_root": None, "tasks": {"bikeshop": ["rent_city_bike"]}})
    values = tau["bikeshop/rent_city_bike"]
    assert "rent_city_bike" in values and any("@" in v for v in values)  # the task id, the customer's e-mail
    from agentrig.bench.terminal.tasks.taskfile import builtin_tasks_dir

    term = get_benchmark("terminal").task_values({"data_root": str(builtin_tasks_dir()),
                                                  "tasks": {"terminal": ["write-marker"]}})
    assert set(term["terminal/write-marker"]) >= {"write-marker", "/app/marker.txt"}
    assert "/app" not in term["terminal/write-marker"]  # the shared working directory is no task value


def test_parse_reply():
    body = {"guidelines": [{"text": "a", "category": "strategy"}, "junk"]}
    assert parse_reply("Here:\n```json\n" + json.dumps(body) + "\n```\nthanks") == [body["guidelines"][0]]
    assert parse_reply(json.dumps(body)) == [body["guidelines"][0]]
    assert parse_reply("I cannot help with that.") is None and parse_reply(None) is None
    assert parse_reply('{"rules": []}') is None


def test_a_valid_file_model_defaults():
    gf = GuidelinesFile.model_validate(GOOD)
    assert gf.provenance.inputs.forks == 0 and gf.rejected == []
