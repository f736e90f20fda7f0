"""Terminal runs end to end through `agentrig run` (a subprocess) on the built-in tasks, under bwrap.

One run plays three arms on every built-in task, two trials each: the oracle passes every task,
the noop fails every task not designed lenient, and the flaky-oracle's stored rewards are exactly
what each trial's seed implies (the seed decides whether a step is skipped and which). The same
command again plays nothing and stores nothing twice; analyze, the jsonl export and the report
work on the run and show one reward component per test.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path

import pytest

from agentrig.bench.terminal.reference import oracle_steps

from .run_support import BUILTIN_TASKS, LENIENT, agentrig, experiment, records, run_json
from .sandbox_support import needs_root_bwrap

pytestmark = needs_root_bwrap()

DROP_P = 0.5
TRIALS = 2
# solution.yaml steps whose loss does not change the outcome (they only look around)
HARMLESS = {"shell-session-state": {3}, "stale-lock": {0, 1}}
ARMS = f"""
[[arms]]
name = "oracle"
agent = {{ kind = "oracle" }}
[[arms]]
name = "noop"
agent = {{ kind = "noop" }}
[[arms]]
name = "flaky"
agent = {{ kind = "flaky-oracle", drop_p = {DROP_P} }}
"""
TASKS = {t.id: t for t in BUILTIN_TASKS}


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("terminal-cache")


@pytest.fixture(scope="module")
def builtin_run(tmp_path_factory, cache):
    tmp = tmp_path_factory.mktemp("terminal-runs")
    path = experiment(tmp, "builtin", ARMS, cache=cache, run=f"trials = {TRIALS}")
    doc = run_json(path)
    return path, doc


def test_every_trial_is_stored_valid_once(builtin_run):
    path, doc = builtin_run
    assert doc["status"] == "done" and "excluded" not in doc
    recs = records(doc["run_dir"])
    assert all(r.verdict.valid for r in recs)
    keys = Counter((r.key.arm, r.key.task_id, r.key.trial) for r in recs)
    assert len(keys) == 3 * len(TASKS) * TRIALS and set(keys.values()) == {1}


def test_no_trial_directory_is_left_once_the_run_ended(builtin_run, cache):
    # each judged trial's sandbox is removed by a task of its own (episode.py, detach_close) and its
    # directory deleted in the background (bwrap.discard_tree): the run ends only after both
    assert not list((cache / "trials").iterdir())
    assert not (cache / "trash").exists() or not list((cache / "trash").iterdir())


def test_oracle_passes_every_builtin_task(builtin_run):
    _, doc = builtin_run
    recs = records(doc["run_dir"], arm="oracle")
    failed = {r.key.task_id: r.verdict.reward_info.notes for r in recs if r.verdict.reward != 1.0}
    assert not failed
    assert {r.key.task_id for r in recs} == set(TASKS)
    for r in recs:
        assert r.verdict.termination == "submitted"
        comps = r.verdict.reward_info.components
        assert comps and all(name.startswith(f"{r.key.task_id}::") for name in comps)
        assert all(v == 1.0 for v in comps.values())
        commands = [e for e in r.trajectory.events if e.plugin == "sandbox" and e.kind == "command"]
        calls = [c for m in r.trajectory.messages for c in m.tool_calls]
        assert commands and len(commands) == len(calls) and all(c.name == "bash" for c in calls)


def test_noop_fails_every_task_not_designed_lenient(builtin_run):
    _, doc = builtin_run
    recs = records(doc["run_dir"], arm="noop")
    passed = {r.key.task_id for r in recs if r.verdict.reward == 1.0}
    assert passed == LENIENT == {"read-only-tour"}
    for r in recs:
        assert r.verdict.termination == "submitted"
        assert not any(e.kind == "command" for e in r.trajectory.events)
        if r.key.task_id not in LENIENT:
            assert r.verdict.reward_info.notes["failure_mode"] == "wrong_output"
            assert min(r.verdict.reward_info.components.values()) == 0.0


def test_flaky_oracle_rewards_are_what_the_seeds_imply(builtin_run):
    _, doc = builtin_run
    recs = records(doc["run_dir"], arm="flaky")
    assert len(recs) == len(TASKS) * TRIALS
    drops = 0
    for r in recs:
        task = TASKS[r.key.task_id]
        rng = random.Random(r.seed)
        dropped = rng.random() < DROP_P
        index = rng.randrange(len(oracle_steps(task))) if dropped else None
        events = [e for e in r.trajectory.events if e.plugin == "flaky-oracle"]
        if dropped:
            drops += 1
            assert [e.data["index"] for e in events] == [index]
        else:
            assert events == []
        survives = not dropped or task.id in LENIENT or index in HARMLESS.get(task.id, set())
        assert r.verdict.reward == (1.0 if survives else 0.0), (task.id, r.seed, index, r.verdict.reward_info.notes)
    assert 0 < drops < len(recs)  # the check saw both outcomes


def test_the_same_command_again_plays_and_stores_nothing(builtin_run):
    path, doc = builtin_run
    before = len(records(doc["run_dir"]))
    again = run_json(path)
    assert again["played"] == 0 and again["stored"] == 0
    assert len(records(doc["run_dir"])) == before


def test_analyze_export_and_report_show_the_tests(builtin_run):
    _, doc = builtin_run
    run_dir = Path(doc["run_dir"])
    proc = agentrig("analyze", run_dir, "--json")
    assert proc.returncode == 0, proc.stderr
    analysis = json.loads(proc.stdout)
    text = json.dumps(analysis)
    assert "write-marker::test_marker_file" in text
    assert "harbor-service-config::port" in text
    assert "wrong_output" in text  # the noop's failures, in the terminal taxonomy
    proc = agentrig("export", run_dir, "--format", "jsonl")
    assert proc.returncode == 0, proc.stderr
    lines = (run_dir / "exports" / "trials.jsonl").read_text().splitlines()
    assert len(lines) == len(records(run_dir))
    proc = agentrig("report", run_dir)
    assert proc.returncode == 0, proc.stderr
    html = (run_dir / "report.html").read_text()
    assert "csv-region-totals::test_revenues" in html and "bash /oracle/solution.sh" in html


async def test_the_report_opens_in_chromium_with_a_trials_commands(builtin_run, tmp_path):
    from tests.report.cdp import Browser, find_chromium

    chromium = find_chromium()
    if chromium is None:
        pytest.skip("chromium not found (apt-get install -y chromium)")
    _, doc = builtin_run
    report = Path(doc["report"])
    async with await Browser.launch(tmp_path / "profile", chromium) as browser:
        page = await browser.page()
        await page.goto(report.resolve().as_uri())
        assert page.errors == []
        body = await page.eval("document.body.innerText")
        assert "write-marker::test_marker_file" in body  # components per test
        grid = json.loads(await page.eval("document.getElementById('grid-data').textContent"))
        t = next(i for i, task in enumerate(grid["tasks"]) if task[1] == "write-marker")
        a = next(i for i, arm in enumerate(grid["arms"]) if arm["label"] == "oracle")
        await page.eval(f"document.querySelector('#grid-host span.c[data-a=\"{a}\"][data-t=\"{t}\"][data-k=\"0\"]').click()")
        await page.eval("new Promise(r => setTimeout(r, 300))")
        assert await page.eval("document.getElementById('trajectory').hidden") is False
        viewer = await page.eval("document.getElementById('viewer').innerText")
        assert "bash /oracle/solution.sh" in viewer and "agentrig-ok" in viewer  # the command and its output
        assert page.errors == []
