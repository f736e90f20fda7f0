"""Codex CLI and Claude Code as the τ² agent (bench/tau/cli_agent.py), the real binaries (installed
by agentrig's installer into its cache, or found there) through the real stack:

- ``agentrig run`` (a subprocess) on built-in bikeshop tasks and τ²-bench airline and telecom tasks
  (a transfer that ends a turn in the middle; a telecom task the user acts on between two turns, so
  the agent's session is resumed), every model call through the measuring proxy to the gold endpoint
  (its own process) with 20 % of its answers 429 / 500 / malformed: every trial valid once and
  earning the gold's reward, the retries in the store equal to the faults the endpoint injected,
  the calls answered equal to the endpoint's log, no fault seen by the agent (its own record of
  every turn holds no error), the key nowhere in the run directory;
- in one process, each agent's isolation while it runs: its environment (read from /proc while its
  tool call is served) holds only the per-trial tokens, never the key, nor do its files; its process
  group is gone once the episode ends it mid-turn (a transfer), and its home once the trial ends;
- ``step_limit`` ends the trial ``limits_exceeded`` (valid) at the proxy.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from agentrig.agents.base import AgentSettings
from agentrig.agents.llm import openai_tools
from agentrig.agents.installed import ToolInstallError, ensure_tool_root
from agentrig.benchmark import Limits
from agentrig.bench.tau.cli_agent import CLI_KINDS, CliTauAgent
from agentrig.bench.tau.data import load_tasks
from agentrig.bench.tau.episode import Episode, play_trial
from agentrig.bench.tau.scripted.gold_endpoint import GoldEndpoint
from agentrig.bench.tau.user import UserSettings, build_user
from agentrig.plugins.base import PluginSettings
from agentrig.plugins.memory.prompts import REMINDER_HEAD
from agentrig.store.store import Store
from agentrig.trial.envelope import agent_phase

from tests.agents.conftest import make_ctx
from tests.integration.test_gold_runs import KEY, KEY_ENV, GoldServer, _agentrig, _env, assert_no_key
from tests.support import make_channel

TELECOM_ACTS = "[mobile_data_issue]data_mode_off|data_usage_exceeded[PERSONA:None]"  # the user acts: two turns
TASKS = {"bikeshop": ["rent_city_bike", "damage_report_transfer"], "airline": ["0"], "telecom": [TELECOM_ACTS]}
ENDS = {"damage_report_transfer": "agent_transfer"}  # else user_stop
TURNS = {TELECOM_ACTS: 2}  # else 1
# the agents' own tools still offered with theirs off (docs/agents.md): none that runs a command,
# edits a file or reaches the web
OWN_TOOLS_LEFT = {"codex": {"list_mcp_resources", "list_mcp_resource_templates", "read_mcp_resource",
                            "request_user_input", "view_image"},
                  "claude-code": {"DeferredToolPlaceholder"}}


def _registry_reachable() -> bool:
    try:
        socket.create_connection(("registry.npmjs.org", 443), timeout=10).close()
        return True
    except OSError:
        return False


@pytest.fixture(scope="module")
def installed():
    """Codex and Claude Code at their pinned versions, installed by agentrig once (or found in its cache)."""
    try:
        return {kind: ensure_tool_root(kind) for kind in CLI_KINDS}
    except ToolInstallError:
        if not _registry_reachable():
            pytest.skip("npm's registry is unreachable: Codex and Claude Code cannot be installed")
        raise


def _experiment(path: Path, base_url: str, root: Path) -> Path:
    arms = "".join(f'\n[[arms]]\nname = "{k}"\nagent = {{ kind = "{k}" }}\n' for k in CLI_KINDS)
    path.write_text(f"""
name = "cli"

[benchmark]
data = "{root}"
domains = {json.dumps(list(TASKS))}
task_ids = {{ {", ".join(f"{d} = {json.dumps(ids)}" for d, ids in TASKS.items())} }}

[run]
trials = 1
seed = 7
concurrency = 4
max_invalid_retries = 3

