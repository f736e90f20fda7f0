"""Acceptance of issue 32 through the real stack: agents we did not write — mini-swe-agent, Codex CLI,
Claude Code (their real packages, from the cached tool roots) and the example command agent
(examples/command_agent) — on terminal tasks: experiment TOML → `agentrig run` (a subprocess) → the
agent in the task's sandbox → the measuring proxy → the channel → the solution endpoint (its own
process, answering each agent's own protocol) → the verifier → the store.

- each agent solves a built-in task on bwrap (slow: a share of the built-in tasks holding every
  kind of them on bwrap, three on podman; every task on all three sandboxes is
  perf/installed_agents.py's acceptance run), every trial valid once and solved, the calls recorded equal to the
  endpoint's log (``--log``: count and usage), the key nowhere in the run directory;
- left out (played, not required to be solved): for Codex ``stale-lock``, whose scripted
  ``rm -f`` Codex's own exec policy refuses; for the example command agent (a Python script) the
  two tasks whose image has no ``python3``; and for all of them ``shell-session-state``: its checks run in the trial's own persistent shell,
  which an installed agent never types into (it runs its own shells), so the trial is a valid
  failure (``wrong_output``), not a fault;
- 20 % channel faults and the endpoint SIGKILLed mid-run, back 20 s later (slow): every trial valid
  once and solved, the retries for faults equal to the faults the endpoint injected, no fault seen
  by the agent (``agentrig.bench.terminal.scripted.installed_run``);
- ``analyze``, the report (slow: in Chromium), the exports and ``instability`` (slow: the noisy
  endpoint's injected steps found for mini-swe-agent, precision and recall ≥ 0.9) read the run.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from agentrig.bench.terminal.scripted.installed_run import FINISHED, agent_table, play, problems, summarize

from .run_support import BUILTIN_TASKS, experiment, records, write_task
from .sandbox_support import needs_root_bwrap
from .test_bash_runs import KEY, KEY_ENV, SolutionServer, _agentrig, _run, assert_no_key, assert_solved_once

pytestmark = needs_root_bwrap()

AGENTS = ("mini-swe-agent", "codex", "claude-code", "command")
NOT_FOR_INSTALLED = "shell-session-state"  # checked in the trial's own shell, which these agents never use
# Codex 0.169 refuses `rm -f` even with --dangerously-bypass-approvals-and-sandbox ("rm -f style
# commands are not permitted"): stale-lock's solution removes the stale lock file that way
CODEX_REFUSES = {"stale-lock"}
# the example command agent is a Python script: these tasks' images have no python3 (exit 127)
NO_PYTHON = {"harbor-backup-archive", "harbor-dedupe-emails"}
LEFT_OUT = {"codex": CODEX_REFUSES, "command": NO_PYTHON}
ONE_TASK = "merge-json-config"


def installed_experiment(tmp: Path, name: str, base_url: str, cache: Path, *, agents=AGENTS, task_ids=None,
                         tasks: Path | None = None, trials: int = 1, concurrency: int = 4, sandbox: str = "",
                         roles: str = "") -> Path:
    channel = f"""
[channel]
base_url = "{base_url}"
api_key_env = "{KEY_ENV}"
model = "solution"
timeout_s = 60
max_attempts = 12
backoff_base_s = 0.01
backoff_max_s = 0.1
{roles}"""
    arms = "".join(f'\n[[arms]]\nname = "{k}"\nagent = {agent_table(k)}\n' for k in agents)
    return experiment(tmp, name, channel + arms, cache=cache, tasks=tasks, sandbox=sandbox,
                      run=f"trials = {trials}\nconcurrency = {concurrency}",
                      benchmark=f"task_ids = {json.dumps(task_ids)}" if task_ids else "")


def check_against_the_log(run_dir: Path, log: Path, agents=AGENTS) -> dict:
    """The calls recorded equal the endpoint's log (count and usage), no fault, and no agent saw one."""
    arms = summarize(run_dir, log)
    assert set(arms) == set(agents)
    for arm, a in arms.items():
        assert a["calls"] >= 2 * a["trials"] > 0, (arm, a)  # a command and the agent's own finish, at least
        assert (a["calls_answered"], a["usage"]) == (a["log_answered"], a["log_usage"]), (arm, a)
        assert a["agent_saw_fault"] == {}, (arm, a["agent_saw_fault"])
    return arms


