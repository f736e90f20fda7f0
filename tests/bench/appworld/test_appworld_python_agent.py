"""Issue 35.1 on AppWorld through the real stack: a user's Python agent (examples/python_agents/
appworld_agent.py on the plain `openai` SDK, in its own process, and a probe around it) in
`agentrig run` (a subprocess) on the synthetic AppWorld tasks, beside agentrig's own code agent,
against the scripted AppWorld endpoint (its own process) answering a fifth of the requests with
429 / 500 / a malformed body; the code runs in AppWorld's own environment and is judged by its
``world.evaluate()``.

- every trial valid; the Python agent scores what the code agent scores, task by task — solving
  every task with the solutions, failing each with the wrong answers; retries counted; the key
  nowhere (not in the run directory, not in the agent process's environment);
- each turn carries the task, the task prompt, the guide, the conversation, the last output;
- the agent's steps are recorded as the code agent's text mode records them;
- the memory plug-in's context reaches the agent's requests at the proxy;
- an agent that raises: ``agent_error`` with its traceback, the world still evaluated; one that
  returns None stops (``never_completed``); tool calls are refused (``agent_error``);
- a bad interpreter or entry: exit 1 with the error before the run.
"""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path

import pytest

from agentrig.store.store import Store

from tests.integration.test_gold_runs import KEY, KEY_ENV, _agentrig, _env, agentrig_run, assert_no_key
from tests.support import EndpointProcess

REPO = Path(__file__).resolve().parents[3]
EXAMPLES = REPO / "examples" / "python_agents"
PROBES = REPO / "tests" / "agents" / "python_agents"
PATHS = json.dumps([str(EXAMPLES), str(PROBES)])
SOLUTION, WRONG = "appworld-solution", "appworld-wrong_answer"


def py(**settings) -> str:
    table = ", ".join(f"{k} = {json.dumps(v)}" for k, v in settings.items())
    return f'{{ kind = "python", entry = "appworld_probe:make", path = {PATHS}, settings = {{ {table} }} }}'


ARMS = {  # arm → (agent table, model)
    "code": ('{ kind = "llm", tool_mode = "text" }', SOLUTION),
    "py": (py(dump_env=True, show_turns=True), SOLUTION),
    "code-wrong": ('{ kind = "llm", tool_mode = "text" }', WRONG),
    "py-wrong": (py(), WRONG),
    "py-raises": (py(raise_at=1), SOLUTION),
    "py-stops": (py(stop_at=1), SOLUTION),
    "py-tools": (py(tool_calls_at=0), SOLUTION),
    "py-memory": (py() + '\nplugins = [{ kind = "memory" }]', SOLUTION),
    # the Agents SDK example: its `execute` tool called once a step, on the Responses wire
    "py-sdk": (f'{{ kind = "python", entry = "appworld_sdk_agent:make", path = {PATHS}, '
               'settings = { api = "responses" } }', SOLUTION),
}


