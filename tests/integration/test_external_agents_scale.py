"""Issue 35's scale acceptance in one ``agentrig run`` (a subprocess): agentrig's LLM agent (the
reference), the two Python example agents (plain ``openai``; the Agents SDK in Chat Completions) and
the real Codex CLI and Claude Code, on 20 τ²-bench tasks of each of airline, retail and telecom, all
through the gold endpoint (its own process) answering a fifth of the requests with 429 / 500 /
malformed.

The tasks, a fixed choice: airline and retail have only a ``train`` split in the shared data copy,
so their first 20 train-split ids in file order; telecom the first 10 ``test``-split and the first
10 ``train``-split ids of domains/telecom/split_tasks.json in file order. (AppWorld's synthetic tasks
are covered for all four kinds by tests/bench/appworld/.)

Checked: every trial valid and stored once; each external arm's reward per task equals the LLM
agent's (the gold's); the channel's retries equal the faults the endpoint injected, and the external
arms' are counted; no fault reached an agent (no ``agent``/``error`` event of a Python agent; each
Codex / Claude Code turn's own record holds no error nor failed tool call); the key nowhere in the
run directory."""

from __future__ import annotations

import json
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from agentrig.bench.tau.cli_agent import CLI_KINDS
from agentrig.bench.tau.data import load_tasks
from agentrig.store.store import Store

from tests.bench.tau.test_cli_agents import installed  # noqa: F401  (the fixture: Codex's and Claude Code's roots)
from tests.integration.test_gold_runs import KEY_ENV, GoldServer, _agentrig, _env, assert_no_key

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "python_agents"
PER_DOMAIN = 20
PY_ARMS = ("py-openai", "py-sdk-chat")
EXTERNAL = (*PY_ARMS, *CLI_KINDS)


def _split(root: Path, domain: str) -> dict[str, list[str]]:
    return json.loads((root / "domains" / domain / "split_tasks.json").read_text(encoding="utf-8"))


