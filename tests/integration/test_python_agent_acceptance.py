"""Issue 35's acceptance for a user's Python agents on τ² tasks, through the real CLI (each command a
subprocess) against the gold endpoint (its own process) answering a fifth of the requests with
429 / 500 / a malformed body, and recording every request it got.

One run is shared (module scope): bikeshop + airline tasks, two trials each, four arms —
`examples/python_agents/openai_agent.py` without plug-ins (`baseline`) and with the memory plug-in
(`memory`), `agents_sdk_agent.py` on the Responses wire (`sdk-responses`), and a test agent on the
`anthropic` SDK (Messages wire, `anthropic`). On it:

- the memory A/B: the memory arm's agent requests, as recorded (`Trajectory.agent_requests`) and
  as the endpoint received them, are the baseline's plus each step's reminder, nothing else;
  `compare` finds only the plug-in; `analyze` (every section, JSON and text) and the report show
  both arms;
- `instability` (default arms: the Python ones included) re-sends the recorded requests — the
  endpoint gets the very messages the trials sent, hints and the Responses and Messages wires'
  included —
  and finds the gold's noisy write step (noise only at temperature > 0: the run itself is clean);
- the guidelines loop: derive from the run with a scripted analyst, then a second run with the
  Python agent with and without the guidelines (the gold obeys a guideline's marker);
- the exports: jsonl and tau2, their content checked against the store.
"""

from __future__ import annotations

import json
import subprocess
import urllib.request
from pathlib import Path

import pytest

from agentrig.bench.tau.scripted.gold_endpoint import GoldResponder
from agentrig.plugins.guidelines.filemodel import load
from agentrig.plugins.memory.prompts import REMINDER_HEAD
from agentrig.store.store import Store
from agentrig.testing.fake_endpoint import ThreadedFakeEndpoint
from agentrig.types import Transient

from tests.integration.test_gold_runs import KEY, KEY_ENV, GoldServer, _agentrig, _env, agentrig_run, assert_no_key
from tests.integration.test_memory_external_agent import with_hints

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "python_agents"
TASKS = {"bikeshop": ["rent_city_bike", "cancel_ebike_full_refund"], "airline": ["0", "1"]}
ARMS = ("baseline", "memory", "sdk-responses", "anthropic")
PROBES = Path(__file__).resolve().parents[1] / "agents" / "python_agents"
TRIALS = 2
PY = f'kind = "python", path = {json.dumps([str(EXAMPLES)])}'


def _write_step(task_id: str) -> tuple[int, str]:
    """The gold script's last write call of a bikeshop task: (its decision step, its tool)."""
    steps = GoldResponder(None).script("bikeshop", task_id).steps
    i = max(i for i, s in enumerate(steps) if s.kind == "call" and s.name.split("_")[0] in ("book", "cancel"))
    return i, steps[i].name


NOISY = {t: _write_step(t) for t in TASKS["bikeshop"]}