def experiment(path: Path, root: Path, python: Path, base_url: str, arms: dict) -> Path:
    blocks = [f'[[arms]]\nname = "{arm}"\nagent = {agent}\nroles = {{ agent = {{ model = "{model}" }} }}\n'
              for arm, (agent, model) in arms.items()]
    path.write_text(textwrap.dedent(f"""\
        name = "{path.stem}"
        [benchmark]
        kind = "appworld"
        data = "{root}"
        dataset = "dev"
        python = "{python}"
        workers = 2
        [run]
        trials = 1
        seed = 35
        concurrency = 4
        max_steps = 20
        max_invalid_retries = 3
        [channel]
        base_url = "{base_url}"
        api_key_env = "{KEY_ENV}"
        timeout_s = 30
        max_attempts = 12
        backoff_base_s = 0.01
        backoff_max_s = 0.1
        [roles.agent]
        model = "{SOLUTION}"
        [roles.memory]
        model = "{SOLUTION}"
        """) + "\n".join(blocks), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def faulty_endpoint(synthetic_root):
    server = EndpointProcess("agentrig.bench.appworld.scripted.appworld_endpoint", "--root", str(synthetic_root),
                             "--api-key-env", KEY_ENV, "--fault-rate", "0.2",
                             "--fault-kinds", "rate_limit,server_error,malformed", "--seed", "35", env=_env())
    yield server
    server.stop()


@pytest.fixture(scope="module")
def run(tmp_path_factory, synthetic_root, appworld_python, faulty_endpoint):
    tmp = tmp_path_factory.mktemp("aw-py")
    toml = experiment(tmp / "awpy.toml", synthetic_root, appworld_python, faulty_endpoint.base_url, ARMS)
    out = agentrig_run(toml, timeout=1500)
    with Store.open(Path(out["run_dir"]) / "trials.sqlite", create=False) as store:
        rows = store.verdict_rows()
        records = list(store.records(valid=True))
    return out, rows, records


def by_arm(records, arm: str) -> list:
    return sorted((r for r in records if r.key.arm == arm), key=lambda r: r.key.task_id)


def agent_events(record, kind: str) -> list:
    return [e for e in record.trajectory.events if e.plugin == "agent" and e.kind == kind]


def outputs(record) -> list[str]:
    """The execution outputs of the trial, in order (the user messages after the task prompt)."""
    return [m.content for m in record.trajectory.messages if m.role == "user"][1:]


def output_of(record) -> str:
    return "".join(e.data["text"] for e in agent_events(record, "output") if e.data.get("stream") == "stdout")


def test_the_python_agent_scores_what_the_code_agent_scores_under_faults(run, synthetic_root):
    out, rows, records = run
    assert out["status"] == "done"
    assert rows and all(r.valid for r in rows), [(r.key, r.termination) for r in rows if not r.valid]
    tasks = {r.task_id for r in rows}
    assert len(tasks) >= 3
    reward = {(r.arm, r.task_id): r.reward for r in rows}
    assert {(a, t) for a in ARMS for t in tasks} == set(reward)
    for mine, ours in (("py", "code"), ("py-wrong", "code-wrong"), ("py-sdk", "code")):
        assert {t: reward[(mine, t)] for t in tasks} == {t: reward[(ours, t)] for t in tasks}, mine
    assert all(reward[("py", t)] == 1.0 for t in tasks)  # the solutions, played by the Python agent
    assert all(reward[("py-wrong", t)] == 0.0 for t in tasks)  # the wrong answers, judged by AppWorld
    # faults ridden out, counted: over the Python arms' ~80 model calls together (one arm's 5 or 16 calls
    # may draw no fault at a rate of 0.2 — which arm gets the faults depends on the order of requests)
    assert sum(arm["retries"] for name, arm in out["arms"].items() if name.startswith("py")) > 0
    # the same failed tests as the code agent's, task by task
    for mine, ours in zip(by_arm(records, "py-wrong"), by_arm(records, "code-wrong")):
        assert mine.verdict.reward_info.components == ours.verdict.reward_info.components
    assert_no_key(Path(out["run_dir"]))


def test_each_step_is_recorded_as_the_code_agents_text_mode_records_it(run):
    _, _, records = run
    for mine, ours in zip(by_arm(records, "py"), by_arm(records, "code")):
        assert mine.verdict.termination == ours.verdict.termination == "completed"
        execs = [e.data["code"] for e in mine.trajectory.events if e.plugin == "world" and e.kind == "execute"]
        assert execs == [e.data["code"] for e in ours.trajectory.events if e.plugin == "world" and e.kind == "execute"]
        said = [m for m in mine.trajectory.messages if m.role == "assistant"]
        assert [c.arguments["code"] for m in said for c in m.tool_calls] == execs
        assert [c.id for m in said for c in m.tool_calls] == [f"text-{i + 1}" for i in range(len(execs))]
        calls = mine.trajectory.model_calls
        # every step names the model call it came from, one of the agent's, answered
        assert all(m.call is not None and calls[m.call].role == "agent" and calls[m.call].error is None for m in said)
        users = [m.content for m in mine.trajectory.messages if m.role == "user"]
        assert users == [m.content for m in ours.trajectory.messages if m.role == "user"]  # prompt, then outputs
        assert agent_events(mine, "ready")[0].data["client"] == "openai"


def test_each_turn_carries_the_task_the_conversation_and_the_last_output(run, synthetic_root):
    from agentrig.bench.appworld.data import load_task

    _, _, records = run
    for rec in by_arm(records, "py"):
        task = load_task(synthetic_root, rec.key.task_id)
        lines = output_of(rec).splitlines()
        turns = [json.loads(line[5:]) for line in lines if line.startswith("TURN ")]
        outputs = [m.content for m in rec.trajectory.messages if m.role == "user"][1:]
        assert [t["step"] for t in turns] == list(range(len(outputs)))
        first = turns[0]
        assert first["task_id"] == task.id and first["instruction"] == task.instruction
        assert first["supervisor"] == task.supervisor and first["datetime"] == task.datetime
        assert task.instruction in first["prompt"] and task.supervisor["email"] in first["prompt"]
        assert "apis.api_docs.show_api_doc" in first["guide"] and "complete_task" in first["guide"]
        assert first["output"] is None and first["messages"] == [{"role": "user", "content": first["prompt"]}]
        for k, turn in enumerate(turns[1:]):
            assert turn["output"] == outputs[k] and turn["failed"] is False
            assert turn["new"] == [{"role": "user", "content": outputs[k]}] == turn["messages"][-1:]
            # the conversation: the prompt, then each reply (its code in a python fence) and its output
            assert [m["role"] for m in turn["messages"]] == ["user"] + ["assistant", "user"] * (k + 1)
            assert "```python" in turn["messages"][-2]["content"]
        # the agent's environment: the trial's token (scrubbed in the record), never the key nor its variable
        env = json.loads(next(line for line in lines if line.startswith("ENV "))[4:])
        assert env["OPENAI_API_KEY"] == "[trial token]" and KEY_ENV not in env
        assert not any(KEY in v or KEY[8:24] in v for v in env.values())


def test_plugins_reach_the_agents_model_calls_through_the_proxy(run):
    _, _, records = run
    injected_anywhere = 0
    for rec in by_arm(records, "py-memory"):
        assert rec.verdict.termination == "completed" and rec.verdict.reward == 1.0
        triggers = [e for e in rec.trajectory.events if e.plugin == "memory" and e.kind == "memory.trigger"]
        assert len(triggers) == len(outputs(rec))  # one per step (each step ran code; the last completed the task)
        injected = [e.data["injected"] for e in triggers if e.data.get("injected")]
        hinted = [e for e in rec.trajectory.events if e.plugin == "proxy" and e.kind == "hints"]
        assert len(hinted) == len(injected)  # one model call per step: each injected step's call carried it
        sent = [m.get("content") for r in rec.trajectory.agent_requests for m in r.tail]
        sent = [p.get("text", "") if isinstance(p, dict) else str(p) for c in sent
                for p in (c if isinstance(c, list) else [c]) if p]
        assert all(any(text in s for s in sent) for text in injected)
        injected_anywhere += len(injected)
    assert injected_anywhere  # the plug-in spoke in some step


def test_an_agent_that_raises_ends_agent_error_with_its_traceback_and_the_world_judged(run):
    _, _, records = run
    for rec in by_arm(records, "py-raises"):
        v = rec.verdict
        assert v.valid and v.termination == "agent_error" and v.reward == 0.0
        (error,) = agent_events(rec, "error")
        assert error.data["stage"] == "respond" and "probe failure at step 1" in error.data["error"]
        tb = error.data["traceback"]
        assert "Traceback" in tb and "appworld_probe.py" in tb and "ValueError: probe failure at step 1" in tb
        assert "the Python agent failed in respond()" in agent_events(rec, "stop")[0].data["detail"]
        assert any(e.plugin == "world" and e.kind == "evaluate" for e in rec.trajectory.events)
        assert rec.trajectory.counters.get("executions") == 1  # its first step ran


def test_an_agent_that_returns_none_stops_and_tool_calls_are_refused(run):
    _, _, records = run
    for rec in by_arm(records, "py-stops"):
        assert rec.verdict.valid and rec.verdict.termination == "never_completed" and rec.verdict.reward == 0.0
        assert agent_events(rec, "stopped")[0].data["reason"] == "its reply held no code"
    for rec in by_arm(records, "py-tools"):
        assert rec.verdict.valid and rec.verdict.termination == "agent_error"
        assert "reply with the code to run" in agent_events(rec, "error")[0].data["error"]
        assert not any(e.plugin == "world" and e.kind == "execute" for e in rec.trajectory.events)


@pytest.mark.parametrize("agent, names", [
    ('{ kind = "python", entry = "no_such_module:make", path = ["."] }', "agent.entry 'no_such_module:make'"),
    ('{ kind = "python", entry = "appworld_agent:make", path = ["."], python = "/bin/false" }', "agent.python: /bin/false"),
    ('{ kind = "python", entry = "appworld_agent:make", path = ["."], python = "no/such/python" }', "agent.python"),
    ('{ kind = "python", path = ["."] }', "needs `entry`"),
    ('{ kind = "llm", entry = "appworld_agent:make" }', "agent.entry is for kind \"python\""),
])
def test_a_bad_interpreter_or_entry_stops_before_the_run(synthetic_root, appworld_python, tmp_path, agent, names):
    toml = experiment(tmp_path / "bad.toml", synthetic_root, appworld_python, "http://127.0.0.1:9/v1",
                      {"mine": (agent, SOLUTION)})
    text = toml.read_text().replace('path = ["."]', f'path = ["{EXAMPLES}"]')
    toml.write_text(text)
    done = subprocess.run([*_agentrig(), "run", str(toml)], capture_output=True, text=True, timeout=300,
                          env=_env(), cwd=EXAMPLES)
    assert done.returncode == 1, done.stderr
    assert names in done.stderr and "fix:" in done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    assert not (tmp_path / "runs").exists()  # nothing was played, no run directory made


def test_the_runner_takes_code_in_every_form_and_keeps_it_in_the_conversation(monkeypatch):
    """The runner (stdlib only, imported by path as the agent's interpreter runs it): what a reply
    on AppWorld tasks may be, and how it stays in the agent's conversation."""
    import importlib.util

    from agentrig.agents.python_agent.check import RUNNER

    monkeypatch.syspath_prepend(str(RUNNER.parent))
    spec = importlib.util.spec_from_file_location("agentrig_runner_under_test", RUNNER)
    runner = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(runner)
    from agentrig_agent import AppWorldTask, AppWorldTurn, Reply

    code = "print(apis.supervisor.show_profile())"
    for value in (code, Reply(code=code), {"code": code}, Reply(content="look first", code=code)):
        reply = runner._reply_message(value, "code")
        assert reply["code"] == code and reply["tool_calls"] == [], value
    assert runner._reply_message(None, "code")["code"] is None  # no code: the agent stops
    assert runner._reply_message("hello", "content") == {"type": "reply", "content": "hello", "tool_calls": [],
                                                         "code": None}  # τ²: a str is text
    with pytest.raises(TypeError, match="return the code as a str"):
        runner._reply_message(42, "code")
    with pytest.raises(ValueError, match="unknown key"):
        runner._reply_message({"python": code}, "code")
    # the conversation: the code fenced, unless the reply's text holds it already
    assert runner._with_code(None, code) == f"```python\n{code}\n```"
    assert runner._with_code("look first", code) == f"look first\n\n```python\n{code}\n```"
    said = f"Step 1.\n\n```python\n{code}\n```"
    assert runner._with_code(said, code) == said
    turn = runner._turn(AppWorldTurn, {"task": {"id": "t1", "instruction": "do it", "extra": 1}, "prompt": "p",
                                       "guide": "g", "messages": [], "new": [], "step": 0, "model": "m",
                                       "_call": None, "unknown": 2})
    assert turn.task == AppWorldTask(id="t1", instruction="do it") and turn.output is None


def test_the_example_experiment_runs_offline_as_its_comments_say(synthetic_root, appworld_python, tmp_path):
    """examples/python_agents/appworld_agent.toml, with the data and AppWorld's python of this
    machine, against the scripted endpoint started as its comments say (no key; a fifth faults)."""
    server = EndpointProcess("agentrig.bench.appworld.scripted.appworld_endpoint", "--root", str(synthetic_root),
                             "--no-auth", "--fault-rate", "0.2", "--seed", "7", env=_env())
    try:
        text = (EXAMPLES / "appworld_agent.toml").read_text(encoding="utf-8")
        assert 'data = "/tmp/aw-synthetic"' in text
        text = text.replace('data = "/tmp/aw-synthetic"', f'data = "{synthetic_root}"\npython = "{appworld_python}"')
        toml = EXAMPLES / f"_test_{tmp_path.name}.toml"  # beside the agent, as path = ["."] wants
        toml.write_text(text, encoding="utf-8")
        try:
            done = subprocess.run([*_agentrig(), "run", str(toml), "--json", "--dir", str(tmp_path / "run")],
                                  capture_output=True, text=True, timeout=900,
                                  env=_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY="local"))
        finally:
            toml.unlink()
    finally:
        server.stop()
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout)
    with Store.open(tmp_path / "run" / "trials.sqlite", create=False) as store:
        rows = store.verdict_rows()
    assert rows and all(r.valid for r in rows)
    assert {r.arm for r in rows} == {"code-agent", "my-agent"} and all(r.reward == 1.0 for r in rows)
    # the fifth of the requests that fail, ridden out and counted (over both arms' ~30 calls: one arm
    # alone may draw none)
    assert out["arms"]["my-agent"]["retries"] + out["arms"]["code-agent"]["retries"] > 0