def scale_task_ids(root: Path) -> dict[str, list[str]]:
    ids = {d: _split(root, d)["train"][:PER_DOMAIN] for d in ("airline", "retail")}
    telecom = _split(root, "telecom")
    ids["telecom"] = telecom["test"][:PER_DOMAIN // 2] + telecom["train"][:PER_DOMAIN // 2]
    for d, chosen in ids.items():  # every id a task of the domain, none twice
        known = {t.id for t in load_tasks(root, d)}
        assert len(set(chosen)) == PER_DOMAIN and set(chosen) <= known, d
    return ids


def _experiment(path: Path, base_url: str, root: Path, task_ids: dict[str, list[str]]) -> Path:
    paths = json.dumps([str(EXAMPLES)])
    agents = {
        "llm": '{ kind = "llm" }',
        "py-openai": f'{{ kind = "python", entry = "openai_agent:make", path = {paths} }}',
        "py-sdk-chat": f'{{ kind = "python", entry = "agents_sdk_agent:make", path = {paths}, settings = {{ api = "chat" }} }}',
        **{k: f'{{ kind = "{k}" }}' for k in CLI_KINDS},
    }
    arms = "\n".join(f'[[arms]]\nname = "{name}"\nagent = {spec}\n' for name, spec in agents.items())
    task_table = ", ".join(f"{d} = {json.dumps(ids)}" for d, ids in task_ids.items())
    # concurrency 6 on 2 cores: Codex and Claude Code start a process per turn, mostly waiting on I/O
    path.write_text(f"""
name = "external-scale"

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
timeout_s = 60
max_attempts = 12
backoff_base_s = 0.01
backoff_max_s = 0.1
max_concurrency = 32

{arms}""", encoding="utf-8")
    return path


def _bare(name: str) -> str:
    return name.rsplit("__", 1)[-1].rsplit(".", 1)[-1]  # mcp__tau__get_x / tau.get_x -> get_x


def _tool_errors(record) -> list[str]:
    """The names of the agent's tool calls whose τ² result is an error, in a trial's record."""
    names = {c.id: c.name for m in record.trajectory.messages if m.role == "assistant" for c in m.tool_calls}
    return sorted(_bare(names[m.tool_call_id]) for m in record.trajectory.messages
                  if m.role == "tool" and m.error and m.requestor == "assistant")


@pytest.mark.slow
def test_external_agents_earn_the_gold_s_reward_at_scale_through_faults(installed, tau2_root, tmp_path):  # noqa: F811
    task_ids = scale_task_ids(tau2_root)
    log = tmp_path / "endpoint.jsonl"
    server = GoldServer(tau2_root, "--fault-rate", "0.2", "--fault-kinds", "rate_limit,server_error,malformed",
                        "--seed", "35", "--log", str(log))
    try:
        toml = _experiment(tmp_path / "scale.toml", server.base_url, tau2_root, task_ids)
        done = subprocess.run([*_agentrig(), "run", str(toml), "--json"], capture_output=True, text=True,
                              timeout=3600, env=_env())
    finally:
        server.stop()
    assert done.returncode == 0, f"agentrig run failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    out = json.loads(done.stdout)
    assert out["status"] == "done"
    run_dir = Path(out["run_dir"])
    with Store.open(run_dir / "trials.sqlite", create=False) as store:
        records = list(store.records())
        calls = store.model_call_rows()

    # every trial valid, each stored once
    planned = {(arm, d, t) for arm in ("llm", *EXTERNAL) for d, ids in task_ids.items() for t in ids}
    assert all(r.verdict.valid for r in records), [(r.key, r.verdict.invalid_cause) for r in records if not r.verdict.valid]
    keys = [(r.key.arm, r.key.domain, r.key.task_id) for r in records]
    assert sorted(keys) == sorted(planned)

    # each external arm earns, task by task, what the LLM agent earns playing the same gold conversation
    reward = {(r.key.arm, r.key.domain, r.key.task_id): r.verdict.reward for r in records}
    for arm in EXTERNAL:
        off = {(d, t): (reward[(arm, d, t)], reward[("llm", d, t)]) for d, ids in task_ids.items() for t in ids
               if reward[(arm, d, t)] != reward[("llm", d, t)]}
        assert not off, (arm, off)
    assert sum(reward.values()) >= 0.8 * len(reward)  # the gold earns nearly every task

    # no fault reached an agent
    by_key = {(r.key.arm, r.key.domain, r.key.task_id): r for r in records}
    for r in records:
        if r.key.arm in PY_ARMS:
            errors = [e.data for e in r.trajectory.events if (e.plugin, e.kind) == ("agent", "error")]
            assert not errors, (r.key, errors)
        elif r.key.arm in CLI_KINDS:
            turns = [e.data for e in r.trajectory.events if (e.plugin, e.kind) == ("agent", "turn")]
            assert turns, r.key
            for t in turns:  # the agent's own record of its turn: no API error
                assert t["errors"] == [], (r.key, t)
                assert all(n.startswith("Model metadata for `gold` not found") for n in t["notes"]), (r.key, t["notes"])
            # the tool calls it marks failed: only those the gold conversation makes fail on purpose (a
            # τ² "Error: …" result, e.g. retail 2's product id that is none), as for the LLM agent
            failed = sorted(_bare(n) for t in turns for n in t["failed_tool_calls"])
            assert failed == _tool_errors(by_key[("llm", r.key.domain, r.key.task_id)]), (r.key, failed)

    # every fault the endpoint injected was a retry of the channel, counted; the external arms drew some
    lines = [json.loads(x) for x in log.read_text().splitlines() if x.strip()]
    injected = Counter(x["fault"] for x in lines if x.get("fault"))
    causes = Counter(c for row in calls for c in (row["retry_causes"] or "").split(",") if c)
    assert sum(injected.values()) > 0
    # besides them, only slow answers the channel's adaptive limit cut (a starved 2-core machine: the
    # endpoint answered, late; the same load-born retries test_outages' hung requests allow)
    cut = causes.pop("timeout", 0)
    assert sum(row["retries"] for row in calls) == sum(injected.values()) + cut
    assert causes == Counter({"rate_limited": injected["rate_limit"], "server_error": injected["server_error"],
                              "malformed": injected["malformed"]})
    assert sum(out["arms"][arm]["retries"] for arm in EXTERNAL) > 0
    assert_no_key(run_dir)
