"""Memory figures (the memory plug-in's figure, plugins/memory/figure.py) on constructed records: every number against a hand value."""

from __future__ import annotations

import io
import json
import os
from math import isclose
from pathlib import Path

import pytest
from rich.console import Console

from agentrig.commands.analyze import analyze_command
from agentrig.plugins.memory.figure import baseline_arm, memory_figures, memory_modes
from agentrig.analysis.build import analyze_run
from agentrig.analysis.summary import Analysis
from agentrig.store.store import Store
from agentrig.types import (Attempt, Message, ModelCall, PluginEvent, RewardInfo, Trajectory, TrialKey, TrialRecord,
                            Usage, Verdict)


def _call(role: str, purpose: str, prompt: int, completion: int, latency: float, error: str | None = None) -> ModelCall:
    if error is not None:
        return ModelCall(role=role, purpose=purpose, model="m", latency_s=latency, error=error,
                         attempts=[Attempt(cause="server_error", status=500)] * 2, usage=Usage(reported=False))
    return ModelCall(role=role, purpose=purpose, model="m", latency_s=latency, attempts=[Attempt()],
                     usage=Usage(prompt_tokens=prompt, completion_tokens=completion))


def _trigger(step: int, *, injected: str | None, saves: int = 0, bank: int = 0, decision: str | None = "silent",
             decide_error: str | None = None, rejected: int = 0, parsed: str | None = None) -> PluginEvent:
    edit = {"tool_calls": [{"name": "memory_save_knowledge", "arguments": {"content": f"fact {i}"}, "result": "ok",
                            "ok": True} for i in range(saves)]
            + [{"name": "memory_delete", "arguments": {"memory_id": "K99"}, "result": "error: no entry K99", "ok": False}
               for _ in range(rejected)],
            "bank_size": {"knowledge": bank, "procedural": 1 if bank else 0, "status_chars": 10},
            "call": None, "error": None}
    if parsed is None and decide_error is None:
        parsed = "reminder" if decision == "inject" else "no_intervention"
    decide = None if decision is None else {"decision": decision, "text": injected, "raw": "", "call": None,
                                            "parsed": parsed, "error": decide_error}
    return PluginEvent(plugin="memory", turn=step, kind="memory.trigger",
                       data={"step": step, "mode": "selective", "edit": edit, "decide": decide, "injected": injected})


def _record(arm: str, task: str, trial: int, *, ok: bool, steps: int, events: list[PluginEvent],
            calls: list[ModelCall], duration: float = 10.0) -> TrialRecord:
    v = 1.0 if ok else 0.0
    traj = Trajectory(messages=[Message(role="assistant", content="Hi")], model_calls=calls, events=events,
                      counters={"agent_steps": steps})
    return TrialRecord(key=TrialKey(arm=arm, domain="d", task_id=task, trial=trial), run_id="r", seed=1,
                       started_at="2026-01-01T00:00:00Z", duration_s=duration, trajectory=traj,
                       verdict=Verdict(reward=v, termination="user_stop",
                                       reward_info=RewardInfo(reward=v, reward_basis=["DB"], components={"DB": v})))


def _memory_trial_1(arm: str = "M", task: str = "t1", trial: int = 0, ok: bool = True) -> TrialRecord:
    """4 agent steps, 4 triggers, one reminder (step 2), the decide call of step 3 failed."""
    events = [_trigger(0, injected=None, saves=2, bank=1), _trigger(1, injected=None, bank=1, parsed="unparseable"),
              _trigger(2, injected="Check the cabin class.", bank=2, saves=1, rejected=1, decision="inject"),
              _trigger(3, injected=None, bank=2, decide_error="retries_exhausted")]
    calls = []
    for step in range(4):
        calls.append(_call("memory", "memory.edit", 300, 30, 0.2))
        calls.append(_call("memory", "memory.decide", 200, 10, 0.1, "retries_exhausted" if step == 3 else None))
        calls.append(_call("agent", "agent", 1000, 50, 0.5))
    calls.append(_call("user", "user", 400, 40, 0.3))
    return _record(arm, task, trial, ok=ok, steps=4, events=events, calls=calls, duration=10.0)


