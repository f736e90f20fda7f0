"""Acceptance of issue 12 through the real stack: experiment TOML → `agentrig run` (a subprocess)
→ the LLM bash agent → the channel → the solution-scripting endpoint (its own process,
`python -m agentrig.bench.terminal.scripted.solution_endpoint`) → commands in bwrap sandboxes → the verifier →
the SQLite store; then `--smoke`, `analyze --json` and the exports read back.

- the bash agent solves every built-in task in both tool modes (native tool calls, text blocks);
- with 20% of the requests answered 429 / 500 / malformed, every trial is valid and solved and
  the retries are counted in the store, in `run --json` and in `analyze --json`;
- SIGKILL of `agentrig run` in the middle, then the same command again: every planned trial is
  stored valid exactly once and the trials finished before the kill are kept as they were;
- a wrong model or key stops the run with the doctor's diagnosis (exit 1, no traceback), and
  `--smoke` says the same in seconds; a model whose replies are no actions fails `--smoke`;
- `--smoke` prints the trial's thought, action, observation and submission;
- the `terminal-bench` and `mini-swe-agent` exports hold what the store holds;
- the API key (a distinctive value) appears nowhere in the run directory.
"""

from __future__ import annotations

import json
import math
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
import zlib
from collections import Counter
from pathlib import Path

import pytest

from agentrig.store.store import Store
from agentrig.testing.store_watch import valid_count

from tests.support import EndpointProcess

from .run_support import BUILTIN_TASKS, experiment, records
from .sandbox_support import needs_root_bwrap

pytestmark = needs_root_bwrap()

KEY_ENV = "AGENTRIG_SOLUTION_RUN_KEY"
KEY = "sk-bashrun-Hq4Tz8Wm2Lc6Vn9Rb3Xp"
TASK_IDS = sorted(t.id for t in BUILTIN_TASKS)
MODES = ("native", "text")
FAULT_TASKS = ["fix-python-bug", "harbor-dedupe-emails", "shell-session-state", "stale-lock", "write-marker"]


WRONG_KEY_ENV = "AGENTRIG_T12_WRONG_KEY"


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENTRIG_SOLUTION"))}
    env.update({KEY_ENV: KEY, WRONG_KEY_ENV: "sk-not-the-right-one-0000", "PYTHONUNBUFFERED": "1", "COLUMNS": "200"})
    return env