[channel]
base_url = "{base_url}"
api_key_env = "{KEY_ENV}"
model = "gold"
timeout_s = 60
max_attempts = 12
backoff_base_s = 0.01
backoff_max_s = 0.1
{arms}""", encoding="utf-8")
    return path


def test_both_agents_earn_the_gold_s_reward_through_faults_they_never_see(installed, tau2_root, tmp_path):
    log = tmp_path / "endpoint.jsonl"
    server = GoldServer(tau2_root, "--fault-rate", "0.2", "--fault-kinds", "rate_limit,server_error,malformed",
                        "--seed", "11", "--log", str(log))
    try:
        toml = _experiment(tmp_path / "cli.toml", server.base_url, tau2_root)
        done = subprocess.run([*_agentrig(), "run", str(toml), "--json"], capture_output=True, text=True,
                              timeout=900, env=_env())
    finally:
        server.stop()
    assert done.returncode == 0, f"agentrig run failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    out = json.loads(done.stdout)
    run_dir = Path(out["run_dir"])
    with Store.open(run_dir / "trials.sqlite", create=False) as store:
        records = list(store.records())
        calls = store.model_call_rows()
    planned = {(k, d, t) for k in CLI_KINDS for d, ids in TASKS.items() for t in ids}
    assert all(r.verdict.valid for r in records), [(r.key, r.verdict.invalid_cause) for r in records if not r.verdict.valid]
    assert sorted((r.key.arm, r.key.domain, r.key.task_id) for r in records) == sorted(planned)  # each once
    for r in records:
        task = r.key.task_id
        assert (r.verdict.reward, r.verdict.termination) == (1.0, ENDS.get(task, "user_stop")), (r.key, r.verdict)
        turns = [e.data for e in r.trajectory.events if (e.plugin, e.kind) == ("agent", "turn")]
        assert len(turns) == TURNS.get(task, 1), (r.key, turns)
        assert len({t["session"] for t in turns}) == 1 and turns[0]["session"]  # one session, resumed
        for t in turns:  # the agent's own record: no API error, no retry of its own, its tool calls fine
            assert t["errors"] == [] and t["failed_tool_calls"] == [], (r.key, t)
            # Codex's one warning: the role's model name is none it knows (no fault of the endpoint's)
            assert all(n.startswith("Model metadata for `gold` not found") for n in t["notes"]), (r.key, t["notes"])
        if task in ENDS:  # the transfer ended the trial in the middle of the turn: the agent was stopped
            assert turns[-1]["stopped"] and turns[-1]["exit_code"] is None
        else:
            assert all(t["exit_code"] == 0 and t["finished"] and not t["stopped"] for t in turns), turns
        gold = [(a.name, dict(a.arguments or {})) for a in _task(tau2_root, r.key.domain, task).gold_actions
                if a.requestor == "assistant"]
        made = [(c.name, c.arguments) for m in r.trajectory.messages if m.role == "assistant" for c in m.tool_calls]
        assert made == gold, r.key  # the gold's calls, under the τ² names, in order
        # one model call per decision (a call or a text to the user): no side request, and none made
        # after a transfer ended the turn
        texts = [m for m in r.trajectory.messages[1:] if m.role == "assistant" and m.content and not m.tool_calls]
        assert sum(1 for c in r.trajectory.model_calls if c.role == "agent") == len(made) + len(texts), r.key
        recorded = sum(t["tool_calls"] for t in turns)  # as the agent's own record shows them
        assert recorded == len(made) if task not in ENDS else recorded <= len(made), (r.key, turns)
    # every fault the endpoint injected was a retry of the channel, none reached an agent
    lines = [json.loads(x) for x in log.read_text().splitlines() if x.strip()]
    injected = Counter(x["fault"] for x in lines if x.get("fault"))
    causes = Counter(c for row in calls for c in (row["retry_causes"] or "").split(",") if c)
    assert sum(injected.values()) > 0
    assert sum(row["retries"] for row in calls) == sum(injected.values())
    assert causes == Counter({"rate_limited": injected["rate_limit"], "server_error": injected["server_error"],
                              "malformed": injected["malformed"]})
    agent_lines = [x for x in lines if x["headers"].get("x-agentrig-role") == "agent" and x["status"] == 200
                   and not x.get("fault")]
    agent_calls = [c for c in calls if c["role"] == "agent" and not c["error"]]
    assert len(agent_calls) == len(agent_lines)
    assert [sum(c["prompt_tokens"] for c in agent_calls), sum(c["completion_tokens"] for c in agent_calls)] == \
        [sum(x["usage"]["prompt_tokens"] for x in agent_lines), sum(x["usage"]["completion_tokens"] for x in agent_lines)]
    assert {c["arm"] for c in agent_calls} == set(CLI_KINDS)
    assert_no_key(run_dir)


def _task(root, domain, task_id):
    return next(t for t in load_tasks(None if domain == "bikeshop" else root, domain) if t.id == task_id)


def _proc_text(pid: int, name: str) -> str:
    return Path(f"/proc/{pid}/{name}").read_bytes().replace(b"\0", b"\n").decode(errors="replace")


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False


@pytest.mark.parametrize("kind", CLI_KINDS)
async def test_the_agent_sees_its_tokens_never_the_key_and_is_stopped_and_cleaned_up(installed, kind):
    """bikeshop's damage_report_transfer: its transfer ends the trial inside the agent's first turn."""
    gold = GoldEndpoint(None, api_key=KEY)
    await gold.start()
    channel = make_channel(gold.base_url, ("agent", "user"), key=KEY, model="gold", timeout_s=60)
    try:
        ctx = make_ctx("damage_report_transfer", channel=channel)
        agent = CliTauAgent(AgentSettings(kind=kind), ctx)
        episode = Episode(ctx, agent, build_user(UserSettings(kind="llm"), ctx), [], Limits())
        seen: list[dict] = []
        call_tool = ctx.bench.call_tool

        def watching(name, arguments, **kw):  # while the agent's process waits for this tool call
            pid = agent.convo.pid
            files = {str(p): p.read_bytes() for p in agent.home.rglob("*") if p.is_file()}
            seen.append({"pid": pid, "environ": _proc_text(pid, "environ"), "cmdline": _proc_text(pid, "cmdline"),
                         "files": files})
            return call_tool(name, arguments, **kw)

        ctx.bench.call_tool = watching
        try:
            termination = await episode.play()
        finally:
            home = agent.home
            pid = agent.convo.pid if agent.convo is not None else None
            await agent.aclose()
        assert termination == "agent_transfer"
        assert seen, "no tool call reached the episode"
        first = seen[0]
        env = dict(line.split("=", 1) for line in first["environ"].splitlines() if "=" in line)
        names = {"codex": {"CODEX_HOME", "OPENAI_BASE_URL", "OPENAI_API_KEY"},
                 "claude-code": {"CLAUDE_CONFIG_DIR", "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", "IS_SANDBOX",
                                 "DISABLE_TELEMETRY", "DISABLE_ERROR_REPORTING", "DISABLE_AUTOUPDATER",
                                 "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"}}[kind]
        assert set(env) == {"PATH", "HOME", "AGENTRIG_MCP_TOKEN", *names}
        assert env["AGENTRIG_MCP_TOKEN"] == agent.server.token
        assert env.get("OPENAI_API_KEY", env.get("ANTHROPIC_API_KEY")) == agent.proxy.token
        for snap in seen:
            for where, text in (("environ", snap["environ"]), ("cmdline", snap["cmdline"])):
                assert KEY not in text and KEY[8:24] not in text, where
                assert agent.server.token not in snap["cmdline"] and agent.proxy.token not in snap["cmdline"]
            for path, raw in snap["files"].items():
                assert KEY.encode() not in raw and KEY[8:24].encode() not in raw, path
        turn = next(e.data for e in ctx.trajectory.events if e.kind == "turn")
        assert turn["stopped"] and turn["exit_code"] is None  # ended in the middle of its turn
        # what the model is offered: the domain's tools under the MCP names, and none of the agent's
        # own that act (no shell, no file edits, no web, no sub-agents)
        offered = {t["function"]["name"] for t in ctx.trajectory.agent_requests[0].tools}
        domain = {t["function"]["name"] for t in openai_tools(ctx.bench.spec.agent_toolkit)}
        assert {n for n in offered if n.startswith("mcp__tau__")} == {f"mcp__tau__{n}" for n in domain}
        assert {n for n in offered if not n.startswith("mcp__tau__")} == OWN_TOOLS_LEFT[kind]
        assert pid is not None and not _group_alive(pid) and not Path(f"/proc/{pid}").exists()
        assert not home.exists()
    finally:
        await channel.aclose()
        await gold.stop()


@pytest.mark.parametrize("kind", CLI_KINDS)
async def test_the_trial_s_time_limit_kills_the_agent_in_the_middle_of_its_turn(installed, kind):
    """Every answer takes 3 s: the user's opening, then the agent's first model call, which the
    trial's 5 s limit cuts."""
    gold = GoldEndpoint(None, api_key=KEY, delay_s=3.0)
    await gold.start()
    channel = make_channel(gold.base_url, ("agent", "user"), key=KEY, model="gold", timeout_s=60)
    try:
        ctx = make_ctx("rent_city_bike", channel=channel)
        agent = CliTauAgent(AgentSettings(kind=kind), ctx)
        episode = Episode(ctx, agent, build_user(UserSettings(kind="llm"), ctx), [], Limits())
        try:
            termination = await agent_phase(ctx, episode.play(), budget=5.0, timeout="timeout")
        finally:
            home, pid = agent.home, agent.convo.pid
            await agent.aclose()
        assert termination == "timeout"
        assert not any(e.kind == "turn" for e in ctx.trajectory.events)  # the turn never ended by itself
        assert not _group_alive(pid) and not Path(f"/proc/{pid}").exists() and not home.exists()
    finally:
        await channel.aclose()
        await gold.stop()