def _memory_trial_2(arm: str = "M", task: str = "t1", trial: int = 1, ok: bool = True) -> TrialRecord:
    """2 agent steps, 2 triggers, both inject; no failures."""
    events = [_trigger(0, injected="Remember the user id.", bank=0, decision="inject"),
              _trigger(1, injected="The refund needs the order id.", bank=3, saves=3, decision="inject")]
    calls = []
    for _ in range(2):
        calls.append(_call("memory", "memory.edit", 100, 20, 0.05))
        calls.append(_call("memory", "memory.decide", 80, 0, 0.05))
        calls.append(_call("agent", "agent", 500, 100, 0.25))
    return _record(arm, task, trial, ok=ok, steps=2, events=events, calls=calls, duration=5.0)


def test_injection_rate_and_overhead_by_hand():
    f = memory_figures("M", [_memory_trial_1(), _memory_trial_2()], modes=["selective"])
    assert (f.trials, f.agent_steps, f.triggers, f.injections) == (2, 6, 6, 3)
    assert isclose(f.injection_rate, 3 / 6) and isclose(f.injections_per_step, 3 / 6)
    assert isclose(f.triggers_per_trial, 3.0)
    assert f.decisions == {"inject": 3, "silent": 3}
    # the failed decide call parsed nothing; a garbled answer is silence
    assert f.parsed == {"reminder": 3, "no_intervention": 1, "unparseable": 1}
    assert f.edit_tool_calls == 2 + 1 + 1 + 3 and isclose(f.edit_tool_calls_per_trigger, 7 / 6)
    assert f.edit_rejected == 1 and f.shown == 0
    # bank after each trial's last trigger: (2 knowledge + 1 procedural) and (3 + 1)
    assert isclose(f.bank_entries_mean, (3 + 4) / 2)
    # memory calls: 8 + 4, one failed (its tokens and latency not counted)
    assert (f.calls, f.failed_calls, f.failed_trials, f.failure_causes) == (12, 1, 1, {"retries_exhausted": 1})
    assert f.trigger_errors == 1
    mem_tokens = 4 * 330 + 3 * 210 + 2 * 120 + 2 * 80  # 2350
    agent_tokens = 4 * 1050 + 2 * 600  # 5400
    assert isclose(f.tokens.memory_per_trial, mem_tokens / 2) and isclose(f.tokens.agent_per_trial, agent_tokens / 2)
    assert isclose(f.tokens.ratio, 2350 / 5400) and isclose(f.tokens.per_trigger, 2350 / 6)
    mem_lat = 4 * 0.2 + 3 * 0.1 + 2 * 0.05 + 2 * 0.05  # 1.3
    agent_lat = 4 * 0.5 + 2 * 0.25  # 2.5
    assert isclose(f.latency_s.memory_per_trial, mem_lat / 2) and isclose(f.latency_s.agent_per_trial, agent_lat / 2)
    assert isclose(f.latency_s.ratio, 1.3 / 2.5) and isclose(f.latency_s.per_trigger, 1.3 / 6)
    assert isclose(f.latency_share, 1.3 / 15.0)


def test_modes_without_a_decide_phase_and_empty_arms():
    # full_bank with interval 2 over 5 steps: triggers at 0, 2, 4; shows at 1 and 3 (the bank is
    # empty at step 1: nothing shown, no event)
    show = PluginEvent(plugin="memory", turn=3, kind="memory.show", data={"step": 3, "mode": "full_bank",
                                                                          "injected": "K1: the user is gold"})
    events = [_trigger(0, injected="", bank=0, decision=None), _trigger(2, injected="K1: the user is gold", bank=1,
                                                                        decision=None), show,
              _trigger(4, injected="K1: the user is gold", bank=1, decision=None)]
    rec = _record("F", "t1", 0, ok=True, steps=5, events=events,
                  calls=[_call("memory", "memory.edit", 10, 5, 0.01), _call("agent", "agent", 0, 0, 0.0)])
    f = memory_figures("F", [rec])
    assert f.decisions == {"none": 3} and f.parsed == {} and (f.triggers, f.injections, f.shown) == (3, 2, 1)
    assert isclose(f.injection_rate, 2 / 3) and isclose(f.injections_per_step, 3 / 5)
    assert f.tokens.ratio is None  # the agent's own tokens are 0: no ratio, not a division by zero
    empty = memory_figures("E", [])
    assert (empty.trials, empty.triggers, empty.injection_rate, empty.tokens.memory_per_trial) == (0, 0, None, None)
    # events of another plug-in or kind are not triggers
    other = _record("O", "t1", 0, ok=True, steps=1, calls=[],
                    events=[PluginEvent(plugin="other", turn=0, kind="memory.trigger", data={"injected": "x"}),
                            PluginEvent(plugin="memory", turn=0, kind="memory.note", data={"injected": "x"})])
    assert memory_figures("O", [other]).triggers == 0


