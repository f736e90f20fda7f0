"""The memory plug-in on bash-agent arms, and analyze / compare / report on terminal runs, through
the real stack: the solution-scripting endpoint as its own process (a key from the environment),
`agentrig run` / `compare` / `analyze` as subprocesses, the bwrap sandbox, headless Chromium.

1. `examples/terminal_memory_ablation.toml` (a copy pointed at the endpoint, 3 built-in tasks ×
   2 trials): the baseline and the five variants all complete valid and solved; `compare` reports
   each variant against the baseline as comparable with only the intended differences
   (`arm.plugins`, `roles.memory`); the memory figures and per-test components are in `analyze`.
2. A terminal run with reference agents and bash arms (native; text mode with memory; one with a
   one-reply step limit), the endpoint serving the run's own tasks directory, on two built-in tasks and one whose solution's first command fails:
   `analyze --json` has one component per test and the failure classes (wrong_output,
   limits_exceeded); the memory bank's procedural part holds the failed command and its fix; the
   A/B `compare RUN:bash RUN:bash-text` completes; the report opens in Chromium with a text-mode
   trial's commands as code and their outputs as results.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import subprocess
import textwrap
import urllib.request
from pathlib import Path

import pytest

from agentrig.bench.terminal.tasks.taskfile import builtin_tasks_dir, load_tasks
from agentrig.report import write_report

from tests.support import EndpointProcess

from ...report.cdp import Browser, find_chromium
from .run_support import AGENTRIG, records, write_task
from .sandbox_support import needs_root_bwrap

pytestmark = needs_root_bwrap()

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "terminal_memory_ablation.toml"
VARIANTS = ("selective", "full_bank", "always_inject", "advisor", "retrieval")
ARMS = ("baseline", *VARIANTS)
PURPOSES = {"baseline": set(), "selective": {"memory.edit", "memory.decide"}, "full_bank": {"memory.edit"},
            "always_inject": {"memory.edit", "memory.decide"}, "advisor": {"memory.decide"},
            "retrieval": {"memory.edit"}}
KEY_ENV = "AGENTRIG_TERMINAL_MEMORY_KEY"
KEY = "sk-terminal-memory-3f9a1c7e5b2d4a6c"
NUM_TASKS, TRIALS = 3, 2
RETRY_TASK = "retry-config"
FAILING = "cat /app/config/settings.ini"
FIX = "mkdir -p /app/config && printf 'mode=fast\\n' > /app/config/settings.ini && cat /app/config/settings.ini"


def _env() -> dict[str, str]:
    return {**os.environ, KEY_ENV: KEY, "COLUMNS": "200"}


def agentrig(*args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run([AGENTRIG, *map(str, args)], capture_output=True, text=True, env=_env(), timeout=timeout)


@contextlib.contextmanager
def serve(tasks: Path | None = None, record: bool = False):
    """The solution endpoint as its own process (its CLI); yields its base URL."""
    extra = (["--tasks", str(tasks)] if tasks is not None else []) + (["--record"] if record else [])
    server = EndpointProcess("agentrig.bench.terminal.scripted.solution_endpoint", "--api-key-env", KEY_ENV, "--models", "gpt-4.1,solution",
                             *extra, env=_env())
    try:
        yield server.base_url
    finally:
        server.stop()


@pytest.fixture(scope="module")
def endpoint():
    with serve() as base_url:
        yield base_url


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("terminal-memory-cache")


def _sub(pattern: str, repl: str, text: str) -> str:
    out, n = re.subn(pattern, repl, text, count=1, flags=re.M)
    assert n == 1, f"{EXAMPLE.name}: no line matches {pattern!r}; update this test's copy step"
    return out


def _no_key(run_dir: Path) -> None:
    for p in run_dir.rglob("*"):
        if p.is_file() and p.suffix != ".sqlite":
            assert KEY.encode() not in p.read_bytes(), p
    for r in records(run_dir):
        assert KEY not in r.model_dump_json()


# ------------------------------------------------------------------------------ 1. the ablation


@pytest.fixture(scope="module")
def ablation(endpoint, cache, tmp_path_factory) -> tuple[Path, dict]:
    text = EXAMPLE.read_text(encoding="utf-8")
    text = _sub(r'^# base_url = "[^"]*"', f'base_url = "{endpoint}"', text)  # the example leaves it to $OPENAI_BASE_URL
    text = _sub(r'^api_key_env = ".*"', f'api_key_env = "{KEY_ENV}"', text)
    text = _sub(r"^# num_tasks = .*$", f"num_tasks = {NUM_TASKS}", text)
    text = _sub(r"^trials = \d+", f"trials = {TRIALS}", text)
    text = _sub(r'^shell = "stateless"', f'shell = "stateless"\ncache_dir = "{cache}"', text)
    path = tmp_path_factory.mktemp("ablation") / EXAMPLE.name
    path.write_text(text, encoding="utf-8")
    done = agentrig("run", path, "--json")
    assert done.returncode == 0, f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    out = json.loads(done.stdout)
    assert out["status"] == "done"
    return Path(out["run_dir"]), out


def test_every_arm_of_the_ablation_is_valid_and_solved(ablation):
    run_dir, out = ablation
    assert list(out["arms"]) == list(ARMS)
    planned = NUM_TASKS * TRIALS
    for arm, s in out["arms"].items():
        assert (s["planned"], s["valid"], s["invalid"], s["missing"]) == (planned, planned, 0, 0), (arm, s)
        assert s["mean_reward"] == 1.0, (arm, s)  # the scripted agent plays the solution, reminders or not
    _no_key(run_dir)


def test_the_plugin_runs_before_every_bash_step_and_never_enters_the_history(ablation):
    run_dir, _ = ablation
    for arm in ARMS:
        recs = records(run_dir, arm=arm, valid=True)
        assert len(recs) == NUM_TASKS * TRIALS
        for rec in recs:
            traj = rec.trajectory
            assert {c.purpose for c in traj.model_calls if c.role == "memory"} == PURPOSES[arm], arm
            triggers = [e for e in traj.events if e.kind == "memory.trigger"]
            if arm == "baseline":
                assert not triggers
                continue
            assert [e.data["step"] for e in triggers] == list(range(traj.counters["agent_steps"]))
            history = "\n".join(m.content or "" for m in traj.messages)
            assert all(e.data["injected"] not in history for e in triggers if e.data["injected"])
            if arm != "advisor":  # the scripted memory model names the task's first solution command
                first = triggers[0].data["edit"]["tool_calls"]
                assert [c["name"] for c in first] == ["memory_save_knowledge"]
                assert "first step of the task: run:" in first[0]["arguments"]["content"]
    shown = [e for r in records(run_dir, arm="full_bank") for e in r.trajectory.events
             if e.kind == "memory.trigger" and e.data["step"] > 0]
    assert shown and all(e.data["injected"] and "first step of the task" in e.data["injected"] for e in shown)


def test_compare_reports_each_variant_against_the_baseline(ablation):
    run_dir, _ = ablation
    for variant in VARIANTS:
        done = agentrig("compare", f"{run_dir}:baseline", f"{run_dir}:{variant}", "--json")
        assert done.returncode == 0, (variant, done.stdout[-2000:], done.stderr[-2000:])
        c = json.loads(done.stdout)
        assert c["comparable"] and c["mismatch"] == [], (variant, c["mismatch"])
        diffs = c["config"]["differences"]
        assert {d["path"] for d in diffs if d["kind"] == "intended"} == {"arm.plugins", "roles.memory"}, diffs
        assert all(d["kind"] != "mismatch" for d in diffs)
        assert c["paired"]["tasks"] == NUM_TASKS and c["metrics"]["pass^1"]["delta"] == 0.0


def test_analyze_and_the_report_have_the_memory_figures_and_per_test_components(ablation, tmp_path):
    run_dir, _ = ablation
    done = agentrig("analyze", run_dir, "--json")
    assert done.returncode == 0, done.stderr[-2000:]
    doc = json.loads(done.stdout)
    tasks = [t.id for t in load_tasks(builtin_tasks_dir())[0]][:NUM_TASKS]
    assert doc["arms"]["baseline"]["memory"] is None
    for variant in VARIANTS:
        m = doc["arms"][variant]["memory"]
        assert m["modes"] == [variant] and m["baseline"] == "baseline" and m["failed_calls"] == 0
        assert m["triggers"] == m["agent_steps"] > 0 and m["ab"]["comparable"]
    comps = doc["arms"]["baseline"]["overall"]["components"]
    assert {name.split("::")[0] for name in comps} == set(tasks)
    assert all("::test_" in name for name in comps)
    html = write_report([run_dir], tmp_path / "report.html").read_text(encoding="utf-8")
    memory = html[html.index('id="memory"'):]
    assert all(f">{v}<" in memory for v in VARIANTS)  # a row per variant in the Memory section


# -------------------------------------------------------- 2. a terminal run: analysis, A/B, report

MIXED_ARMS = """
[[arms]]
name = "oracle"
agent = { kind = "oracle" }
[[arms]]
name = "noop"
agent = { kind = "noop" }
[[arms]]
name = "bash"
agent = { kind = "bash" }
[[arms]]
name = "bash-text"
agent = { kind = "bash", tool_mode = "text" }
plugins = [{ kind = "memory", mode = "selective" }]
[[arms]]
name = "bash-short"
agent = { kind = "bash", step_limit = 1 }
"""


@pytest.fixture(scope="module")
def mixed(cache, tmp_path_factory) -> tuple[Path, list[str], list[dict]]:
    tmp = tmp_path_factory.mktemp("mixed")
    tasks = tmp / "tasks"
    for name in ("write-marker", "fix-python-bug"):
        shutil.copytree(builtin_tasks_dir() / name, tasks / name)
    steps = "".join(f"- command: {json.dumps(c)}\n" for c in (FAILING, FIX))
    write_task(tasks, RETRY_TASK, solution=None, solution_yaml=steps,
               test="from pathlib import Path\n\ndef test_settings():\n"
                    "    assert Path('/app/config/settings.ini').read_text() == 'mode=fast\\n'\n")
    path = tmp / "mixed.toml"
    with serve(tasks, record=True) as endpoint:
        done = _run_mixed(path, tasks, tmp, endpoint, cache)
        with urllib.request.urlopen(endpoint.rsplit("/v1", 1)[0] + "/_fake/requests", timeout=30) as answer:
            recorded = json.loads(answer.read())
    assert done.returncode == 0, f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    out = json.loads(done.stdout)
    assert out["status"] == "done"
    # bash-short stops after one reply: enough for the two tasks whose solution is one command,
    # not for retry-config (its first command fails)
    assert {a: (s["valid"], round(s["mean_reward"], 3)) for a, s in out["arms"].items()} == {
        "oracle": (6, 1.0), "noop": (6, 0.0), "bash": (6, 1.0), "bash-text": (6, 1.0), "bash-short": (6, 0.667)}
    _no_key(Path(out["run_dir"]))
    agent_requests = [r for r in recorded if (r.get("headers") or {}).get("x-agentrig-role") == "agent"]
    return Path(out["run_dir"]), sorted(p.name for p in tasks.iterdir()), agent_requests


def _run_mixed(path: Path, tasks: Path, tmp: Path, endpoint: str, cache: Path) -> subprocess.CompletedProcess:
    path.write_text(textwrap.dedent(f"""
        name = "terminal-mixed"
        [benchmark]
        kind = "terminal"
        tasks = "{tasks}"
        [sandbox]
        cache_dir = "{cache}"
        [run]
        seed = 300
        trials = 2
        concurrency = 4
        dir = "{tmp / 'runs' / 'mixed'}"
        [channel]
        base_url = "{endpoint}"
        api_key_env = "{KEY_ENV}"
        [roles.agent]
        model = "solution"
        [roles.memory]
        model = "solution"
    """) + MIXED_ARMS)
    return agentrig("run", path, "--json")


def test_analyze_json_has_per_test_components_and_terminal_failure_classes(mixed):
    run_dir, task_ids, _ = mixed
    done = agentrig("analyze", run_dir, "--json")
    assert done.returncode == 0, done.stderr[-2000:]
    doc = json.loads(done.stdout)
    comps = doc["arms"]["oracle"]["overall"]["components"]
    assert f"{RETRY_TASK}::test_settings" in comps and "fix-python-bug::test_visible_tests_pass" in comps
    assert {n.split("::")[0] for n in comps} == set(task_ids)
    noop = doc["arms"]["noop"]["overall"]["components"]
    assert noop[f"{RETRY_TASK}::test_settings"]["passed"] == 0  # the shape: trials, passed, in basis
    classes = {a: {c["id"]: c["primary"] for c in doc["arms"][a]["failures"]["classes"] if c["primary"]}
               for a in ("noop", "bash-short")}
    assert classes == {"noop": {"wrong_output": 6}, "bash-short": {"limits_exceeded": 2}}
    short = doc["arms"]["bash-short"]["failures"]["classes"]
    limits = next(c for c in short if c["id"] == "limits_exceeded")
    assert [e["task_id"] for e in limits["examples"]] == [RETRY_TASK, RETRY_TASK]
    assert next(c for c in short if c["id"] == "wrong_output")["secondary"] == 2  # its test failed too
    ids = [c["id"] for c in doc["arms"]["noop"]["failures"]["classes"]]
    for name in ("agent_timeout", "test_timeout", "parse_error", "format_errors", "limits_exceeded",
                 "never_submitted", "wrong_output", "broke_environment"):
        assert name in ids
    # divergence on the command sequences: the scripted agent repeats its commands exactly
    for row in doc["arms"]["bash"]["consistency"]:
        assert row["distinct_chains"] == 1 and row["mean_calls"] >= 2, row
    text = agentrig("analyze", run_dir)
    assert text.returncode == 0 and "Wrong output (tests failed)" in text.stdout
    assert "Limits exceeded" in text.stdout and f"{RETRY_TASK}::test_settings" in text.stdout


def test_the_memory_bank_learns_the_failed_command_and_its_fix(mixed):
    run_dir, _, _ = mixed
    recs = [r for r in records(run_dir, arm="bash-text", valid=True) if r.key.task_id == RETRY_TASK]
    assert len(recs) == 2
    for rec in recs:
        saved = [c for e in rec.trajectory.events if e.kind == "memory.trigger"
                 for c in e.data["edit"]["tool_calls"] if c["name"] == "memory_save_procedural"]
        assert [c["ok"] for c in saved] == [True, True]
        failed, fixed = (c["arguments"]["content"] for c in saved)
        assert failed.startswith(f"command `{FAILING}` failed (exit code 1): cat: /app/config/settings.ini")
        assert fixed.startswith(f"after `{FAILING}` failed, `mkdir -p /app/config")
        last = [e for e in rec.trajectory.events if e.kind == "memory.trigger"][-1]
        assert last.data["edit"]["bank_size"]["procedural"] == 2


def test_a_terminal_ab_compare_completes(mixed):
    run_dir, _, _ = mixed
    done = agentrig("compare", f"{run_dir}:bash", f"{run_dir}:bash-text", "--json")
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
    c = json.loads(done.stdout)
    assert c["comparable"] and c["mismatch"] == [] and c["paired"]["tasks"] == 3
    intended = {d["path"] for d in c["config"]["differences"] if d["kind"] == "intended"}
    assert "arm.plugins" in intended and any(p.startswith("arm.agent") for p in intended), intended
    text = agentrig("compare", f"{run_dir}:bash", f"{run_dir}:bash-text")
    assert text.returncode == 0 and "bash-text" in text.stdout


def test_the_report_shows_commands_and_outputs_in_chromium(mixed, tmp_path):
    chromium = find_chromium()
    if chromium is None:
        pytest.skip("chromium not found (`apt-get install -y chromium`)")
    run_dir, _, _ = mixed
    report = write_report([run_dir], tmp_path / "report.html")

    async def look() -> dict:
        async with await Browser.launch(tmp_path / "profile", chromium) as browser:
            page = await browser.page()
            await page.goto(report.resolve().as_uri())
            grid = json.loads(await page.eval("document.getElementById('grid-data').textContent"))
            arm = [a["arm"] for a in grid["arms"]].index("bash-text")
            task = [t[1] for t in grid["tasks"]].index(RETRY_TASK)
            await page.eval(f"window.agentrigReport.open({arm}, {task}, 0)")
            await page.eval("new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
            found = await page.eval("""(() => {
              const v = document.getElementById('viewer');
              const q = (s) => [...v.querySelectorAll(s)].map((n) => n.textContent);
              return {code: q('.toolcall pre.code'), calls: q('.toolcall'), results: q('.msg.user.result'),
                      who: q('.msg.user.result .who'), events: q('.event .hinted'),
                      tests: q('.event .hinted table td'), visible: v.offsetHeight > 0};
            })()""")
            found["errors"] = list(page.errors)
            return found

    seen = asyncio.run(look())
    assert seen["errors"] == [] and seen["visible"]
    assert seen["code"][:2] == [FAILING, FIX]  # the commands as code, not as {"command": …}
    assert not any('{"command"' in c for c in seen["calls"])
    assert seen["results"][0].count("exit code: 1") == 1 and "No such file or directory" in seen["results"][0]
    assert all(w.startswith("result of bash") for w in seen["who"])
    assert any(e.startswith("command ran") and "exit code 1" in e for e in seen["events"])
    assert "test_settings" in seen["tests"] and "passed" in seen["tests"]


def test_reminders_reach_the_bash_agents_next_call_only(mixed):
    run_dir, _, agent_requests = mixed
    injected_total = 0
    for rec in records(run_dir, arm="bash-text", valid=True):
        k = rec.key
        mine = [r["json"]["messages"] for r in sorted(agent_requests, key=lambda r: r["t_start"])
                if (r["headers"].get("x-agentrig-arm"), r["headers"].get("x-agentrig-task"),
                    r["headers"].get("x-agentrig-trial")) == ("bash-text", k.task_id, str(k.trial))]
        triggers = [e.data for e in rec.trajectory.events if e.kind == "memory.trigger"]
        assert len(mine) == len(triggers) == rec.trajectory.counters["agent_steps"]  # no faults: one request a step
        for step, (trigger, messages) in enumerate(zip(triggers, mine)):
            assert trigger["step"] == step
            last = messages[-1]
            if trigger["injected"]:
                injected_total += 1  # the reminder is the request's last, extra system message
                assert last == {"role": "system", "content": trigger["injected"]}
                assert trigger["injected"].startswith("Note from your memory assistant")
            else:
                assert not (last["role"] == "system" and "memory assistant" in (last.get("content") or ""))
            # and never in what the agent keeps: no earlier message of the request holds a reminder
            assert not any("Note from your memory assistant" in (m.get("content") or "") for m in messages[:-1])
    assert injected_total > 0