@pytest.mark.parametrize("kind", CLI_KINDS)
async def test_step_limit_ends_the_trial_at_the_proxy_as_limits_exceeded(installed, kind):
    gold = GoldEndpoint(None, api_key=KEY)
    await gold.start()
    channel = make_channel(gold.base_url, ("agent", "user"), key=KEY, model="gold", timeout_s=60)
    try:
        ctx = make_ctx("rent_city_bike", channel=channel)
        record = await play_trial(ctx, agent=AgentSettings(kind=kind, step_limit=2), user=UserSettings(kind="llm"),
                                  plugins=[], limits=Limits())
        assert record.verdict.valid and record.verdict.termination == "limits_exceeded" and record.verdict.reward == 0.0
        stop = next(e.data for e in record.trajectory.events if (e.plugin, e.kind) == ("agent", "stop"))
        assert "step limit: 2 model calls" in stop["detail"]
        assert sum(1 for c in record.trajectory.model_calls if c.role == "agent") == 2  # the third never left
    finally:
        await channel.aclose()
        await gold.stop()


@pytest.mark.parametrize("extra, needle", [
    ('run = "python3 agent.py"', "agent.run is for terminal's kind \"command\", not 'codex'"),
    ('config_file = "no-such.toml"', "agent.config_file"),
])
def test_settings_of_another_kind_are_refused_when_the_experiment_loads(tmp_path, extra, needle):
    from agentrig.errors import ConfigError
    from agentrig.run.experiment import load

    toml = tmp_path / "exp.toml"
    toml.write_text(f"""
name = "x"
[benchmark]
domains = ["bikeshop"]
[channel]
base_url = "http://127.0.0.1:9/v1"
model = "m"
[[arms]]
name = "codex"
agent = {{ kind = "codex", {extra} }}
""", encoding="utf-8")
    with pytest.raises(ConfigError, match="fix:") as info:
        load(toml, prepare=False)
    assert needle in str(info.value) and "arm" in str(info.value)