def test_baseline_is_the_first_arm_without_a_memory_plugin():
    plugins = {"sel": [{"kind": "memory", "mode": "selective"}], "base": [], "base2": [{"kind": "other"}],
               "def": [{"kind": "memory"}]}
    assert memory_modes(plugins["def"]) == ["selective"] and memory_modes(plugins["base2"]) == []
    assert baseline_arm(["sel", "base", "base2"], plugins) == "base"
    assert baseline_arm(["sel", "base2", "base"], plugins) == "base2"  # another plug-in is not memory
    assert baseline_arm(["sel", "def"], plugins) is None


# ------------------------------------------------------------------------------ through analyze_run

TASKS = [f"t{i}" for i in range(12)]
ARMS = [{"name": "base"}, {"name": "mem", "plugins": [{"kind": "memory", "mode": "selective", "interval": 1}]}]


def _baseline_trial(task: str, trial: int, ok: bool) -> TrialRecord:
    return _record("base", task, trial, ok=ok, steps=2, events=[],
                   calls=[_call("agent", "agent", 500, 100, 0.25), _call("agent", "agent", 500, 100, 0.25)], duration=5.0)


def write_ablation_run(path: Path, reminder: str | None = None) -> Path:
    """12 tasks × 2 trials: the baseline passes t0..t5 (both trials), the memory arm t0..t9.
    ``reminder``: the text injected at step 2 of mem/t0#0."""
    recs = []
    for i, t in enumerate(TASKS):
        for k in range(2):
            recs.append(_baseline_trial(t, k, ok=i < 6))
            recs.append((_memory_trial_1 if k == 0 else _memory_trial_2)("mem", t, k, ok=i < 10))
            if reminder is not None and (t, k) == ("t0", 0):
                recs[-1].trajectory.events[2].data["injected"] = reminder
    path.mkdir(parents=True, exist_ok=True)
    config = {"run_id": "run-m", "name": "ablation", "data_root": None, "tasks": {"d": TASKS},
              "experiment": {"arms": ARMS, "run": {"trials": 2}, "prices": {}}}
    agent = {"kind": "llm", "tool_mode": "native"}
    roles = {"agent": {"model": "m"}}
    comparability = {"benchmark": {"kind": "tau2"}, "limits": {"max_steps": 200}, "tasks": {f"d/{t}": "h" for t in TASKS},
                     "arms": {"base": {"agent": agent, "prompt_sha": "p", "plugins": [], "roles": roles},
                              "mem": {"agent": agent, "prompt_sha": "p", "plugins": ARMS[1]["plugins"],
                                      "roles": {**roles, "memory": {"model": "m"}}}}}
    (path / "config.json").write_text(json.dumps(config))
    with Store.open(path / "trials.sqlite") as store:
        store.set_meta("config", config)
        store.set_meta("comparability", comparability)
        for r in recs:
            assert store.append(r)
    return path


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    return write_ablation_run(tmp_path_factory.mktemp("mem") / "run")


def _analyze(run: Path, **kw) -> Analysis:
    with Store.open(run / "trials.sqlite", create=False) as store:
        return analyze_run(store, json.loads((run / "config.json").read_text()), run_dir=str(run), **kw)


def test_analysis_has_memory_figures_and_the_ab_against_the_baseline(run):
    a = _analyze(run)
    assert a.arms["base"].figures.get("memory") is None
    m = a.arms["mem"].figures["memory"]
    assert m is not None and m.modes == ["selective"] and m.baseline == "base"
    assert (m.trials, m.triggers, m.injections) == (24, 12 * 6, 12 * 3)
    assert isclose(m.injection_rate, 0.5) and isclose(m.tokens.ratio, 2350 / 5400)
    ab = m.ab
    assert ab is not None and ab.a.arm == "base" and ab.b.arm == "mem"
    assert ab.paired.tasks == 12 and ab.paired.k == 2
    assert isclose(ab.metrics["pass^1"].a, 6 / 12) and isclose(ab.metrics["pass^1"].b, 10 / 12)
    assert isclose(ab.metrics["pass^1"].delta, 4 / 12)
    assert (ab.mcnemar.a_only, ab.mcnemar.b_only) == (0, 4)
    assert ab.comparable and all(d.kind != "mismatch" for d in ab.config.differences)
    assert {d.path for d in ab.config.differences} >= {"arm.plugins", "roles.memory"}
    assert ab.metrics["pass^1"].significance == "better"  # every one of the 4 flips goes the same way
    # the JSON dump reads back
    assert Analysis.model_validate_json(a.model_dump_json()).arms["mem"].figures["memory"].ab.metrics["pass^1"].delta == \
        ab.metrics["pass^1"].delta


