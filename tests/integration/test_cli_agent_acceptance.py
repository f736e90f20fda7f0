"""Issue 35's acceptance for Codex (and Claude Code) as the τ² agent, through the real CLI (each
command a subprocess) against the gold endpoint (its own process) answering a fifth of the requests
with 429 / 500 / a malformed body and recording every request it got.

One run is shared (module scope, kept small: two bikeshop tasks and one airline task, one trial):
Codex without plug-ins (`codex`), Codex with the memory plug-in (`codex-memory`) and Claude Code
with it (`claude-memory`). On it:

- the memory A/B: the memory arm's agent requests, as recorded (`Trajectory.agent_requests`, the
  proxy's translation of Codex's Responses requests to the role's Chat Completions) and as the
  endpoint received them, are the baseline's plus each step's reminder, nothing else — once each
  trial's own names are put aside: Codex tells the model its working directory, which is the
  trial's private home (a new temporary directory per trial), and it prefixes each tool result with
  the wall time it measured of the call: those two are the other differences between two trials'
  bodies (Codex's own, the same in both arms), named alike before comparing;
  `compare` finds only the plug-in; `analyze` (every section) and the report show every arm;
- `instability` (default arms: Codex and Claude Code are model agents) re-sends the recorded
  requests through the channel — the endpoint gets the very messages the trials sent, hints
  included — and finds the gold's noisy write step (noise only at temperature > 0);
- the guidelines loop: derive from the run (Codex's unstable steps) with a scripted analyst, then a
  second run of Codex sampled at 0.7 with and without the guidelines (the gold obeys a guideline's
  marker: only the guided arm's noisy steps are right);
- the exports: jsonl and tau2, their content checked against the store.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from agentrig.analysis.instability import steps_of
from agentrig.plugins.guidelines.filemodel import load
from agentrig.plugins.memory.prompts import REMINDER_HEAD
from agentrig.store.store import Store
from agentrig.testing.fake_endpoint import ThreadedFakeEndpoint
from agentrig.types import Transient

from tests.bench.tau.test_cli_agents import installed  # noqa: F401  (the fixture: the real binaries)
from tests.integration.test_gold_runs import KEY, GoldServer, agentrig_run, assert_no_key
from tests.integration.test_memory_external_agent import with_hints
from tests.integration.test_python_agent_acceptance import Shared, _agent_bodies, _rebuilt, _write_step, experiment, ok

TASKS = {"bikeshop": ["rent_city_bike", "cancel_ebike_full_refund"], "airline": ["0"]}
ARMS = ("codex", "codex-memory", "claude-memory")
TRIALS = 1
NOISY = {t: _write_step(t) for t in TASKS["bikeshop"]}
HOME = re.compile(r"/tmp/agentrig-tau-(codex|claude-code)-[A-Za-z0-9_]+")
WALL = re.compile(r"Wall time: [0-9.]+ seconds")


def _same_home(value):
    """``value`` with what Codex writes of its own trial alike: its private home (in its
    environment context) and the wall time it measured of each tool call (in the tool's result)."""
    text = HOME.sub("/tmp/agentrig-tau-HOME", json.dumps(value))
    return json.loads(WALL.sub("Wall time: T seconds", text))


@pytest.fixture(scope="module")
def shared(installed, tau2_root, tmp_path_factory):  # noqa: F811
    noise = [f"--noise=bikeshop/{t}={step}" for t, (step, _name) in NOISY.items()]
    gold = GoldServer(tau2_root, "--record", "--fault-rate", "0.2", "--fault-kinds", "rate_limit,server_error,malformed",
                      "--seed", "35", *noise, "--noise-p", "0.5", "--noise-seed", "9")
    analyst = ThreadedFakeEndpoint(api_key=KEY, models=("analyst-model",))
    analyst.start()
    try:
        tmp = tmp_path_factory.mktemp("cliaccept")
        memory = 'plugins = [{ kind = "memory", mode = "selective", interval = 1 }]\n'
        arms = "\n".join([
            '[[arms]]\nname = "codex"\nagent = { kind = "codex" }\n',
            f'[[arms]]\nname = "codex-memory"\nagent = {{ kind = "codex" }}\n{memory}',
            f'[[arms]]\nname = "claude-memory"\nagent = {{ kind = "claude-code" }}\n{memory}'])
        toml = experiment(tmp / "cliab.toml", gold.base_url, analyst.base_url, tau2_root, TASKS, arms, trials=TRIALS)
        out = agentrig_run(toml, timeout=1200)
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
        assert s["mean_reward"] == 1.0, (arm, s)
    assert sum(s["retries"] for s in shared.out["arms"].values()) > 0  # faults ridden out, counted
    assert_no_key(shared.run_dir)


def test_the_codex_memory_arm_differs_from_the_baseline_by_its_reminders_only(shared):
    rows = shared.requests()
    base, mem = shared.records("codex"), shared.records("codex-memory")
    assert [r.key.label().replace("codex-memory", "") for r in mem] == [r.key.label().replace("codex", "") for r in base]
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
        # as recorded (the proxy's translated requests): one model call per decision step, each the
        # baseline's plus that step's reminder
        rec_b, rec_m = _same_home(_rebuilt(b.trajectory)), _same_home(_rebuilt(m.trajectory))
        agent_calls = [c for c in m.trajectory.model_calls if c.role == "agent"]
        assert len(rec_b) == len(rec_m) == len(agent_calls), (k, len(rec_b), len(rec_m))
        step_of = {r.call: s for s, r in enumerate(m.trajectory.agent_requests)}
        hinted = {e.data["call"] for e in m.trajectory.events if (e.plugin, e.kind) == ("proxy", "hints")}
        assert all(c in step_of for c in hinted)
        for i, (rb, rm) in enumerate(zip(rec_b, rec_m)):
            h = hints[_turn(rec_b, i)]
            assert (m.trajectory.agent_requests[i].call in hinted) == bool(h), (k, i)
            assert rm == with_hints({"messages": rb}, h)["messages"], (k, i)
            assert REMINDER_HEAD not in json.dumps(rb)
            reminded += bool(h)
        assert {r.tools == rb.tools for r, rb in zip(m.trajectory.agent_requests, b.trajectory.agent_requests)} == {True}
        # as the endpoint received them: the same, and nothing else differs in the body
        up_b = _same_home(_agent_bodies(rows, "codex", k.domain, k.task_id, k.trial))
        up_m = _same_home(_agent_bodies(rows, "codex-memory", k.domain, k.task_id, k.trial))
        assert len(up_b) == len(up_m) == len(rec_m), (k, len(up_b), len(up_m))
        for i, (ub, um, rm) in enumerate(zip(up_b, up_m, rec_m)):
            h = hints[_turn(rec_b, i)]
            assert um == with_hints(ub, h), (k, i)
            assert um["messages"] == rm  # the record is what was sent
        roles = {c.role for c in m.trajectory.model_calls}
        assert "memory" in roles and "memory" not in {c.role for c in b.trajectory.model_calls}
    assert reminded > 0  # the scripted decide phase reminds at some steps


def _turn(requests: list[list[dict]], i: int) -> int:
    """The turn (the memory plug-in's step: one ``respond``, the agent's whole run on one customer
    message) of the ``i``-th request: each turn's prompt is one more user message."""
    users = [sum(1 for x in r if x["role"] == "user") for r in requests]
    return users[i] - users[0]


def test_compare_finds_only_the_plug_in(shared):
    c = json.loads(ok("compare", f"{shared.run_dir}:codex", f"{shared.run_dir}:codex-memory", "--json").stdout)
    assert c["comparable"] and c["mismatch"] == [] and c["exit_code"] == 0
    kinds = {d["path"]: d["kind"] for d in c["config"]["differences"]}
    assert kinds == {"arm.plugins": "intended", "roles.memory": "intended"}, c["config"]["differences"]
    plugins = next(d for d in c["config"]["differences"] if d["path"] == "arm.plugins")
    assert plugins["a"] == [] and plugins["b"][0]["kind"] == "memory"
    assert c["paired"]["tasks"] == 3 and (c["paired"]["only_a"], c["paired"]["only_b"]) == (0, 0)
    assert c["metrics"]["pass^1"]["delta"] == 0.0


def test_analyze_and_the_report_show_every_arm(shared):
    doc = json.loads(ok("analyze", shared.run_dir, "--json").stdout)
    assert set(doc["arms"]) == set(ARMS)
    assert all(v == "ok" for v in doc["sections"].values()), doc["sections"]
    n = sum(len(ids) for ids in TASKS.values()) * TRIALS
    for arm in ARMS:
        a = doc["arms"][arm]
        o = a["overall"]
        assert a["n"] == TRIALS and (o["valid"], o["tasks"], o["pass_1"]["value"], o["gap_pp"]["value"]) == (n, 3, 1.0, 0.0)
        assert [c["k"] for c in o["curve"]] == [1] and o["components"]
        usage = {u["role"]: u for u in a["usage"]["roles"]}
        assert usage["agent"]["requests"] > 0 and usage["agent"]["prompt_tokens"] > 0
        assert {(t["domain"], t["task_id"]) for t in a["consistency"]} == {(d, t) for d, ids in TASKS.items() for t in ids}
        assert any(t["mean_calls"] > 0 for t in a["consistency"]), arm  # the MCP tool calls, under τ² names
        assert a["failures"]["failed"] == 0
        assert a["figures"]["durations"]["valid_trials"] == n
    assert doc["arms"]["codex"]["memory"] is None
    for arm in ("codex-memory", "claude-memory"):
        m = doc["arms"][arm]["memory"]
        assert m["modes"] == ["selective"] and m["baseline"] == "codex"
        assert m["triggers"] == m["agent_steps"] > 0 and m["failed_calls"] == 0 and 0 < m["injection_rate"] < 1
    assert doc["arms"]["codex-memory"]["memory"]["ab"]["comparable"]
    text = ok("analyze", shared.run_dir).stdout
    assert all(arm in text for arm in ARMS)
    html = shared.tmp / "report.html"
    ok("report", shared.run_dir, "--out", html)
    page = html.read_text(encoding="utf-8")
    assert 'id="memory"' in page and "Against the baseline" in page
    assert all(arm in page for arm in ARMS)
    assert all(name in page for _step, name in NOISY.values())  # the trajectory viewer's tool calls


# ------------------------------------------------------------------------------ instability


@pytest.fixture(scope="module")
def instability(shared):
    """`agentrig instability` with its default arms (Codex and Claude Code: model agents) at 0.7."""
    done = ok("instability", shared.run_dir, "--samples", "4", "--temperature", "0.7", "--max-steps", "8", "--json")
    return json.loads(done.stdout)


def test_instability_resamples_the_cli_agents_recorded_requests(shared, instability):
    reports = {r["arm"]: r for r in instability["reports"]}
    assert set(reports) == set(ARMS)
    assert all(t["failed"] == 0 and t["stored"] > 0 for t in instability["totals"])
    rows = shared.requests()
    for arm in ARMS:
        for rec in shared.records(arm):
            k = rec.key
            # each of the agent's messages names the model call it came from: one decision step
            # per model call of the agent, in order
            agent_calls = [i for i, c in enumerate(rec.trajectory.model_calls) if c.role == "agent"]
            assert [m.call for _s, _t, m in steps_of(rec)] == agent_calls, (arm, k)
            sent = _agent_bodies(rows, arm, k.domain, k.task_id, k.trial)
            sampled = _agent_bodies(rows, arm, k.domain, k.task_id, k.trial, sampled=True)
            assert sampled, (arm, k)
            # every sample is a request the trial sent (as the proxy translated it; the memory
            # arms' with their reminders), only its temperature and seed new
            originals = [json.dumps(b["messages"], sort_keys=True) for b in sent]
            for s in sampled:
                assert s["temperature"] == 0.7 and isinstance(s.get("seed"), int)
                assert json.dumps(s["messages"], sort_keys=True) in originals, (arm, k)
                assert s["tools"] == sent[0]["tools"]
            if arm != "codex" and any(e.kind == "memory.trigger" and e.data["injected"] for e in rec.trajectory.events):
                assert any(REMINDER_HEAD in json.dumps(s["messages"]) for s in sampled), (arm, k)
        # the gold's noisy step (its write call, noisy only when sampled) is where the bikeshop
        # tasks are unstable; the airline task and every other step are stable
        for task in reports[arm]["tasks"]:
            unstable = {int(s) for s, v in task["step_instability"].items() if v > 0}
            if task["domain"] == "bikeshop":
                assert unstable == {NOISY[task["task_id"]][0]}, (arm, task)
            else:
                assert not unstable, (arm, task)
    doc = json.loads(ok("analyze", shared.run_dir, "--json").stdout)
    assert {(r["arm"], r["temperature"]) for r in doc["instability"]} == {(arm, 0.7) for arm in ARMS}


# ------------------------------------------------------------------------------ guidelines


def test_the_guidelines_loop_on_codex(shared, instability):
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
    done = ok("guidelines", "derive", shared.run_dir, "--arm", "codex", "--out", out)
    assert "wrote 1 guideline(s)" in done.stdout and "unstable step(s)" in done.stdout
    gf = load(out)
    assert gf.provenance.arm == "codex" and gf.provenance.inputs.unstable_steps >= 1  # Codex's unstable steps
    call = [r for r in shared.analyst.endpoint.requests if r.path.endswith("/chat/completions")][-1]
    assert "unstable decision · task bikeshop/" in call.json["messages"][1]["content"]

    # the held-out evaluation: Codex sampled at 0.7 without and with the guidelines
    arms = ('[[arms]]\nname = "plain"\nagent = { kind = "codex" }\n\n'
            '[[arms]]\nname = "guided"\nagent = { kind = "codex" }\n'
            f'plugins = [{{ kind = "guidelines", file = "{out.name}", select = "all" }}]\n')
    toml = experiment(shared.tmp / "cliguided.toml", shared.gold.base_url, shared.analyst.base_url, shared.root,
                      {"bikeshop": TASKS["bikeshop"]}, arms, trials=3, agent_temperature=0.7)
    ev = Path(agentrig_run(toml, timeout=1200)["run_dir"])
    c = json.loads(ok("compare", f"{ev}:plain", f"{ev}:guided", "--json").stdout)
    assert c["comparable"] and {d["path"]: d["kind"] for d in c["config"]["differences"]} == {"arm.plugins": "intended"}
    p1 = c["metrics"]["pass^1"]
    assert p1["b"] == 1.0 and p1["a"] < 1.0, p1  # the noisy write steps obey the guideline's marker
    with Store.open(ev / "trials.sqlite", create=False) as store:
        guided = list(store.records(arm="guided", valid=True))
    assert len(guided) == 6
    for rec in guided:
        hinted = [e for e in rec.trajectory.events if (e.plugin, e.kind) == ("proxy", "hints")]
        assert hinted and all(e.data["sources"] == ["guidelines"] for e in hinted)
        for messages in _rebuilt(rec.trajectory):  # every request of the turn, after Codex's own messages
            assert messages[-1]["role"] == "system" and markers in messages[-1]["content"]


# ------------------------------------------------------------------------------ exports


def test_the_exports_hold_the_cli_agents_trials(shared):
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
            assert any(e["kind"] == "turn" for e in d["trajectory"]["events"])  # the agent's own record
    for arm in ("codex", "claude-memory"):
        for domain, ids in TASKS.items():
            path = shared.tmp / f"{arm}-{domain}.json"
            ok("export", shared.run_dir, "--format", "tau2", "--arm", arm, "--domain", domain, "--out", path)
            doc = json.loads(path.read_text(encoding="utf-8"))
            agent = doc["info"]["agent_info"]
            kind = {"codex": "codex", "claude-memory": "claude-code"}[arm]
            assert (agent["implementation"], agent["llm"]) == (f"agentrig_{kind}_agent", "gold"), agent
            assert {t["id"] for t in doc["tasks"]} == set(ids)
            sims = doc["simulations"]
            assert len(sims) == len(ids) * TRIALS and all(s["reward_info"]["reward"] == 1.0 for s in sims)
            recs = {(r.key.task_id, r.key.trial): r for r in stored[arm] if r.key.domain == domain}
            for s in sims:
                rec = recs[(s["task_id"], s["trial"])]
                calls = [c["name"] for m in s["messages"] if m["role"] == "assistant" for c in m["tool_calls"] or []]
                assert calls == [c.name for m in rec.trajectory.messages if m.role == "assistant" for c in m.tool_calls]