def _agentrig(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    exe = str(Path(sys.executable).with_name("agentrig"))
    return subprocess.run([exe, *map(str, args)], capture_output=True, text=True, timeout=timeout, env=_env())


def _run(toml: Path, *extra: str) -> dict:
    done = _agentrig("run", toml, "--json", *extra)
    assert done.returncode == 0, f"agentrig run failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    return json.loads(done.stdout)


class SolutionServer(EndpointProcess):
    """The solution endpoint as its own process (its CLI), accepting the key held in KEY_ENV."""

    def __init__(self, *extra: str):
        super().__init__("agentrig.bench.terminal.scripted.solution_endpoint", "--api-key-env", KEY_ENV, *extra, env=_env())


def bash_experiment(tmp: Path, name: str, base_url: str, cache: Path, *, modes=MODES, task_ids=None,
                    trials: int = 1, concurrency: int = 6, model: str = "solution", key_env: str = KEY_ENV) -> Path:
    arms = "".join(f'\n[[arms]]\nname = "{m}"\nagent = {{ kind = "bash", tool_mode = "{m}" }}\n' for m in modes)
    channel = f"""
[channel]
base_url = "{base_url}"
api_key_env = "{key_env}"
model = "{model}"
timeout_s = 30
max_attempts = 12
backoff_base_s = 0.01
backoff_max_s = 0.1
"""
    return experiment(tmp, name, channel + arms, cache=cache, run=f"trials = {trials}\nconcurrency = {concurrency}",
                      benchmark=f"task_ids = {json.dumps(task_ids)}" if task_ids else "")


def assert_no_key(run_dir: Path) -> None:
    needles = [KEY.encode(), KEY[9:25].encode()]
    files = [p for p in Path(run_dir).rglob("*") if p.is_file()]
    assert any(p.name == "trials.sqlite" for p in files)
    for p in files:
        raw = p.read_bytes()
        assert not any(n in raw for n in needles), f"the API key (or a piece of it) is in {p}"
        if p.name.endswith(".sqlite"):
            conn = sqlite3.connect(f"file:{p}?mode=ro", uri=True)
            try:
                for (blob,) in conn.execute("SELECT record FROM trials"):
                    assert not any(n in zlib.decompress(blob) for n in needles), f"the key is in a record of {p}"
            finally:
                conn.close()


def assert_solved_once(run_dir: Path, keys: set[tuple]) -> list:
    """Every planned trial stored valid exactly once, solved by submitting; returns the valid records."""
    valid = records(run_dir, valid=True)
    counted = Counter((r.key.arm, r.key.task_id, r.key.trial) for r in valid)
    assert set(counted) == keys and set(counted.values()) == {1}, (len(counted), len(keys))
    unsolved = {(r.key.arm, r.key.task_id): (r.verdict.termination, r.verdict.reward_info.notes)
                for r in valid if r.verdict.reward != 1.0 or r.verdict.termination != "submitted"}
    assert not unsolved, unsolved
    return valid


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("bash-runs-cache")


@pytest.fixture(scope="module")
def server():
    s = SolutionServer()
    yield s
    s.stop()


@pytest.fixture(scope="module")
def solved_run(tmp_path_factory, cache, server):
    tmp = tmp_path_factory.mktemp("bash-runs")
    toml = bash_experiment(tmp, "solved", server.base_url, cache)
    return toml, _run(toml)


# ------------------------------------------------------------------------------------ the runs


def test_the_bash_agent_solves_every_builtin_task_in_both_tool_modes(solved_run):
    _, doc = solved_run
    assert doc["status"] == "done" and doc["played"] == len(TASK_IDS) * len(MODES)
    recs = assert_solved_once(Path(doc["run_dir"]), {(m, t, 0) for m in MODES for t in TASK_IDS})
    for r in recs:
        calls = [c for m in r.trajectory.messages for c in m.tool_calls]
        commands = [e for e in r.trajectory.events if (e.plugin, e.kind) == ("sandbox", "command")]
        assert calls and len(calls) == len(commands) and all(c.name == "bash" for c in calls)
        observations = [m for m in r.trajectory.messages if m.role == ("tool" if r.key.arm == "native" else "user")
                        and (m.content or "").startswith("exit code:")]
        assert len(observations) == len(commands)
        assert r.trajectory.counters.get("format_errors", 0) == 0
        assert [e.data["submission"] for e in r.trajectory.events if e.kind == "submit"] == ["solution played\n"]
        if r.key.arm == "text":  # the actions were text blocks: no tool was offered, ids are ours
            assert all(c.id.startswith("text-") for c in calls)
    assert_no_key(Path(doc["run_dir"]))


def test_smoke_shows_thought_action_observation_and_submission(solved_run):
    toml, _ = solved_run
    done = _agentrig("run", toml, "--smoke")
    assert done.returncode == 0, done.stderr[-2000:]
    text = done.stdout
    assert text.count("task terminal/write-marker: submitted, reward 1") == 2
    for label in ("thought", "action", "observation", "submission", "tests"):
        assert text.count(f"\n  {label} ") >= 2, (label, text)
    assert "echo agentrig-ok > /app/marker.txt" in text and "AGENTRIG_SUBMIT" in text
    assert "1/1 passed: resolved" in text and "smoke check passed" in text
    doc = json.loads(_agentrig("run", toml, "--smoke", "--json").stdout)
    assert doc["ok"] and [a["arm"] for a in doc["arms"]] == list(MODES)
    for arm in doc["arms"]:
        labels = [line["label"] for line in arm["transcript"]]
        assert labels[:3] == ["thought", "action", "observation"] and labels[-2:] == ["submission", "tests"]
        assert arm["transcript"][-2]["text"] == "solution played"


def test_the_same_command_again_plays_nothing(solved_run):
    toml, doc = solved_run
    again = _run(toml)
    assert again["played"] == 0 and again["stored"] == 0
    assert len(records(doc["run_dir"])) == len(TASK_IDS) * len(MODES)


def test_under_20_percent_faults_every_trial_is_valid_and_solved_and_retries_counted(tmp_path, cache):
    server = SolutionServer("--fault-rate", "0.2", "--fault-kinds", "rate_limit,server_error,malformed", "--seed", "12")
    try:
        toml = bash_experiment(tmp_path, "faults", server.base_url, cache, task_ids=FAULT_TASKS)
        doc = _run(toml)
    finally:
        server.stop()
    run_dir = Path(doc["run_dir"])
    assert doc["status"] == "done"
    assert_solved_once(run_dir, {(m, t, 0) for m in MODES for t in FAULT_TASKS})
    assert not records(run_dir, valid=False)  # the channel's retries absorbed every fault
    with Store.open(run_dir / "trials.sqlite", create=False) as store:
        calls = store.model_call_rows()
    stored_retries = sum(c["retries"] for c in calls)
    causes = Counter(c for row in calls for c in (row["retry_causes"] or "").split(",") if c)
    assert {"rate_limited", "server_error", "malformed"} <= set(causes), causes
    assert stored_retries > 0 and sum(doc["arms"][m]["retries"] for m in MODES) == stored_retries
    proc = _agentrig("analyze", run_dir, "--json")
    assert proc.returncode == 0, proc.stderr[-2000:]
    analysis = json.loads(proc.stdout)
    counted = sum(role["retries"] for m in MODES for role in analysis["arms"][m]["usage"]["roles"])
    assert counted == stored_retries
    by_cause = Counter()
    for m in MODES:
        for role in analysis["arms"][m]["usage"]["roles"]:
            by_cause.update(role["retries_by_cause"])
    assert dict(by_cause) == dict(causes)
    assert_no_key(run_dir)


def test_sigkill_mid_run_then_the_same_command_stores_every_trial_once(tmp_path, cache):
    task_ids, trials = ["csv-region-totals", "stale-lock", "word-frequency", "write-marker"], 2
    server = SolutionServer("--delay-ms", "250")  # slow replies: the kill lands mid-run
    try:
        toml = bash_experiment(tmp_path, "kill", server.base_url, cache, modes=("native",), task_ids=task_ids,
                               trials=trials, concurrency=2)
        db = tmp_path / "runs" / "kill" / "trials.sqlite"
        exe = str(Path(sys.executable).with_name("agentrig"))
        proc = subprocess.Popen([exe, "run", str(toml), "--json"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                env=_env())
        deadline = time.monotonic() + 180
        while valid_count(db) < 2 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert proc.poll() is None, f"the run ended before the kill: {proc.stderr.read()[-2000:]}"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        assert proc.returncode == -signal.SIGKILL
        with Store.open(db, create=False) as store:
            before = {r.key: r.started_at for r in store.verdict_rows(valid=True)}
        planned = {("native", t, i) for t in task_ids for i in range(trials)}
        assert 2 <= len(before) < len(planned)
        doc = _run(toml)
    finally:
        server.stop()
    assert doc["status"] == "done" and doc["played"] == len(planned) - len(before)
    assert_solved_once(db.parent, planned)
    with Store.open(db, create=False) as store:
        after = {r.key: r.started_at for r in store.verdict_rows(valid=True)}
    assert all(after[k] == v for k, v in before.items())  # kept, not replayed


@pytest.mark.parametrize("wrong", ["model", "key"])
def test_a_wrong_model_or_key_stops_with_the_doctors_diagnosis(tmp_path, cache, server, wrong):
    # every task, 8 at a time: the fatal error lands while other trials' sandboxes are starting
    if wrong == "model":
        toml = bash_experiment(tmp_path, "wrong", server.base_url, cache, model="no-such-model", concurrency=8)
        code = "MODEL_NOT_FOUND"
    else:
        toml = bash_experiment(tmp_path, "wrong", server.base_url, cache, key_env=WRONG_KEY_ENV, concurrency=8)
        code = "AUTH_REJECTED"
    done = _agentrig("run", toml, "--json")
    assert done.returncode == 1, done.stderr[-2000:]
    doc = json.loads(done.stdout)
    assert doc["status"] == "fatal" and doc["error"]["code"] == code and doc["error"]["role"] == "agent"
    assert doc["error"]["fix"] and doc["stored"] == 0
    assert code in done.stderr and "fix:" in done.stderr
    # the sandboxes the stop cancelled are closed before the loop is: no transport outlives it
    assert "Exception ignored" not in done.stderr and "Event loop is closed" not in done.stderr, done.stderr[-3000:]
    smoke = _agentrig("run", toml, "--smoke")
    assert smoke.returncode == 1
    assert re.search(rf"✗ agent +{code}", smoke.stdout) and "fix:" in smoke.stdout and "smoke check failed" in smoke.stdout
    assert "Traceback" not in smoke.stderr


def test_smoke_fails_when_the_models_replies_are_no_actions(tmp_path, cache):
    """A model that answers in prose (the fake endpoint's 'OK'): the smoke check shows the replies
    and the format errors and fails, in both tool modes."""
    fake = subprocess.Popen([sys.executable, "-m", "agentrig.testing.fake_endpoint", "--api-key-env", KEY_ENV],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env(), text=True)
    try:
        base_url = fake.stdout.readline().strip()
        toml = bash_experiment(tmp_path, "prose", base_url, cache, model="fake-model")
        done = _agentrig("run", toml, "--smoke", "--json")
    finally:
        fake.send_signal(signal.SIGTERM)
        fake.wait(timeout=10)
    assert done.returncode == 1, done.stderr[-2000:]
    doc = json.loads(done.stdout)
    assert not doc["ok"]
    for arm in doc["arms"]:
        assert arm["termination"] == "format_errors" and "could not be parsed into actions" in arm["problem"]
        labels = [line["label"] for line in arm["transcript"]]
        assert labels.count("format error") == 3 and labels.count("reply") == 3 and "action" not in labels
        assert all(r["status"] == "ok" for r in arm["roles"])  # the endpoint answers: the replies are the problem


# ------------------------------------------------------------------------------------ exports


def test_terminal_bench_results_json_holds_what_the_store_holds(solved_run):
    _, doc = solved_run
    run_dir = Path(doc["run_dir"])
    done = _agentrig("export", run_dir, "--format", "terminal-bench")
    assert done.returncode == 0, done.stderr
    assert f"wrote {len(TASK_IDS) * len(MODES)} trial result(s)" in done.stdout
    config = json.loads((run_dir / "config.json").read_text())
    instructions = {t.id: t.instruction for t in BUILTIN_TASKS}
    for arm in MODES:
        results = json.loads((run_dir / "exports" / "terminal-bench" / arm / "results.json").read_text())
        stored = {r.key.task_id: r for r in records(run_dir, arm=arm, valid=True)}
        assert [r["task_id"] for r in results["results"]] == sorted(stored)
        for entry in results["results"]:
            rec = stored[entry["task_id"]]
            result = next(e.data for e in rec.trajectory.events if e.kind == "result")
            tests = result["tests"]
            # Terminal-Bench's trial name and folder (attempts from 1, the arm as its run id); agentrig's index kept
            assert entry["trial_name"] == f"{rec.key.task_id}.1-of-1.{arm}"
            assert entry["agentrig"]["trial"] == 0 and entry["agentrig"]["run_id"] == config["run_id"]
            folder = run_dir / "exports" / "terminal-bench" / arm / rec.key.task_id / entry["trial_name"]
            assert json.loads((folder / "results.json").read_text()) == entry
            assert entry["instruction"] == instructions[rec.key.task_id]
            assert entry["is_resolved"] is True and entry["failure_mode"] == "unset"
            if result["format"] == "tb1":  # TB1 tasks: the pytest results by name
                assert tests and entry["parser_results"] == {t["name"]: "passed" for t in tests}
            else:  # Harbor tasks: the reward file decides (a pytest summary's tests are for the record only)
                assert entry["parser_results"] is None and rec.key.task_id.startswith("harbor-")
            calls = rec.trajectory.model_calls
            assert entry["total_input_tokens"] == sum(c.usage.prompt_tokens for c in calls) > 0
            assert entry["total_output_tokens"] == sum(c.usage.completion_tokens for c in calls) > 0
            assert entry["n_commands"] == sum(1 for e in rec.trajectory.events if e.kind == "command")
            assert entry["trial_started_at"] <= entry["agent_ended_at"] <= entry["trial_ended_at"]
        assert results["n_resolved"] == len(TASK_IDS) and results["n_unresolved"] == 0
        assert results["accuracy"] == 1.0 and results["resolved_ids"] == sorted(stored)
        assert results["pass_at_k"] == {}  # one trial per task: Terminal-Bench lists no k
        meta = json.loads((run_dir / "exports" / "terminal-bench" / arm / "run_metadata.json").read_text())
        assert meta["accuracy"] == 1.0 and meta["n_attempts"] == 1 and meta["model_name"] == "solution"
        assert meta["task_ids"] == TASK_IDS
    assert_no_key(run_dir)


def test_every_export_numbers_a_trial_as_its_label_does(solved_run, tmp_path):
    """One numbering (issue 23.11e): the trial index of the store's key, 0-based — in the label
    (ARM/DOMAIN/TASK#N), the jsonl records, mini-SWE-agent's file names and the `agentrig.trial` of
    Terminal-Bench's entries; Terminal-Bench's own trial names are its attempts, N + 1 (issue 31.10)."""
    _, doc = solved_run
    run_dir = Path(doc["run_dir"])
    for fmt in ("jsonl", "terminal-bench", "mini-swe-agent"):
        done = _agentrig("export", run_dir, "--format", fmt, "--out", tmp_path / fmt)
        assert done.returncode == 0, done.stderr
    stored = {(r.key.arm, r.key.task_id): r.key for r in records(run_dir, valid=True)}
    lines = [x for line in (tmp_path / "jsonl").read_text().splitlines() if (x := json.loads(line))["verdict"]["valid"]]
    run_id = json.loads((run_dir / "config.json").read_text())["run_id"]
    assert {(x["key"]["arm"], x["key"]["task_id"]): x["key"]["trial"] for x in lines} == \
        {k: key.trial for k, key in stored.items()} and {key.trial for key in stored.values()} == {0}
    for (arm, task), key in stored.items():
        assert key.label().endswith(f"#{key.trial}")
        assert (tmp_path / "mini-swe-agent" / arm / task / f"{task}.trial-{key.trial}.traj.json").is_file()
        results = json.loads((tmp_path / "terminal-bench" / arm / "results.json").read_text())["results"]
        entries = [e for e in results if e["task_id"] == task]
        assert [e["agentrig"]["trial"] for e in entries] == [key.trial] and entries[0]["agentrig"]["run_id"] == run_id
        # Terminal-Bench's own name and folder count attempts from 1, as its tools require
        assert [e["trial_name"] for e in entries] == [f"{task}.{key.trial + 1}-of-1.{arm}"]


def test_terminal_bench_pass_at_k_is_terminal_benchs_estimate():
    from agentrig.bench.terminal.export_tb import pass_at_k

    outcomes = {"a": [1, 0, 0, 0, 1, 0, 0, 0, 0, 0], "b": [0] * 10, "c": [1] * 10}
    results = [{"task_id": t, "is_resolved": bool(x)} for t, xs in outcomes.items() for x in xs]
    got = pass_at_k(results)
    assert list(got) == ["2", "4", "5", "8", "10"]

    def estimate(n, c, k):
        return 1.0 if n - c < k else 1 - math.comb(n - c, k) / math.comb(n, k)
    for k in (2, 4, 5, 8, 10):
        assert got[str(k)] == pytest.approx((estimate(10, 2, k) + 0.0 + 1.0) / 3)
    assert pass_at_k([{"task_id": "a", "is_resolved": True}]) == {}


def test_mini_swe_agent_trajectories_hold_what_the_store_holds(solved_run, tmp_path):
    _, doc = solved_run
    run_dir = Path(doc["run_dir"])
    out = tmp_path / "mini"
    done = _agentrig("export", run_dir, "--format", "mini-swe-agent", "--out", out)
    assert done.returncode == 0, done.stderr
    files = sorted(out.rglob("*.traj.json"))
    assert len(files) == len(TASK_IDS) * len(MODES)
    for arm in MODES:
        for rec in records(run_dir, arm=arm, valid=True):
            k = rec.key
            traj = json.loads((out / arm / k.task_id / f"{k.task_id}.trial-{k.trial}.traj.json").read_text())
            assert traj["trajectory_format"] == "mini-swe-agent-1.1"
            info = traj["info"]
            assert info["exit_status"] == "Submitted" and info["submission"] == "solution played\n"
            assert info["model_stats"]["api_calls"] == len(rec.trajectory.model_calls)
            assert info["model_stats"]["instance_cost"] == 0.0  # no [prices] for model "solution"
            assert info["config"]["model"]["model_name"] == "solution"
            assert info["config"]["agent"]["tool_mode"] == arm and info["agentrig"]["reward"] == 1.0
            msgs = traj["messages"]
            assert [m["role"] for m in msgs[:-1]] == [m.role for m in rec.trajectory.messages]
            assert [m["content"] for m in msgs[:-1]] == [m.content or "" for m in rec.trajectory.messages]
            assert msgs[-1]["role"] == "exit" and msgs[-1]["extra"]["exit_status"] == "Submitted"
            actions = [a["command"] for m in msgs if m["role"] == "assistant" for a in m["extra"]["actions"]]
            assert actions == [e.data["command"] for e in rec.trajectory.events if e.kind == "command"]
            codes = [m["extra"]["returncode"] for m in msgs if "returncode" in m["extra"]]
            assert codes == [e.data["exit_code"] for e in rec.trajectory.events if e.kind == "command"]
            native_calls = [m for m in msgs if m["role"] == "assistant" and "tool_calls" in m]
            assert bool(native_calls) == (arm == "native")  # text mode's actions are in the content
            if arm == "native":
                assert all(m["tool_calls"][0]["function"]["name"] == "bash" for m in native_calls)
                assert all("tool_call_id" in m for m in msgs if m["role"] == "tool")
    assert not any(KEY.encode() in p.read_bytes() for p in files)


def test_terminal_export_refuses_an_unknown_arm(solved_run):
    _, doc = solved_run
    done = _agentrig("export", doc["run_dir"], "--format", "terminal-bench", "--arm", "nope")
    assert done.returncode == 1 and "no arm 'nope' in this run; arms: native, text" in done.stderr
    assert "Traceback" not in done.stderr


def test_export_out_is_a_directory_or_a_file_as_the_format_writes(solved_run, tmp_path):
    """Issue 31.10: `-o …/results.json` for terminal-bench made a folder of that name. The tools'
    formats take a directory, jsonl and tau2 a file; a path of the other kind is refused (exit 1,
    one line naming the option and the fix) and nothing is written."""
    _, doc = solved_run
    run_dir = doc["run_dir"]
    a_file = tmp_path / "taken.json"
    a_file.write_text("{}")
    cases = [("terminal-bench", tmp_path / "out" / "results.json", "writes a directory (one folder per arm), not one file"),
             ("mini-swe-agent", a_file, "writes a directory (one folder per arm), and this is a file"),
             ("jsonl", tmp_path, "writes one file, and this is a directory")]
    for fmt, out, message in cases:
        done = _agentrig("export", run_dir, "--format", fmt, "-o", out)
        assert done.returncode == 1 and message in done.stderr and "--out" in done.stderr, (fmt, done.stderr)
        assert "Traceback" not in done.stderr
    assert not (tmp_path / "out").exists() and a_file.read_text() == "{}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken.json"]
    # an arm's folder that holds something else than an export is not replaced
    (tmp_path / "mine" / "native").mkdir(parents=True)
    (tmp_path / "mine" / "native" / "notes.txt").write_text("mine")
    done = _agentrig("export", run_dir, "--format", "terminal-bench", "--arm", "native", "-o", tmp_path / "mine")
    assert done.returncode == 1 and "is not a Terminal-Bench export (no results.json in it)" in done.stderr
    assert [p.name for p in (tmp_path / "mine" / "native").iterdir()] == ["notes.txt"]
    helped = _agentrig("export", "--help")
    text = " ".join(helped.stdout.split())
    assert "jsonl, tau2: the output FILE" in text and "the output DIRECTORY (one folder per arm inside)" in text


def test_mini_swe_agent_costs_come_from_the_runs_prices(solved_run):
    from agentrig.bench.terminal.export import _prices, mini_trajectory

    _, doc = solved_run
    run_dir = Path(doc["run_dir"])
    config = json.loads((run_dir / "config.json").read_text())
    config["experiment"]["prices"] = {"solution": {"input": 2.0, "output": 8.0}}  # USD per million tokens
    rec = next(r for r in records(run_dir, arm="native", valid=True) if r.key.task_id == "stale-lock")
    traj = mini_trajectory(rec, config, _prices(config))
    calls = rec.trajectory.model_calls
    want = sum(c.usage.prompt_tokens * 2.0 + c.usage.completion_tokens * 8.0 for c in calls) / 1e6
    assert want > 0 and traj["info"]["model_stats"]["instance_cost"] == pytest.approx(want)
    per_message = [m["extra"]["cost"] for m in traj["messages"] if m["role"] == "assistant"]
    assert len(per_message) == len(calls) and sum(per_message) == pytest.approx(want)


def test_smoke_plays_the_builtin_smoke_task_when_the_run_selects_its_own_tasks(tmp_path, cache, server):
    from .run_support import write_task

    tasks = tmp_path / "tasks"
    write_task(tasks, "my-own-task")
    toml = bash_experiment(tmp_path, "own", server.base_url, cache, modes=("native",))
    toml.write_text(toml.read_text().replace('kind = "terminal"', f'kind = "terminal"\ntasks = "{tasks}"')
                    + '\n[[arms]]\nname = "oracle"\nagent = { kind = "oracle" }\n')
    done = _agentrig("run", toml, "--smoke", "--json")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    doc = json.loads(done.stdout)
    assert [(a["arm"], a["task"], a["reward"]) for a in doc["arms"]] == [
        ("native", "terminal/write-marker", 1.0), ("oracle", "terminal/write-marker", 1.0)]
    oracle = [line["label"] for line in doc["arms"][1]["transcript"]]
    assert {"action", "observation"} <= set(oracle) and oracle[-2:] == ["submission", "tests"]
    assert [r["role"] for r in doc["arms"][1]["roles"]] == []  # a reference agent calls no model


@pytest.mark.parametrize("name", ["terminal.toml", "terminal_reference.toml",
                                  pytest.param("terminal_agents.toml", marks=pytest.mark.slow)])
def test_the_terminal_examples_pass_their_smoke_check(tmp_path, name):
    """examples/terminal.toml (and terminal_agents.toml: mini-swe-agent, Codex, Claude Code and the
    example command agent) against an endpoint named by $OPENAI_BASE_URL (the solution endpoint
    serving its model id), examples/terminal_reference.toml with no model at all."""
    from agentrig.agents.installed.toolroot import agents_dir
    from agentrig.bench.terminal.images import images_dir

    example = Path(__file__).resolve().parents[3] / "examples" / name
    server = SolutionServer("--models", "gpt-4.1")
    try:
        # a cache of its own (the task's layers), the machine's base roots and installed agents'
        # roots (built once; a fresh cache made every parameter build TB's ubuntu root with mmdebstrap)
        env = {**_env(), "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": KEY,
               "AGENTRIG_AGENTS_DIR": str(agents_dir()), "AGENTRIG_IMAGES_DIR": str(images_dir()),
               "XDG_CACHE_HOME": str(tmp_path / "cache")}
        exe = str(Path(sys.executable).with_name("agentrig"))
        done = subprocess.run([exe, "run", str(example), "--smoke", "--json", "--dir", str(tmp_path / "run")],
                              capture_output=True, text=True, timeout=600, env=env)
    finally:
        server.stop()
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    doc = json.loads(done.stdout)
    want = {"terminal.toml": ["native", "text"], "terminal_reference.toml": ["oracle", "flaky-oracle", "noop"],
            "terminal_agents.toml": ["mini", "codex", "claude", "mine"]}[name]
    assert doc["ok"] and [a["arm"] for a in doc["arms"]] == want
    assert {a["task"] for a in doc["arms"]} == {"terminal/write-marker"}
