"""AppWorld through the real stack (issue 25 acceptance): experiment TOML → the runner → our code
agent → the channel → a real local endpoint that plays each synthetic task's code → pooled
workers in AppWorld's own venv → AppWorld's own ``world.evaluate()`` → the SQLite store.

The synthetic tasks have the shape of AppWorld's real ones (engine/synthetic.py): every task has
``assert answers match.`` (a no-op fails it) and ``assert model changes match <models>.``; the
oracle runs the whole compiled solution (helpers and all) as AppWorld's ``verify`` does.

- ``oracle`` passes every task; ``noop`` fails every task;
- the LLM code agent solves every task in native and text mode;
- a wrong answer and a collateral change fail, with AppWorld's own test names (the evaluation's
  requirements), classified ``wrong_answer`` / ``collateral_change``;
- 20% channel faults (429 / 500 / malformed) change no verdict;
- a worker killed in the middle of a trial makes it invalid, and it is replayed (valid);
- SIGKILL of ``agentrig run``, then the same command: every trial stored once.
"""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from rich.console import Console

from agentrig.benchmark import get_benchmark
from agentrig.commands.run import run_command
from agentrig.store.store import Store
from agentrig.bench.appworld.scripted.appworld_endpoint import AppWorldEndpoint
from agentrig.testing.fake_endpoint import ThreadedFakeEndpoint
from agentrig.testing.store_watch import valid_count

KEY_ENV = "AGENTRIG_APPWORLD_TEST_KEY"
KEY = "sk-appworld-test-5d1f0c9a7e"
ARMS = {  # arm → (agent table, model)
    "oracle": ('{ kind = "oracle" }', None),
    "noop": ('{ kind = "noop" }', None),
    "native": ('{ kind = "llm" }', "appworld-solution"),
    "text": ('{ kind = "llm", tool_mode = "text" }', "appworld-solution"),
    "wrong": ('{ kind = "llm" }', "appworld-wrong_answer"),
    "collateral": ('{ kind = "llm" }', "appworld-collateral"),
    "memory": ('{ kind = "llm" }\nplugins = [{ kind = "memory" }]', "appworld-solution"),
}


def experiment(path: Path, name: str, root: Path, python: Path, base_url: str, arms: dict, *, dataset: str = "dev",
               trials: int = 1, concurrency: int = 4, workers: int = 2, extra: str = "") -> Path:
    blocks = []
    for arm, (agent, model) in arms.items():
        roles = f'\nroles = {{ agent = {{ model = "{model}" }} }}' if model else ""
        blocks.append(f'[[arms]]\nname = "{arm}"\nagent = {agent}{roles}\n')
    path.write_text(textwrap.dedent(f"""\
        name = "{name}"
        [benchmark]
        kind = "appworld"
        data = "{root}"
        dataset = "{dataset}"
        python = "{python}"
        workers = {workers}
        [run]
        trials = {trials}
        concurrency = {concurrency}
        max_invalid_retries = 3
        {extra}
        [channel]
        base_url = "{base_url}"
        api_key_env = "{KEY_ENV}"
        max_attempts = 10
        [roles.agent]
        model = "appworld-solution"
        [roles.memory]
        model = "appworld-solution"
        """) + "\n".join(blocks), encoding="utf-8")
    return path


def records(run_dir: Path, valid: bool | None = True) -> list:
    with Store.open(run_dir / "trials.sqlite", create=False) as store:
        return list(store.records(valid=valid))


def outcomes(run_dir: Path) -> dict[tuple[str, str, int], float]:
    return {(r.key.arm, r.key.task_id, r.key.trial): r.verdict.reward for r in records(run_dir)}


def failed_tests(record) -> list[str]:
    ev = next(e for e in record.trajectory.events if e.plugin == "world" and e.kind == "evaluate")
    return [t["test"] for t in ev.data["tests"] if not t["passed"]]