def test_only_the_memory_arm_still_gets_its_ab(run):
    a = _analyze(run, arm="mem")
    assert list(a.arms) == ["mem"] and a.arms["mem"].figures["memory"].ab.paired.tasks == 12


def test_analyze_prints_the_memory_tables(run):
    buf = io.StringIO()
    assert analyze_command(run, arm=None, as_json=False, out=Console(file=buf, width=220, color_system=None)) == 0
    text = buf.getvalue()
    assert "memory plug-in" in text and "50.0%" in text  # the injection rate
    assert "memory arms against the baseline base" in text
    assert "+0.333" in text  # Δpass^1
    buf = io.StringIO()
    analyze_command(run, arm=None, as_json=True, out=Console(file=buf, width=220))
    doc = json.loads(buf.getvalue())
    assert doc["arms"]["mem"]["memory"]["injections"] == 36 and doc["arms"]["base"]["memory"] is None


# ------------------------------------------------------------------------------------- the report

HOSTILE = '<img src=x onerror="window.__pwned=7"> check the </script> fare'


@pytest.fixture(scope="module")
def hostile_run(tmp_path_factory) -> Path:
    """The ablation run with a reminder that tries to become markup (as a model could write it)."""
    return write_ablation_run(tmp_path_factory.mktemp("mem-hostile") / "run", reminder=HOSTILE)


def test_report_has_the_memory_section_escaped(hostile_run, tmp_path):
    from agentrig.report import write_report

    html = write_report([hostile_run], tmp_path / "report.html").read_text(encoding="utf-8")
    section = html[html.index('<section id="memory">'):html.index('<section id="usage">')]
    assert "<svg" in section and "Against the baseline (base)" in section
    row = section[section.index(">mem</td>"):]
    assert "36/72" in row and "50.0%" in row and "×0.44" in row  # injected / triggers, rate, tokens × agent
    assert "+33.3 pp" in section and "better" in section  # Δpass^1 against the baseline
    # the hostile reminder is only inside the trial's JSON block, escaped
    assert HOSTILE not in html and "onerror" not in html.split("<script", 1)[0]


async def test_report_memory_in_chromium(hostile_run, tmp_path):
    from agentrig.report import write_report
    from tests.report.cdp import Browser, find_chromium

    binary = find_chromium()
    if binary is None:
        if os.environ.get("CI") or os.environ.get("AGENTRIG_REQUIRE_TAU2_DATA") == "1":
            pytest.fail("chromium not found (apt-get install -y chromium)")
        pytest.skip("chromium not found")
    report = write_report([hostile_run], tmp_path / "report.html")
    async with await Browser.launch(tmp_path / "profile", binary) as browser:
        page = await browser.page()
        await page.goto(report.resolve().as_uri())
        assert page.errors == []
        assert await page.eval("document.querySelectorAll('#memory table.data tr').length") >= 3
        assert await page.eval("document.querySelectorAll('#memory svg circle').length") == 1  # one memory arm
        grid = "JSON.parse(document.getElementById('grid-data').textContent)"
        ai = await page.eval(f"{grid}.arms.findIndex(a => a.label === 'mem')")
        ti = await page.eval(f"{grid}.tasks.findIndex(t => t[1] === 't0')")
        await page.eval(f"window.agentrigReport.open({ai}, {ti}, 0)")
        lines = await page.eval("[...document.querySelectorAll('#viewer .event .memory')].map(e => e.innerText)")
        assert len(lines) == 4  # one line per trigger
        assert "decision silent" in lines[0] and "nothing injected" in lines[0]
        assert HOSTILE in lines[2] and "injected:" in lines[2]
        assert await page.eval("document.querySelectorAll('#viewer img').length") == 0
        assert await page.eval("typeof window.__pwned") == "undefined"