def check_trajectories(recs: list) -> None:
    for r in recs:
        kind = r.key.arm
        events = [(e.plugin, e.kind) for e in r.trajectory.events]
        assert ("agent", "start") in events and ("agent", "exit") in events
        commands = [e for e in r.trajectory.events if (e.plugin, e.kind) == ("sandbox", "command")]
        calls = [c for m in r.trajectory.messages for c in m.tool_calls]
        results = [m for m in r.trajectory.messages if m.role == "tool" or m.role == "user" and m is not r.trajectory.messages[0]]
        assert calls and len(results) >= len(calls), (kind, r.key.task_id)
        # each command run is an event (the example command agent's shell(command) is in analysis/shell_tools.py too)
        assert len(commands) == len(calls), (kind, r.key.task_id)
        if kind in FINISHED:  # its own record read: finished by itself, with the steps the proxy answered
            (rec,) = [e.data for e in r.trajectory.events if (e.plugin, e.kind) == ("agent", "record")]
            assert rec["finished"] and rec["exit_status"] == FINISHED[kind]
        assert [m.role for m in r.trajectory.messages][:2] == ["user", "assistant"]
        assert all(m.call is not None for m in r.trajectory.messages if m.role == "assistant")


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("installed-cache")


@pytest.fixture(scope="module")
def one_task_run(tmp_path_factory, cache):
    """The four agents on one built-in task, bwrap; the endpoint's log kept."""
    tmp = tmp_path_factory.mktemp("installed-one")
    log = tmp / "endpoint.jsonl"
    server = SolutionServer("--log", str(log))
    try:
        toml = installed_experiment(tmp, "one", server.base_url, cache, task_ids=[ONE_TASK])
        doc = _run(toml)
    finally:
        server.stop()
    return Path(doc["run_dir"]), log, doc


# ------------------------------------------------------------------------------------ bwrap, default suite


def test_each_agent_solves_a_builtin_task_on_bwrap(one_task_run):
    run_dir, log, doc = one_task_run
    assert doc["status"] == "done" and doc["played"] == len(AGENTS)
    recs = assert_solved_once(run_dir, {(a, ONE_TASK, 0) for a in AGENTS})
    check_trajectories(recs)
    check_against_the_log(run_dir, log)
    assert_no_key(run_dir)


def test_analyze_and_the_exports_read_an_installed_agents_run(one_task_run, tmp_path):
    run_dir, _, _ = one_task_run
    recs = {r.key.arm: r for r in records(run_dir, valid=True)}
    done = _agentrig("analyze", run_dir, "--json")
    assert done.returncode == 0, done.stderr[-2000:]
    analysis = json.loads(done.stdout)
    for arm in AGENTS:
        a = analysis["arms"][arm]
        (role,) = a["usage"]["roles"]
        calls = recs[arm].trajectory.model_calls
        assert (role["role"], role["requests"], role["succeeded"]) == ("agent", len(calls), len(calls))
        assert role["prompt_tokens"] == sum(c.usage.prompt_tokens for c in calls) > 0
        assert (a["overall"]["valid"], a["overall"]["mean_reward"], a["failures"]["failed"]) == (1, 1.0, 0)
        assert a["figures"]["durations"]["valid_trials"] == 1
        (chain,) = a["consistency"]
        assert chain["task_id"] == ONE_TASK and chain["c"] == chain["n"] == 1
    # the exports: one record / result / trajectory per trial, with the agent's commands
    for fmt, out in (("jsonl", tmp_path / "all.jsonl"), ("terminal-bench", tmp_path / "tb"), ("atif", tmp_path / "atif")):
        done = _agentrig("export", run_dir, "--format", fmt, "--out", out)
        assert done.returncode == 0, (fmt, done.stderr[-2000:])
    lines = [json.loads(x) for x in (tmp_path / "all.jsonl").read_text().splitlines()]
    assert sorted(x["key"]["arm"] for x in lines if x["verdict"]["valid"]) == sorted(AGENTS)
    for arm in AGENTS:
        (entry,) = json.loads((tmp_path / "tb" / arm / "results.json").read_text())["results"]
        assert entry["is_resolved"] is True and entry["total_input_tokens"] > 0
        assert entry["n_commands"] >= 1, arm
        (traj,) = [json.loads(p.read_text()) for p in (tmp_path / "atif" / arm).rglob("*.json")
                   if "steps" in json.loads(p.read_text())]
        commands = [json.dumps(s) for s in traj["steps"] if s.get("tool_calls")]
        assert commands, arm
    done = _agentrig("report", run_dir, "-o", tmp_path / "report.html")
    assert done.returncode == 0, done.stderr[-2000:]
    html = (tmp_path / "report.html").read_text()
    assert all(arm in html for arm in AGENTS)
    for p in tmp_path.rglob("*"):  # nor in anything exported
        assert not p.is_file() or KEY[9:25].encode() not in p.read_bytes(), p