@pytest.fixture(scope="module")
def clean_and_faulty(tmp_path_factory, synthetic_root, appworld_python):
    tmp = tmp_path_factory.mktemp("aw-runs")
    os.environ[KEY_ENV] = KEY
    runs = {}
    try:
        for label, rate in (("clean", 0.0), ("faulty", 0.2)):
            endpoint = AppWorldEndpoint(synthetic_root, api_key=KEY, fault_rate=rate, seed=11)
            with ThreadedFakeEndpoint(endpoint=endpoint) as served:
                arms = ARMS if label == "clean" else {k: v for k, v in ARMS.items() if v[1]}
                exp = experiment(tmp / f"{label}.toml", label, synthetic_root, appworld_python, served.base_url, arms)
                run_dir = tmp / label
                assert run_command(exp, run_dir=run_dir, as_json=True, out=Console(file=io.StringIO())) == 0
                runs[label] = run_dir
        yield runs
    finally:
        os.environ.pop(KEY_ENV, None)


def test_reference_and_llm_agents_through_the_engine(clean_and_faulty, synthetic_root):
    from agentrig.bench.appworld.synthetic import load

    spec = load(synthetic_root)["tasks"]
    tasks = set(spec)
    got = outcomes(clean_and_faulty["clean"])
    assert {t for (_a, t, _i) in got} == tasks
    for task in tasks:
        assert got[("oracle", task, 0)] == 1.0, task
        assert got[("noop", task, 0)] == 0.0, task
        assert got[("native", task, 0)] == 1.0 and got[("text", task, 0)] == 1.0, task
        assert got[("memory", task, 0)] == 1.0, task
        assert got[("wrong", task, 0)] == 0.0 and got[("collateral", task, 0)] == 0.0, task
    for r in records(clean_and_faulty["clean"]):
        if r.key.arm in ("oracle", "native", "text", "memory"):
            assert r.verdict.termination == "completed" and r.verdict.reward_info.components["task_goal_completion"] == 1.0
        if r.key.arm == "memory":  # the plug-in saved the task's first step and spoke before agent calls
            assert any(e.plugin == "memory" for e in r.trajectory.events), [e.kind for e in r.trajectory.events]
            assert any(c.role == "memory" for c in r.trajectory.model_calls)
        if r.key.arm == "text":  # one python block per reply, each run in the world, no format errors
            assert r.trajectory.counters.get("format_errors", 0) == 0
            assert sum(1 for e in r.trajectory.events if e.kind == "execute") == len(spec[r.key.task_id]["steps"])


def test_wrong_answer_and_collateral_change_fail_with_appworld_test_names(clean_and_faulty):
    bench = get_benchmark("appworld")
    by = {(r.key.arm, r.key.task_id): r for r in records(clean_and_faulty["clean"])}
    wrong = by[("wrong", "6b2d1ef_1")]
    assert failed_tests(wrong) == ["assert answers match."]
    assert bench.classify(wrong, None).primary == "wrong_answer"
    assert "6b2d1ef_1::assert answers match." in wrong.verdict.reward_info.components
    note = by[("wrong", "5a1c0de_1")]
    assert failed_tests(note) == ["assert the added note has the requested title and content"]
    assert bench.classify(note, None).primary == "wrong_state"
    for task in ("5a1c0de_1", "5a1c0de_2", "6b2d1ef_1", "8d4f3ab_1"):  # AppWorld's real "nothing else changed" names
        collateral = by[("collateral", task)]
        names = failed_tests(collateral)
        assert names and all(n.startswith(("assert model changes match", "assert no model changes")) for n in names), \
            (task, names)
        assert bench.classify(collateral, None).primary == "collateral_change", (task, names)
    noop = by[("noop", "5a1c0de_1")]
    label = bench.classify(noop, None)
    assert label.primary == "never_completed" and "wrong_state" in label.secondary


