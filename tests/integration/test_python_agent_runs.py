"""Issue 35.1 through the real stack: a user's Python agents (examples/python_agents/: the plain
`openai` SDK and the OpenAI Agents SDK, in Chat Completions and Responses) in `agentrig run` (a
subprocess) on τ² tasks — the built-in bikeshop domain and airline, retail, telecom of the shared
data — against the gold endpoint (its own process) answering a fifth of the requests with 429 /
500 / a malformed body. Every trial valid, each Python arm's reward per trial the same as agentrig's
LLM agent's on the same tasks and seeds, retries counted, the key nowhere (not in the run
directory, not in the agent process's environment). A bad interpreter or an entry that cannot be
imported: exit 1 with the error before the run. The scale run (20 tasks a domain, beside Codex and
Claude Code) is tests/integration/test_external_agents_scale.py."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from agentrig.bench.tau.data import load_tasks
from agentrig.store.store import Store

from tests.integration.test_gold_runs import KEY, KEY_ENV, GoldServer, _agentrig, _env, agentrig_run, assert_no_key

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "python_agents"
PROBES = REPO / "tests" / "agents" / "python_agents"
DATA_DOMAINS = ("airline", "retail", "telecom")
PY_ARMS = ("py-openai", "py-sdk-chat", "py-sdk-responses")


def _task_ids(root: Path, per_domain: int) -> dict[str, list[str]]:
    ids = {"bikeshop": [t.id for t in load_tasks(None, "bikeshop")][:per_domain]}
    ids.update({d: [t.id for t in load_tasks(root, d)][:per_domain] for d in DATA_DOMAINS})
    return ids


def write_experiment(path: Path, base_url: str, root: Path, task_ids: dict[str, list[str]], *,
                     agents: dict[str, str] | None = None) -> Path:
    paths = json.dumps([str(EXAMPLES), str(PROBES)])
    agents = agents if agents is not None else {
        "llm": '{ kind = "llm" }',
        # the probe around the plain-openai example: it prints its environment (checked below)
        "py-openai": f'{{ kind = "python", entry = "probe_agent:make", path = {paths}, settings = {{ dump_env = true }} }}',
        "py-sdk-chat": f'{{ kind = "python", entry = "agents_sdk_agent:make", path = {paths}, settings = {{ api = "chat" }} }}',
        "py-sdk-responses": f'{{ kind = "python", entry = "agents_sdk_agent:make", path = {paths}, '
                            'settings = { api = "responses" } }',
    }
    arms = "\n".join(f'[[arms]]\nname = "{name}"\nagent = {spec}\n' for name, spec in agents.items())
    task_table = ", ".join(f"{d} = {json.dumps(ids)}" for d, ids in task_ids.items())
    path.write_text(f"""
name = "{path.stem}"

[benchmark]
data = "{root}"
domains = {json.dumps(list(task_ids))}
task_ids = {{ {task_table} }}

[run]
trials = 1
seed = 3535
concurrency = 6
max_invalid_retries = 3

[channel]
base_url = "{base_url}"
api_key_env = "{KEY_ENV}"
model = "gold"
timeout_s = 30
max_attempts = 12
backoff_base_s = 0.01
backoff_max_s = 0.1
max_concurrency = 32

{arms}""", encoding="utf-8")
    return path


def check_run(out: dict, task_ids: dict[str, list[str]]) -> None:
    assert out["status"] == "done"
    run_dir = Path(out["run_dir"])
    with Store.open(run_dir / "trials.sqlite", create=False) as store:
        rows = store.verdict_rows()
        records = list(store.records(valid=True))
    assert all(r.valid for r in rows), [(r.key, r.termination) for r in rows if not r.valid]
    planned = {(d, t) for d, ids in task_ids.items() for t in ids}
    reward = {(r.arm, r.domain, r.task_id): r.reward for r in rows}
    for arm in PY_ARMS:
        assert {(d, t) for (a, d, t) in reward if a == arm} == planned
        # the same gold conversation as agentrig's own LLM agent plays: the same reward, task by task
        off = {(d, t): (reward[(arm, d, t)], reward[("llm", d, t)]) for d, t in planned
               if reward[(arm, d, t)] != reward[("llm", d, t)]}
        assert not off, (arm, off)
        assert out["arms"][arm]["retries"] > 0  # faults ridden out by the channel, counted
    assert sum(reward.values()) >= 0.8 * len(reward)  # the gold earns nearly every task
    # the Agents SDK agents called their tools themselves: calls recorded, each answered
    sdk = [r for r in records if r.key.arm == "py-sdk-chat"]
    assert any(m.tool_calls for r in sdk for m in r.trajectory.messages)
    # the probe's environment: the trial's token (scrubbed in the record), never the key nor its variable
    for rec in (r for r in records if r.key.arm == "py-openai"):
        out_text = "".join(e.data["text"] for e in rec.trajectory.events if e.kind == "output")
        env = json.loads(next(line for line in out_text.splitlines() if line.startswith("ENV "))[4:])
        assert env["OPENAI_API_KEY"] == "[trial token]" and KEY_ENV not in env
        assert not any(KEY in v or KEY[8:24] in v for v in env.values())
    assert_no_key(run_dir)


@pytest.fixture(scope="module")
def faulty_gold(tau2_root):
    server = GoldServer(tau2_root, "--fault-rate", "0.2", "--fault-kinds", "rate_limit,server_error,malformed",
                        "--seed", "35")
    yield server
    server.stop()


def test_python_agents_earn_what_the_llm_agent_earns_under_faults(tau2_root, faulty_gold, tmp_path):
    task_ids = _task_ids(tau2_root, 3)
    toml = write_experiment(tmp_path / "pyagents.toml", faulty_gold.base_url, tau2_root, task_ids)
    check_run(agentrig_run(toml, timeout=900), task_ids)


@pytest.mark.parametrize("agent, names", [
    ('{ kind = "python", entry = "no_such_module:make", path = ["."] }', "agent.entry 'no_such_module:make'"),
    ('{ kind = "python", entry = "openai_agent:make", path = ["."], python = "/bin/false" }', "agent.python: /bin/false"),
    ('{ kind = "python", entry = "openai_agent:make", path = ["."], python = "no/such/python" }', "agent.python"),
    ('{ kind = "python", path = ["."] }', "needs `entry`"),
])
def test_a_bad_interpreter_or_entry_stops_before_the_run(tau2_root, faulty_gold, tmp_path, agent, names):
    toml = write_experiment(tmp_path / "bad.toml", faulty_gold.base_url, tau2_root, {"bikeshop": ["rent_city_bike"]},
                            agents={"mine": agent})
    done = subprocess.run([*_agentrig(), "run", str(toml)], capture_output=True, text=True, timeout=300,
                          env=_env(), cwd=EXAMPLES)
    assert done.returncode == 1, done.stderr
    assert names in done.stderr and "fix:" in done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    assert not (tmp_path / "runs").exists()  # nothing was played, no run directory made