def test_the_comparison_with_the_endpoints_log_can_fail(one_task_run, tmp_path):
    """A log that lost an answered request, or holds a fault the channel never retried, is named."""
    run_dir, log, _ = one_task_run
    lines = log.read_text().splitlines()
    planned = {a: {f"{ONE_TASK}#0"} for a in AGENTS}
    assert problems({"status": "done", "arms": summarize(run_dir, log)}, planned) == []
    first = next(i for i, x in enumerate(lines) if json.loads(x)["headers"].get("x-agentrig-arm") == "codex")
    lost = tmp_path / "lost.jsonl"
    lost.write_text("\n".join(lines[:first] + lines[first + 1:]) + "\n")
    (found,) = problems({"status": "done", "arms": summarize(run_dir, lost)}, planned)
    assert found.startswith("codex: ") and "calls recorded" in found
    extra = json.loads(lines[first])
    extra.update(status=429, usage=None, fault="rate_limit")
    faulty = tmp_path / "faulty.jsonl"
    faulty.write_text("\n".join(lines + [json.dumps(extra)]) + "\n")
    (found,) = problems({"status": "done", "arms": summarize(run_dir, faulty)}, planned)
    assert found.startswith("codex: 0 retries for faults") and "1 faults injected" in found


# ------------------------------------------------------------------------------------ slow: every task, both sandboxes


# a share of the built-in tasks that holds every kind of them: each base image (TB's ubuntu-24-04 and
# python-3-13), a solution script and a solution.yaml, TB1 and Harbor formats, a task whose image
# has no python3, the task Codex refuses, the persistent-shell task. Every built-in task and ten real
# Terminal-Bench tasks on bwrap, podman and docker: perf/installed_agents.py (docs/performance.md).
SHARE = ["write-marker", "merge-json-config", "harbor-dedupe-emails", "stale-lock", "git-restore-file", NOT_FOR_INSTALLED]


def _builtin_tasks(tmp: Path, cache: Path, ids: list[str], sandbox: str = "") -> None:
    log = tmp / "endpoint.jsonl"
    server = SolutionServer("--log", str(log))
    try:
        toml = installed_experiment(tmp, "every", server.base_url, cache, concurrency=2, sandbox=sandbox, task_ids=ids)
        doc = _run(toml)
    finally:
        server.stop()
    run_dir = Path(doc["run_dir"])
    ids = set(ids)
    valid = records(run_dir, valid=True)
    # the persistent-shell task: a valid failure for every agent (its shell's state is not theirs)
    left = [r for r in valid if r.key.task_id == NOT_FOR_INSTALLED]
    assert sorted(r.key.arm for r in left) == sorted(AGENTS)
    assert all(r.verdict.termination == "submitted" and r.verdict.reward == 0.0 for r in left)
    solvable = {(a, t, 0) for a in AGENTS for t in ids - {NOT_FOR_INSTALLED} - LEFT_OUT.get(a, set())}
    solved = [r for r in valid if (r.key.arm, r.key.task_id, 0) in solvable]
    assert {(r.key.arm, r.key.task_id, r.key.trial) for r in solved} == solvable and len(solved) == len(solvable)
    unsolved = {(r.key.arm, r.key.task_id): r.verdict.termination for r in solved if r.verdict.reward != 1.0}
    assert not unsolved, unsolved
    assert not records(run_dir, valid=False)
    assert len(valid) == len(AGENTS) * len(ids)  # the tasks left out were played too, each once
    check_trajectories(solved)
    check_against_the_log(run_dir, log)
    assert_no_key(run_dir)


@pytest.mark.slow
def test_the_built_in_tasks_an_installed_agent_can_solve_on_bwrap(tmp_path, cache):
    _builtin_tasks(tmp_path, cache, SHARE)


@pytest.mark.slow
def test_the_built_in_tasks_an_installed_agent_can_solve_on_podman(tmp_path):
    from .podman_support import need_podman

    need_podman()
    _builtin_tasks(tmp_path, tmp_path / "cache", ["write-marker", "merge-json-config", NOT_FOR_INSTALLED],
                   sandbox='kind = "podman"\nbuild_network = "host-settings"')


# ------------------------------------------------------------------------------------ slow: faults and an outage


@pytest.mark.slow
def test_faults_and_a_20s_outage_never_reach_the_agents(tmp_path):
    """The endpoint answers 20 % of requests with a fault and is SIGKILLed once two trials are
    stored, back on the same port 20 s later: the channel retries every fault and holds the calls
    through the outage; the agents see none of it."""
    tasks = ["fix-python-bug", "merge-json-config", "write-marker"]
    report = play(tmp_path, agents=AGENTS, task_ids=tasks, concurrency=2, fault_rate=0.2, seed=11, outage_s=20,
                  outage_after=2, cache_dir=tmp_path / "cache")
    assert problems(report, {a: {f"{t}#0" for t in tasks} for a in AGENTS}) == [], json.dumps(report, default=str)[-4000:]
    outage = report["outage"]
    assert outage["run_alive_at_kill"] and outage["run_alive_at_restart"] and outage["down_s"] >= 20
    (recorded,) = report["outages"]
    assert recorded["resumed"] is True and recorded["calls_held"] >= 1
    arms = report["arms"]
    assert sum(a["faults_injected"] for a in arms.values()) > 0
    assert all(a["invalid_attempts"] == 0 for a in arms.values())
    run_dir = Path(report["run_dir"])
    check_trajectories(records(run_dir, valid=True))
    from agentrig.bench.terminal.scripted.installed_run import KEY

    for p in run_dir.rglob("*"):
        assert not p.is_file() or KEY.encode() not in p.read_bytes(), p