@pytest.mark.parametrize("kind", CLI_KINDS)
async def test_the_memory_plug_in_s_reminders_reach_the_model_not_the_agent(installed, kind):
    """A plug-in's context of a step is the proxy's hints for that turn: the model calls of a hinted
    turn carry it upstream, no other does; it never enters the conversation, which is the gold's."""
    gold = GoldEndpoint(None, api_key=KEY, record=True)
    await gold.start()
    channel = make_channel(gold.base_url, ("agent", "user", "memory"), key=KEY, model="gold", timeout_s=60)
    try:
        ctx = make_ctx("rent_city_bike", channel=channel)
        record = await play_trial(ctx, agent=AgentSettings(kind=kind), user=UserSettings(kind="llm"),
                                  plugins=[PluginSettings(kind="memory", mode="always_inject")], limits=Limits())
        assert record.verdict.valid and record.verdict.reward == 1.0, record.verdict
        events = record.trajectory.events
        injected = [e.data["injected"] for e in events if e.kind == "memory.trigger" and e.data.get("injected")]
        assert injected, "the memory plug-in reminded nothing"
        hinted = {e.data["call"] for e in events if (e.plugin, e.kind) == ("proxy", "hints")}
        bodies = [r.json for r in gold.requests if r.method == "POST" and r.json.get("tools")
                  and any((t.get("function") or {}).get("name", "").startswith("mcp__tau__") for t in r.json["tools"])]
        carrying = [i for i, b in enumerate(bodies) if REMINDER_HEAD in json.dumps(b)]
        agent_calls = [i for i, c in enumerate(record.trajectory.model_calls) if c.role == "agent"]
        assert len(bodies) == len(agent_calls) and hinted
        assert carrying == [agent_calls.index(c) for c in sorted(hinted)]  # the hinted calls, and only them
        assert all(REMINDER_HEAD not in (m.content or "") for m in record.trajectory.messages)
    finally:
        await channel.aclose()
        await gold.stop()