def test_the_worker_environment_holds_no_key(clean_and_faulty):
    from agentrig.bench.appworld.pool import worker_env

    assert KEY_ENV not in worker_env() and KEY not in repr(worker_env())
    for run_dir in clean_and_faulty.values():
        for path in run_dir.rglob("*"):
            if path.is_file():
                assert KEY.encode() not in path.read_bytes(), path


def test_smoke_transcript_shows_code_output_and_tests(clean_and_faulty):
    bench = get_benchmark("appworld")
    by = {(r.key.arm, r.key.task_id): r for r in records(clean_and_faulty["clean"])}
    lines = bench.smoke_transcript(by[("text", "6b2d1ef_1")])
    labels = [label for label, _ in lines]
    assert labels.count("code") == 3 and labels.count("output") == 3 and labels[-1] == "tests"
    assert lines[-1][1].startswith("2/2 passed: task success")
    wrong = bench.smoke_transcript(by[("wrong", "6b2d1ef_1")])[-1][1]
    assert "failed: assert answers match." in wrong
    assert bench.smoke_problem(by[("text", "6b2d1ef_1")]) is None


def test_analyze_shows_task_and_scenario_goal_completion(clean_and_faulty):
    exe = str(Path(sys.executable).with_name("agentrig"))
    done = subprocess.run([exe, "analyze", str(clean_and_faulty["clean"]), "--json"], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    import json

    arms = json.loads(done.stdout)["arms"]
    assert arms["oracle"]["figures"]["goal_completion"] == {"task_goal_completion": 1.0, "scenario_goal_completion": 1.0}
    # noop passes no task: each has `assert answers match.`, which a task never completed fails
    assert arms["noop"]["figures"]["goal_completion"] == {"task_goal_completion": 0.0, "scenario_goal_completion": 0.0}
    shown = subprocess.run([exe, "analyze", str(clean_and_faulty["clean"])], capture_output=True, text=True,
                           timeout=300, env={**os.environ, "COLUMNS": "200"}).stdout
    assert "AppWorld goal completion" in shown and "100.0%" in shown and "0.0%" in shown
    html = (clean_and_faulty["clean"] / "report.html").read_text(encoding="utf-8")  # the run's report draws it too
    assert "AppWorld goal completion" in html and "100.0%" in html


def test_export_appworlds_evaluation_document(clean_and_faulty, tmp_path):
    import json

    exe = str(Path(sys.executable).with_name("agentrig"))
    done = subprocess.run([exe, "export", str(clean_and_faulty["clean"]), "--format", "appworld", "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    noop = json.loads((tmp_path / "noop" / "evaluation.json").read_text())
    assert noop["aggregate"] == {"task_goal_completion": 0.0, "scenario_goal_completion": 0.0}
    one = noop["reruns"][0]["individual"]["6b2d1ef_1"]
    assert one["success"] is False and one["difficulty"] == 1 and one["num_tests"] == 2
    assert [f["requirement"] for f in one["failures"]] == ["assert answers match."]
    assert [(p["requirement"], p["label"]) for p in one["passes"]] == [("assert no model changes.", "no_op_pass")]
    assert one["failures"][0]["label"] == "no_op_fail" and "test.answer" in one["failures"][0]["trace"]
    oracle = json.loads((tmp_path / "oracle" / "evaluation.json").read_text())
    assert oracle["aggregate"] == {"task_goal_completion": 100.0, "scenario_goal_completion": 100.0}


def test_channel_faults_change_no_verdict(clean_and_faulty):
    clean, faulty = outcomes(clean_and_faulty["clean"]), outcomes(clean_and_faulty["faulty"])
    assert faulty and all(faulty[k] == clean[k] for k in faulty)
    recs = records(clean_and_faulty["faulty"], valid=None)
    assert all(r.verdict.valid for r in recs)
    retries = sum(len(c.attempts) - 1 for r in recs for c in r.trajectory.model_calls)
    assert retries > 0


def _kill_workers_of(pid: int, sig: int) -> int:
    killed = 0
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            stat = (proc / "stat").read_text()
            cmd = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == pid and any(part.endswith(b"engine/worker.py") for part in cmd):
            os.kill(int(proc.name), sig)
            killed += 1
    return killed


class _Killer:
    """Wraps the endpoint's responder: the first agent request of the victim task's first attempt
    kills (``sig`` SIGKILL) or freezes (SIGSTOP: a hung world) this process's AppWorld workers."""

    def __init__(self, inner, victim: str, sig: int = signal.SIGKILL):
        self.inner, self.victim, self.sig, self.killed = inner, victim, sig, 0

    def __call__(self, body, headers=None):
        from agentrig.testing._fake_server import REQUEST_HEADERS

        headers = headers if headers is not None else REQUEST_HEADERS.get()
        if (headers or {}).get("X-Agentrig-Task") == self.victim and not self.killed:
            msgs = body.get("messages") or []
            if any(m.get("role") == "tool" for m in msgs):  # after its first execution
                self.killed = _kill_workers_of(os.getpid(), self.sig)
                time.sleep(0.2)
        return self.inner(body, headers)


@pytest.mark.parametrize("sig,cause", [(signal.SIGKILL, "exited"), (signal.SIGSTOP, "did not answer")])
def test_a_killed_or_hung_worker_makes_the_trial_invalid_and_it_is_replayed(tmp_path, synthetic_root, appworld_python,
                                                                              sig, cause):
    os.environ[KEY_ENV] = KEY
    try:
        endpoint = AppWorldEndpoint(synthetic_root, api_key=KEY)
        killer = _Killer(endpoint.scripts, "7c3e2fa_1", sig)
        endpoint.responder = killer
        with ThreadedFakeEndpoint(endpoint=endpoint) as served:
            arms = {"native": ARMS["native"]}
            exp = experiment(tmp_path / "k.toml", "killed", synthetic_root, appworld_python, served.base_url, arms,
                             dataset="train", concurrency=1, workers=1,
                             extra="")
            text = exp.read_text().replace("workers = 1", "workers = 1\nexecute_timeout_s = 2\nworker_grace_s = 2")
            exp.write_text(text)
            assert run_command(exp, run_dir=tmp_path / "run", as_json=True, out=Console(file=io.StringIO())) == 0
    finally:
        os.environ.pop(KEY_ENV, None)
    assert killer.killed >= 1
    every = records(tmp_path / "run", valid=None)
    invalid = [r for r in every if not r.verdict.valid]
    assert [r.key.task_id for r in invalid] == ["7c3e2fa_1"]
    assert invalid[0].verdict.termination == "worker_error" and cause in invalid[0].verdict.invalid_cause
    valid = {r.key.task_id: r for r in every if r.verdict.valid}
    assert set(valid) == {"5a1c0de_1", "6b2d1ef_1", "7c3e2fa_1"}
    assert all(r.verdict.reward == 1.0 for r in valid.values())
    assert valid["7c3e2fa_1"].attempt == 1


def test_sigkill_of_the_runner_then_resume_stores_every_trial_once(tmp_path, synthetic_root, appworld_python):
    env = {**os.environ, KEY_ENV: KEY}
    endpoint = AppWorldEndpoint(synthetic_root, api_key=KEY, delay_s=0.15)
    with ThreadedFakeEndpoint(endpoint=endpoint) as served:
        exp = experiment(tmp_path / "kill.toml", "kill", synthetic_root, appworld_python, served.base_url,
                         {"native": ARMS["native"]}, trials=3, concurrency=2, workers=2)
        db = tmp_path / "runs" / "kill" / "trials.sqlite"
        exe = str(Path(sys.executable).with_name("agentrig"))
        proc = subprocess.Popen([exe, "run", str(exp), "--json"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
        deadline = time.monotonic() + 180
        while valid_count(db) < 3 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert proc.poll() is None, f"the run ended before the kill: {proc.stderr.read()[-2000:]}"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        with Store.open(db, create=False) as store:
            before = {r.key: r.started_at for r in store.verdict_rows(valid=True)}
        planned = {("native", t, i) for t in ("5a1c0de_1", "6b2d1ef_1", "7c3e2fa_1", "5a1c0de_2", "8d4f3ab_1")
                   for i in range(3)}
        assert 3 <= len(before) < len(planned)
        done = subprocess.run([exe, "run", str(exp), "--json"], capture_output=True, text=True, env=env, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
    every = records(db.parent, valid=True)
    keys = [(r.key.arm, r.key.task_id, r.key.trial) for r in every]
    assert sorted(keys) == sorted(planned) and len(keys) == len(set(keys))
    assert all(r.verdict.reward == 1.0 for r in every)
    with Store.open(db, create=False) as store:
        after = {r.key: r.started_at for r in store.verdict_rows(valid=True)}
    assert all(after[k] == v for k, v in before.items())


def test_audit_oracle_passes_and_noop_fails(synthetic_root, appworld_python):
    import json

    exe = str(Path(sys.executable).with_name("agentrig"))
    done = subprocess.run([exe, "audit", "--bench", "appworld", "--data", str(synthetic_root), "--python",
                           str(appworld_python), "--json"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = {r["task"]: r for r in json.loads(done.stdout)}
    assert set(rows) == {"5a1c0de_1", "5a1c0de_2", "6b2d1ef_1", "7c3e2fa_1", "8d4f3ab_1"}
    assert all(r["oracle"] is True and r["noop"] is False for r in rows.values()), rows
    missing = subprocess.run([exe, "tasks", "list", "--bench", "appworld", "--data", str(synthetic_root / "nope")],
                             capture_output=True, text=True, timeout=120)
    assert missing.returncode == 1 and "appworld download data" in missing.stderr and "Traceback" not in missing.stderr


def test_limits_and_format_errors_end_the_trial_which_appworld_still_judges(tmp_path, synthetic_root, appworld_python):
    os.environ[KEY_ENV] = KEY
    try:
        endpoint = AppWorldEndpoint(synthetic_root, api_key=KEY, models=("appworld-solution", "chatter"))
        scripts = endpoint.scripts

        def responder(body, headers=None):
            if body.get("model") == "chatter":  # prose, never a python block nor a call
                return {"content": "Let me think about which app holds the notes."}
            return scripts(body, headers)

        endpoint.responder = responder
        with ThreadedFakeEndpoint(endpoint=endpoint) as served:
            arms = {"limited": ('{ kind = "llm", step_limit = 2 }', "appworld-solution"),
                    "chatty": ('{ kind = "llm", tool_mode = "text", max_format_errors = 2 }', "chatter")}
            exp = experiment(tmp_path / "l.toml", "limits", synthetic_root, appworld_python, served.base_url, arms,
                             dataset="test_challenge")
            assert run_command(exp, run_dir=tmp_path / "run", as_json=True, out=Console(file=io.StringIO())) == 0
    finally:
        os.environ.pop(KEY_ENV, None)
    by = {r.key.arm: r for r in records(tmp_path / "run")}
    limited, chatty = by["limited"], by["chatty"]
    assert limited.verdict.termination == "limits_exceeded"
    assert sum(1 for e in limited.trajectory.events if e.kind == "execute") == 2  # logged in, deleted; never completed
    # judged by AppWorld all the same: the note was deleted and nothing else changed, so those tests
    # pass; the task was never marked complete, so `assert answers match.` fails (as AppWorld scores it)
    assert limited.verdict.reward == 0.0 and limited.verdict.reward_info.notes["completed"] == "false"
    assert failed_tests(limited) == ["assert answers match."]
    assert chatty.verdict.termination == "format_errors" and chatty.trajectory.counters["format_errors"] == 2
    assert not any(e.kind == "execute" for e in chatty.trajectory.events)
    assert get_benchmark("appworld").smoke_problem(chatty).startswith("the model's replies could not be run as code")


def test_a_trial_timeout_during_an_execution_is_still_judged_and_the_worker_kept(tmp_path, synthetic_root,
                                                                                 appworld_python):
    """The trial's time runs out while its code runs in the world: the agent phase ends
    (agent_timeout), the execution's late answer is read and dropped, AppWorld judges the world,
    and the same worker plays the next trial."""
    os.environ[KEY_ENV] = KEY
    try:
        endpoint = AppWorldEndpoint(synthetic_root, api_key=KEY, models=("appworld-solution", "spinner"))
        scripts = endpoint.scripts

        def responder(body, headers=None):
            if body.get("model") == "spinner":
                return {"content": "", "tool_calls": [{"id": "s1", "name": "execute",
                                                       "arguments": {"code": "while True:\n    pass"}}]}
            return scripts(body, headers)

        endpoint.responder = responder
        with ThreadedFakeEndpoint(endpoint=endpoint) as served:
            arms = {"spinner": ('{ kind = "llm" }', "spinner"), "native": ARMS["native"]}
            exp = experiment(tmp_path / "t.toml", "timeout", synthetic_root, appworld_python, served.base_url, arms,
                             dataset="test_challenge", concurrency=1, workers=1,
                             extra="trial_timeout_s = 1.5")
            exp.write_text(exp.read_text().replace("workers = 1", "workers = 1\nexecute_timeout_s = 3"))
            assert run_command(exp, run_dir=tmp_path / "run", as_json=True, out=Console(file=io.StringIO())) == 0
    finally:
        os.environ.pop(KEY_ENV, None)
    every = records(tmp_path / "run", valid=None)
    assert all(r.verdict.valid for r in every), [r.verdict.invalid_cause for r in every]
    by = {r.key.arm: r for r in every}
    assert by["spinner"].verdict.termination == "agent_timeout" and by["spinner"].verdict.reward == 0.0
    assert any(e.kind == "evaluate" for e in by["spinner"].trajectory.events)
    assert by["native"].verdict.reward == 1.0
    opened = [e.data["worker"] for r in every for e in r.trajectory.events if e.kind == "open"]
    assert len(set(opened)) == 1  # one worker played both trials


def test_first_requests_are_what_the_agent_sends_first(tmp_path, synthetic_root, appworld_python):
    """What `agentrig doctor --config` sends for an AppWorld experiment (Benchmark.first_requests) is
    the code agent's real first request, in both tool modes."""
    from agentrig.run.experiment import load

    os.environ[KEY_ENV] = KEY
    try:
        endpoint = AppWorldEndpoint(synthetic_root, api_key=KEY, record=True)
        with ThreadedFakeEndpoint(endpoint=endpoint) as served:
            arms = {"native": ARMS["native"], "text": ARMS["text"]}
            exp = experiment(tmp_path / "f.toml", "first", synthetic_root, appworld_python, served.base_url, arms,
                             dataset="test_challenge", concurrency=1, workers=1)
            assert run_command(exp, run_dir=tmp_path / "run", as_json=True, out=Console(file=io.StringIO())) == 0
            sent = {}
            for req in endpoint.requests:
                arm = req.headers.get("x-agentrig-arm")
                if req.headers.get("x-agentrig-role") == "agent" and arm not in sent:
                    sent[arm] = req.json
    finally:
        os.environ.pop(KEY_ENV, None)
    r = load(exp)
    predicted = {f.arm: f for f in get_benchmark("appworld").first_requests(r)}
    assert set(predicted) == {"native", "text"}
    for arm, body in sent.items():
        assert predicted[arm].messages == body["messages"], arm
        assert predicted[arm].tools == (body.get("tools") or []), arm