def agentrig(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([*_agentrig(), *map(str, args)], capture_output=True, text=True, timeout=timeout,
                          env=_env(COLUMNS="200"))


def ok(*args: str) -> subprocess.CompletedProcess:
    done = agentrig(*args)
    assert done.returncode == 0, f"agentrig {args[0]} failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


def experiment(path: Path, gold_url: str, analyst_url: str, root: Path, tasks: dict, arms: str, *,
               trials: int = TRIALS, agent_temperature: float | None = None) -> Path:
    table = ", ".join(f"{d} = {json.dumps(ids)}" for d, ids in tasks.items())
    temperature = "" if agent_temperature is None else f"[roles.agent]\ntemperature = {agent_temperature}\n"
    path.write_text(f"""
name = "{path.stem}"

[benchmark]
data = "{root}"
domains = {json.dumps(list(tasks))}
task_ids = {{ {table} }}

[run]
trials = {trials}
seed = 3536
concurrency = 6
max_invalid_retries = 3

[channel]
base_url = "{gold_url}"
api_key_env = "{KEY_ENV}"
model = "gold"
timeout_s = 30
max_attempts = 12
backoff_base_s = 0.01
backoff_max_s = 0.1
max_concurrency = 32

{temperature}
[roles.analyst]
base_url = "{analyst_url}"
model = "analyst-model"
temperature = 0.0

{arms}""", encoding="utf-8")
    return path


class Shared:
    def __init__(self, gold: GoldServer, analyst: ThreadedFakeEndpoint, root: Path, tmp: Path, run_dir: Path, out: dict):
        self.gold, self.analyst, self.root, self.tmp, self.run_dir, self.out = gold, analyst, root, tmp, run_dir, out

    def requests(self) -> list[dict]:
        """What the gold endpoint answered with a completion (no fault), in the order received."""
        base = self.gold.base_url.rsplit("/v1", 1)[0]
        with urllib.request.urlopen(f"{base}/_fake/requests", timeout=30) as r:
            rows = json.loads(r.read())
        return [r for r in rows if r["method"] == "POST" and r["status"] == 200 and r["fault"] is None]

    def records(self, arm: str) -> list:
        with Store.open(self.run_dir / "trials.sqlite", create=False) as store:
            return sorted(store.records(arm=arm, valid=True), key=lambda r: (r.key.domain, r.key.task_id, r.key.trial))


def _agent_bodies(rows: list[dict], arm: str, domain: str, task: str, trial: int, *, sampled: bool = False) -> list[dict]:
    return [r["json"] for r in rows if r["headers"].get("x-agentrig-role") == "agent"
            and (r["headers"].get("x-agentrig-arm"), r["headers"].get("x-agentrig-domain"),
                 r["headers"].get("x-agentrig-task"), r["headers"].get("x-agentrig-trial")) == (arm, domain, task, str(trial))
            and ("temperature" in r["json"]) == sampled]


def _rebuilt(traj) -> list[list[dict]]:
    """The messages of each recorded agent request, rebuilt from the deltas."""
    out, messages = [], []
    for r in traj.agent_requests:
        messages = messages[: r.keep] + r.tail
        out.append(messages)
    return out


@pytest.fixture(scope="module")
def shared(tau2_root, tmp_path_factory):
    noise = [f"--noise=bikeshop/{t}={step}" for t, (step, _name) in NOISY.items()]
    gold = GoldServer(tau2_root, "--record", "--fault-rate", "0.2", "--fault-kinds", "rate_limit,server_error,malformed",
                      "--seed", "36", *noise, "--noise-p", "0.5", "--noise-seed", "9")
    analyst = ThreadedFakeEndpoint(api_key=KEY, models=("analyst-model",))
    analyst.start()
    try:
        tmp = tmp_path_factory.mktemp("pyaccept")
        arms = "\n".join([
            f'[[arms]]\nname = "baseline"\nagent = {{ {PY}, entry = "openai_agent:make" }}\n',
            f'[[arms]]\nname = "memory"\nagent = {{ {PY}, entry = "openai_agent:make" }}\n'
            'plugins = [{ kind = "memory", mode = "selective", interval = 1 }]\n',
            f'[[arms]]\nname = "sdk-responses"\nagent = {{ {PY}, entry = "agents_sdk_agent:make", '
            'settings = { api = "responses" } }\n',
            f'[[arms]]\nname = "anthropic"\nagent = {{ kind = "python", path = {json.dumps([str(PROBES)])}, '
            'entry = "anthropic_agent:make", client = "anthropic" }\n'])
        toml = experiment(tmp / "pyab.toml", gold.base_url, analyst.base_url, tau2_root, TASKS, arms)
        out = agentrig_run(toml, timeout=900)
        yield Shared(gold, analyst, tau2_root, tmp, Path(out["run_dir"]), out)
    finally:
        analyst.stop()
        gold.stop()


# ------------------------------------------------------------------------------ the memory A/B


def test_every_trial_valid_and_rewarded_under_faults(shared):
    assert shared.out["status"] == "done" and list(shared.out["arms"]) == list(ARMS)
    planned = sum(len(ids) for ids in TASKS.values()) * TRIALS
    for arm, s in shared.out["arms"].items():
        assert (s["planned"], s["valid"], s["invalid"], s["missing"]) == (planned, planned, 0, 0), (arm, s)
        assert s["mean_reward"] == 1.0 and s["retries"] > 0, (arm, s)  # faults ridden out, counted
    assert_no_key(shared.run_dir)


def test_the_memory_arm_differs_from_the_baseline_by_its_reminders_only(shared):
    rows = shared.requests()
    base, mem = shared.records("baseline"), shared.records("memory")
    assert [r.key.label().replace("memory", "") for r in mem] == [r.key.label().replace("baseline", "") for r in base]
    reminded = 0
    for b, m in zip(base, mem):
        k = m.key
        # the same conversation, the same reward: the gold agent ignores reminders
        assert [(x.role, x.content, [(c.name, c.arguments) for c in x.tool_calls]) for x in b.trajectory.messages] == \
            [(x.role, x.content, [(c.name, c.arguments) for c in x.tool_calls]) for x in m.trajectory.messages]
        assert b.verdict.reward == m.verdict.reward == 1.0
        steps = m.trajectory.counters["agent_steps"]
        triggers = [e.data for e in m.trajectory.events if e.kind == "memory.trigger"]
        assert [t["step"] for t in triggers] == list(range(steps))
        hints = [[Transient(text=t["injected"], source="memory")] if t["injected"] else [] for t in triggers]
        assert not any(e.kind == "memory.trigger" or e.plugin == "proxy" for e in b.trajectory.events)
        # as recorded: the baseline's request of each step plus that step's reminder (the plain
        # openai example makes one model call per step)
        rec_b, rec_m = _rebuilt(b.trajectory), _rebuilt(m.trajectory)
        assert len(rec_b) == len(rec_m) == steps
        for step, (rb, rm, h) in enumerate(zip(rec_b, rec_m, hints)):
            assert rm == with_hints({"messages": rb}, h)["messages"], (k, step)
            assert REMINDER_HEAD not in json.dumps(rb)
            reminded += bool(h)
        hinted = {e.data["call"] for e in m.trajectory.events if (e.plugin, e.kind) == ("proxy", "hints")}
        assert hinted == {r.call for r, h in zip(m.trajectory.agent_requests, hints) if h}
        # as the endpoint received them: the same, and nothing else differs in the body
        up_b = _agent_bodies(rows, "baseline", k.domain, k.task_id, k.trial)
        up_m = _agent_bodies(rows, "memory", k.domain, k.task_id, k.trial)
        assert len(up_b) == len(up_m) == steps, (k, len(up_b), len(up_m))
        for step, (ub, um, h, rm) in enumerate(zip(up_b, up_m, hints, rec_m)):
            assert um == with_hints(ub, h), (k, step)
            assert um["messages"] == rm  # the record is what was sent
        # the memory role was called by the memory arm only
        roles = {c.role for c in m.trajectory.model_calls}
        assert "memory" in roles and "memory" not in {c.role for c in b.trajectory.model_calls}
    assert reminded > 0  # the scripted decide phase reminds at some steps


def test_compare_finds_only_the_plug_in(shared):
    done = ok("compare", f"{shared.run_dir}:baseline", f"{shared.run_dir}:memory", "--json")
    c = json.loads(done.stdout)
    assert c["comparable"] and c["mismatch"] == [] and c["exit_code"] == 0
    kinds = {d["path"]: d["kind"] for d in c["config"]["differences"]}
    assert kinds == {"arm.plugins": "intended", "roles.memory": "intended"}, c["config"]["differences"]
    plugins = next(d for d in c["config"]["differences"] if d["path"] == "arm.plugins")
    assert plugins["a"] == [] and plugins["b"][0]["kind"] == "memory"
    assert c["paired"]["tasks"] == 4 and (c["paired"]["only_a"], c["paired"]["only_b"]) == (0, 0)
    assert c["metrics"]["pass^1"]["delta"] == 0.0


def test_analyze_and_the_report_show_every_arm(shared):
    doc = json.loads(ok("analyze", shared.run_dir, "--json").stdout)
    assert set(doc["arms"]) == set(ARMS)
    assert all(v == "ok" for v in doc["sections"].values()), doc["sections"]
    n = sum(len(ids) for ids in TASKS.values()) * TRIALS
    for arm in ARMS:
        a = doc["arms"][arm]
        o = a["overall"]
        assert a["n"] == TRIALS and (o["valid"], o["tasks"], o["pass_1"]["value"], o["gap_pp"]["value"]) == (n, 4, 1.0, 0.0)
        assert [c["k"] for c in o["curve"]] == [1, 2] and o["components"]  # pass^k curve, reward components
        assert a["retries"]["retried"] > 0 and len(a["reruns"]["reruns"]) == TRIALS
        usage = {u["role"]: u for u in a["usage"]["roles"]}
        assert usage["agent"]["requests"] > 0 and usage["agent"]["prompt_tokens"] > 0
        assert sum(u["retries"] for u in usage.values()) > 0
        assert {(t["domain"], t["task_id"]) for t in a["consistency"]} == {(d, t) for d, ids in TASKS.items() for t in ids}
        # the tool-call chains of the Python agents (the SDK's own tool loop included) are read
        assert any(t["mean_calls"] > 0 for t in a["consistency"]), arm
        assert a["failures"]["failed"] == 0
        assert a["figures"]["durations"]["valid_trials"] == n
    assert doc["arms"]["baseline"]["memory"] is None and doc["arms"]["sdk-responses"]["memory"] is None
    m = doc["arms"]["memory"]["memory"]
    assert m["modes"] == ["selective"] and m["baseline"] == "baseline"
    assert m["triggers"] == m["agent_steps"] > 0 and m["failed_calls"] == 0 and 0 < m["injection_rate"] < 1
    assert m["ab"]["comparable"] and m["ab"]["paired"]["tasks"] == 4
    text = ok("analyze", shared.run_dir).stdout
    assert "memory arms against the baseline baseline" in text
    assert all(arm in text for arm in ARMS)
    html = shared.tmp / "report.html"
    ok("report", shared.run_dir, "--out", html)
    page = html.read_text(encoding="utf-8")
    assert 'id="memory"' in page and "Against the baseline" in page and ">memory</td>" in page
    assert all(arm in page for arm in ARMS)
    # the trajectory viewer holds every trial of the Python agents: their greeting, their tool calls
    greeting = shared.records("sdk-responses")[0].trajectory.messages[0].content
    assert page.count(greeting) >= n * len(ARMS)
    assert all(name in page for _step, name in NOISY.values())


# ------------------------------------------------------------------------------ instability


@pytest.fixture(scope="module")
def instability(shared):
    """`agentrig instability` with its default arms (every Python arm) at temperature 0.7."""
    done = ok("instability", shared.run_dir, "--samples", "4", "--temperature", "0.7", "--max-steps", "8", "--json")
    return json.loads(done.stdout)


def test_instability_resamples_the_python_agents_recorded_requests(shared, instability):
    reports = {r["arm"]: r for r in instability["reports"]}
    assert set(reports) == set(ARMS)
    assert all(t["failed"] == 0 and t["stored"] > 0 for t in instability["totals"])
    rows = shared.requests()
    for arm in ARMS:
        for rec in shared.records(arm):
            k = rec.key
            sent = _agent_bodies(rows, arm, k.domain, k.task_id, k.trial)
            sampled = _agent_bodies(rows, arm, k.domain, k.task_id, k.trial, sampled=True)
            assert sampled, (arm, k)
            # every sample is the request the trial sent (the Responses wire's translated one, the
            # memory arm's with its reminder), only its temperature and seed new
            originals = [json.dumps(b["messages"], sort_keys=True) for b in sent]
            for s in sampled:
                assert s["temperature"] == 0.7 and isinstance(s.get("seed"), int)
                assert json.dumps(s["messages"], sort_keys=True) in originals, (arm, k)
                assert s["tools"] == sent[0]["tools"]
            if arm == "memory" and any(e.kind == "memory.trigger" and e.data["injected"] for e in rec.trajectory.events):
                assert any(REMINDER_HEAD in json.dumps(s["messages"]) for s in sampled)
        # the gold's noisy step (its write call, noisy only when sampled) is where the bikeshop
        # tasks are unstable; the airline tasks and every other step are stable
        for task in reports[arm]["tasks"]:
            unstable = {int(s) for s, v in task["step_instability"].items() if v > 0}
            if task["domain"] == "bikeshop":
                assert unstable == {NOISY[task["task_id"]][0]}, (arm, task)
            else:
                assert not unstable, (arm, task)
    # `analyze` reads the stored samples back: the same figures per Python arm
    doc = json.loads(ok("analyze", shared.run_dir, "--json").stdout)
    assert {(r["arm"], r["temperature"]) for r in doc["instability"]} == {(arm, 0.7) for arm in ARMS}
    for r in doc["instability"]:
        assert r["tasks"] == reports[r["arm"]]["tasks"]
    text = ok("analyze", shared.run_dir).stdout
    assert all(f"decision instability: {arm} (temperature 0.7" in text for arm in ARMS)


# ------------------------------------------------------------------------------ guidelines


def test_the_guidelines_loop_on_python_agents(shared, instability):
    markers = " ".join(f"<<do:{name}>>" for _step, name in NOISY.values())
    source = f"bikeshop/{TASKS['bikeshop'][0]}"
    reply = {"guidelines": [{
        "text": f"Before closing a request that changes an account, make the change with the tool meant for "
                f"it and the customer's real values: {markers}",
        "rationale": "the write step is where samples part", "category": "constraint",
        "trigger": "the write action of a request",
        "sources": [{"task": source, "trial": 0, "step": NOISY[TASKS["bikeshop"][0]][0], "kind": "unstable_step"}]}]}
    shared.analyst.endpoint.push_reply({"content": json.dumps(reply)})
    out = shared.tmp / "guidelines.json"
    done = ok("guidelines", "derive", shared.run_dir, "--arm", "baseline", "--out", out)
    assert "wrote 1 guideline(s)" in done.stdout and "unstable step(s)" in done.stdout
    assert "## g1 · constraint" in ok("guidelines", "show", out, "--plain").stdout
    gf = load(out)
    assert [g.id for g in gf.guidelines] == ["g1"] and gf.provenance.arm == "baseline"
    assert gf.provenance.inputs.unstable_steps >= 1  # the instability of the Python agent's steps
    call = [r for r in shared.analyst.endpoint.requests if r.path.endswith("/chat/completions")][-1]
    shown = call.json["messages"][1]["content"]
    assert "unstable decision · task bikeshop/" in shown and "airline/" not in shown.split("unstable decision")[1][:40]

    # the held-out evaluation: the Python agent sampled at 0.7 without and with the guidelines
    arms = (f'[[arms]]\nname = "plain"\nagent = {{ {PY}, entry = "openai_agent:make" }}\n\n'
            f'[[arms]]\nname = "guided"\nagent = {{ {PY}, entry = "openai_agent:make" }}\n'
            f'plugins = [{{ kind = "guidelines", file = "{out.name}", select = "all" }}]\n')
    toml = experiment(shared.tmp / "pyguided.toml", shared.gold.base_url, shared.analyst.base_url, shared.root,
                      {"bikeshop": TASKS["bikeshop"]}, arms, trials=4, agent_temperature=0.7)
    ev = Path(agentrig_run(toml, timeout=900)["run_dir"])
    c = json.loads(ok("compare", f"{ev}:plain", f"{ev}:guided", "--json").stdout)
    assert c["comparable"] and {d["path"]: d["kind"] for d in c["config"]["differences"]} == {"arm.plugins": "intended"}
    p1 = c["metrics"]["pass^1"]
    assert p1["b"] == 1.0 and p1["a"] < 1.0, p1  # the noisy write steps obey the guideline's marker
    with Store.open(ev / "trials.sqlite", create=False) as store:
        guided = list(store.records(arm="guided", valid=True))
    assert len(guided) == 8
    rows = shared.requests()  # the arm names are this run's own
    for rec in guided:
        loaded = [e for e in rec.trajectory.events if e.kind == "guidelines.loaded"]
        assert len(loaded) == 1 and loaded[0].data["count"] == 1
        hinted = [e for e in rec.trajectory.events if (e.plugin, e.kind) == ("proxy", "hints")]
        assert hinted and all(e.data["sources"] == ["guidelines"] for e in hinted)
        # the guideline reached every request of the step, as a system message after the agent's own
        for messages in _rebuilt(rec.trajectory):
            assert messages[-1]["role"] == "system" and markers in messages[-1]["content"]
        k = rec.key
        sent = [b for b in rows if b["headers"].get("x-agentrig-role") == "agent"
                and (b["headers"].get("x-agentrig-arm"), b["headers"].get("x-agentrig-task"),
                     b["headers"].get("x-agentrig-trial")) == ("guided", k.task_id, str(k.trial))]
        assert sent and all(markers in b["json"]["messages"][-1]["content"] for b in sent)


# ------------------------------------------------------------------------------ exports


def test_the_exports_hold_the_python_agents_trials(shared):
    jsonl = shared.tmp / "all.jsonl"
    ok("export", shared.run_dir, "--format", "jsonl", "--out", jsonl)
    lines = [json.loads(line) for line in jsonl.read_text(encoding="utf-8").splitlines()]
    stored = {arm: shared.records(arm) for arm in ARMS}
    assert len(lines) == sum(len(v) for v in stored.values())
    by_key = {(d["key"]["arm"], d["key"]["domain"], d["key"]["task_id"], d["key"]["trial"]): d for d in lines}
    for arm, recs in stored.items():
        for rec in recs:
            d = by_key[(arm, rec.key.domain, rec.key.task_id, rec.key.trial)]
            assert len(d["trajectory"]["messages"]) == len(rec.trajectory.messages)
            assert len(d["trajectory"]["agent_requests"]) == len(rec.trajectory.agent_requests) > 0
            assert any(e["kind"] == "start" for e in d["trajectory"]["events"])  # the agent's own events
    for arm in ("memory", "sdk-responses"):
        for domain, ids in TASKS.items():
            path = shared.tmp / f"{arm}-{domain}.json"
            ok("export", shared.run_dir, "--format", "tau2", "--arm", arm, "--domain", domain, "--out", path)
            doc = json.loads(path.read_text(encoding="utf-8"))
            agent = doc["info"]["agent_info"]
            assert agent["implementation"] == "agentrig_python_agent" and agent["llm"] == "gold"
            assert {t["id"] for t in doc["tasks"]} == set(ids)
            sims = doc["simulations"]
            assert len(sims) == len(ids) * TRIALS and all(s["reward_info"]["reward"] == 1.0 for s in sims)
            recs = {(r.key.task_id, r.key.trial): r for r in stored[arm] if r.key.domain == domain}
            for s in sims:
                rec = recs[(s["task_id"], s["trial"])]
                calls = [c["name"] for m in s["messages"] if m["role"] == "assistant" for c in m["tool_calls"] or []]
                assert calls == [c.name for m in rec.trajectory.messages if m.role == "assistant" for c in m.tool_calls]
                # each reply of the agent carries the usage of the model call that produced it
                assert all(m["usage"] for m in s["messages"] if m["role"] == "assistant" and m["turn_idx"] > 0)