# ------------------------------------------------------------------------------------ slow: the report, instability


@pytest.mark.slow
def test_the_report_of_an_installed_agents_run_in_chromium(one_task_run, tmp_path):
    from tests.report.cdp import Browser, find_chromium

    chromium = find_chromium()
    if chromium is None:
        pytest.skip("chromium not found")
    run_dir, _, _ = one_task_run
    assert _agentrig("report", run_dir, "-o", tmp_path / "report.html").returncode == 0

    async def look() -> None:
        async with await Browser.launch(tmp_path / "profile", chromium) as browser:
            page = await browser.page()
            await page.goto((tmp_path / "report.html").resolve().as_uri())
            await asyncio.sleep(0.5)
            assert page.errors == []
            assert await page.eval("document.querySelectorAll('#grid-host span.c').length") == len(AGENTS)
            assert await page.eval("document.querySelectorAll('#grid-host span.c.missing').length") == 0
            for a in range(len(AGENTS)):
                await page.eval(f"document.querySelector(\"#grid-host span.c[data-a='{a}']\").click()")
                await asyncio.sleep(0.2)
                assert await page.eval("document.getElementById('trajectory').hidden") is False
                title = await page.eval("document.getElementById('viewer-title').textContent")
                text = await page.eval("document.getElementById('viewer').innerText")
                assert ONE_TASK in title and "json" in text, (title, text[:500])
                assert await page.eval("document.querySelectorAll('#viewer .toolcall').length") >= 1
            assert page.errors == []

    asyncio.run(look())


STEPS = "\n".join(f"- command: {c}\n  block: true\n  append_enter: true" for c in (
    "mkdir -p /app/d", "echo ok > /app/d/out.txt", "cat /app/d/out.txt"))
TEST = "from pathlib import Path\n\ndef test_out():\n    assert Path('/app/d/out.txt').read_text().strip() == 'ok'\n"
INJECTED = {("t-one", 1), ("t-two", 0)}  # t-three: never noisy


@pytest.mark.slow
def test_instability_finds_the_noisy_steps_of_mini_swe_agent(tmp_path, cache):
    """mini-swe-agent plays three small tasks four times at temperature 0.7 against the solution
    endpoint in noise mode (a wrong command at the injected steps, with probability 0.5); then
    ``agentrig instability`` resamples each decision step through the channel: the injected steps
    are found with precision and recall ≥ 0.9, the never-noisy task is stable."""
    tasks = tmp_path / "tasks"
    for name in ("t-one", "t-two", "t-three"):
        write_task(tasks, name, solution=None, solution_yaml=STEPS, test=TEST)
    noise = [a for t, s in sorted(INJECTED) for a in ("--noise", f"terminal/{t}={s}")]
    server = SolutionServer("--tasks", str(tasks), *noise, "--noise-p", "0.5", "--noise-seed", "5")
    try:
        roles = '[roles.agent]\nmodel = "solution"\ntemperature = 0.7\n'
        toml = installed_experiment(tmp_path, "noisy", server.base_url, cache, agents=("mini-swe-agent",),
                                    tasks=tasks, trials=4, concurrency=2, roles=roles)
        doc = _run(toml)
        run_dir = Path(doc["run_dir"])
        done = _agentrig("instability", run_dir, "--samples", "5", "--temperature", "0.7", "--json")
    finally:
        server.stop()
    assert done.returncode == 0, done.stderr[-2000:]
    assert len(records(run_dir, valid=True)) == 12 and not records(run_dir, valid=False)
    (report,) = json.loads(done.stdout)["reports"]
    assert report["arm"] == "mini-swe-agent"
    found = {(t["task_id"], s) for t in report["tasks"] for s in t["unstable_steps"]}
    hits = found & INJECTED
    assert len(hits) / max(1, len(found)) >= 0.9 and len(hits) / len(INJECTED) >= 0.9, found
    three = next(t for t in report["tasks"] if t["task_id"] == "t-three")
    assert three["instability"] == 0.0 and three["fork_step"] is None and three["c"] == three["n"] == 4
    assert any(0 < t["c"] < t["n"] for t in report["tasks"])  # the noise changed outcomes

