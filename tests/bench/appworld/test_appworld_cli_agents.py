"""Codex CLI and Claude Code as the AppWorld agent (bench/appworld/cli_agent.py), the real binaries
(installed by agentrig's installer into its cache, or found there) through the real stack:
``agentrig run`` (a subprocess) on two synthetic AppWorld tasks in AppWorld's own engine, every
model call through the measuring proxy to the scripted AppWorld endpoint (its own process) with
20 % of its answers 429 / 500 / malformed, the code agent's native arm beside them:

- every trial valid once and earning the code agent's reward on the same task (the solution: 1),
  ended ``completed`` by the world, the solution's code run in the world through the MCP ``execute``
  tool (the recorded ``execute`` calls are the solution's steps), the agent stopped at once by the
  call that completed the task;
- the retries in the store equal to the faults the endpoint injected (summed over the arms), none
  seen by an agent (its record of the turn holds no error);
- the key nowhere in the run directory;
- ``max_steps`` (the executions limit, at the tool server) ends the trial ``limits_exceeded``, valid;
- in one process, each agent's isolation: its environment and files hold the per-trial tokens,
  never the key; its process group and its home are gone after the trial.
"""

from __future__ import annotations

import json
import subprocess
import textwrap
from collections import Counter
from pathlib import Path

import pytest

from agentrig.agents.installed import ToolInstallError, ensure_tool_root
from agentrig.bench.appworld.cli_agent import CLI_KINDS
from agentrig.store.store import Store

from tests.bench.tau.test_cli_agents import _registry_reachable
from tests.integration.test_gold_runs import KEY_ENV, _agentrig, _env, assert_no_key
from tests.support import EndpointProcess

# every synthetic task: notes made, a question answered (complete_task(answer=…)), a note deleted, two apps
TASKS = ["5a1c0de_1", "5a1c0de_2", "6b2d1ef_1", "7c3e2fa_1", "8d4f3ab_1"]
ARMS = {"native": '{ kind = "llm" }', **{k: f'{{ kind = "{k}" }}' for k in CLI_KINDS}}


@pytest.fixture(scope="module")
def installed():
    try:
        return {kind: ensure_tool_root(kind) for kind in CLI_KINDS}
    except ToolInstallError:
        if not _registry_reachable():
            pytest.skip("npm's registry is unreachable: Codex and Claude Code cannot be installed")
        raise


def _experiment(path: Path, root: Path, python: Path, base_url: str, arms: dict, *, extra: str = "") -> Path:
    blocks = "".join(f'\n[[arms]]\nname = "{name}"\nagent = {agent}\n' for name, agent in arms.items())
    path.write_text(textwrap.dedent(f"""\
        name = "{path.stem}"
        [benchmark]
        kind = "appworld"
        data = "{root}"
        dataset = "dev"
        task_ids = {json.dumps(TASKS)}
        python = "{python}"
        workers = 2
        [run]
        trials = 1
        concurrency = 3
        max_invalid_retries = 3
        {extra}
        [channel]
        base_url = "{base_url}"
        api_key_env = "{KEY_ENV}"
        model = "appworld-solution"
        timeout_s = 60
        max_attempts = 12
        backoff_base_s = 0.01
        backoff_max_s = 0.1
        """) + blocks, encoding="utf-8")
    return path


def _run(tmp_path: Path, synthetic_root: Path, appworld_python: Path, arms: dict, *fault: str, extra: str = ""):
    log = tmp_path / "endpoint.jsonl"
    server = EndpointProcess("agentrig.bench.appworld.scripted.appworld_endpoint", "--root", str(synthetic_root),
                             "--api-key-env", KEY_ENV, "--log", str(log), *fault, env=_env())
    try:
        toml = _experiment(tmp_path / "cli.toml", synthetic_root, appworld_python, server.base_url, arms, extra=extra)
        done = subprocess.run([*_agentrig(), "run", str(toml), "--json"], capture_output=True, text=True,
                              timeout=900, env=_env())
    finally:
        server.stop()
    assert done.returncode == 0, f"agentrig run failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    run_dir = Path(json.loads(done.stdout)["run_dir"])
    with Store.open(run_dir / "trials.sqlite", create=False) as store:
        return run_dir, list(store.records(valid=None)), store.model_call_rows(), log


def _synthetic_steps(root: Path, task: str) -> list[str]:
    data = json.loads((root / "synthetic.json").read_text(encoding="utf-8"))
    return [code for _, code in data["tasks"][task]["steps"]]


def test_both_agents_solve_the_tasks_through_faults_they_never_see(installed, synthetic_root, appworld_python, tmp_path):
    run_dir, records, calls, log = _run(tmp_path, synthetic_root, appworld_python, ARMS, "--fault-rate", "0.2",
                                        "--fault-kinds", "rate_limit,server_error,malformed", "--seed", "11")
    assert all(r.verdict.valid for r in records), [(r.key, r.verdict.invalid_cause) for r in records if not r.verdict.valid]
    assert sorted((r.key.arm, r.key.task_id) for r in records) == sorted((a, t) for a in ARMS for t in TASKS)
    native = {r.key.task_id: r.verdict.reward for r in records if r.key.arm == "native"}
    assert native == {t: 1.0 for t in TASKS}
    for r in records:
        assert (r.verdict.reward, r.verdict.termination) == (native[r.key.task_id], "completed"), (r.key, r.verdict)
        if r.key.arm == "native":
            continue
        codes = [c.arguments["code"] for m in r.trajectory.messages if m.role == "assistant" for c in m.tool_calls]
        assert codes == _synthetic_steps(synthetic_root, r.key.task_id), r.key  # the solution, step by step
        assert [m.role for m in r.trajectory.messages[:2]] == ["system", "user"]
        turns = [e.data for e in r.trajectory.events if (e.plugin, e.kind) == ("agent", "turn")]
        assert len(turns) == 1, turns  # one turn: no simulated user
        t = turns[0]
        assert t["errors"] == [] and t["failed_tool_calls"] == [], (r.key, t)
        assert t["stopped"] and t["exit_code"] is None, t  # killed by the call that completed the task
        # one model call per execution: none after the task was complete
        assert sum(1 for c in r.trajectory.model_calls if c.role == "agent") == len(codes), r.key
    lines = [json.loads(x) for x in log.read_text().splitlines() if x.strip()]
    injected = Counter(x["fault"] for x in lines if x.get("fault"))
    assert sum(injected.values()) > 0
    assert sum(row["retries"] for row in calls) == sum(injected.values())
    assert {c["arm"] for c in calls if c["role"] == "agent"} == set(ARMS)
    assert_no_key(run_dir)


def test_the_executions_limit_ends_the_trial_limits_exceeded(installed, synthetic_root, appworld_python, tmp_path):
    arms = {k: f'{{ kind = "{k}" }}' for k in CLI_KINDS}
    _, records, _, _ = _run(tmp_path, synthetic_root, appworld_python, arms, extra="max_steps = 1")
    assert sorted((r.key.arm, r.key.task_id) for r in records) == sorted((a, t) for a in arms for t in TASKS)
    for r in records:
        assert r.verdict.valid and r.verdict.termination == "limits_exceeded" and r.verdict.reward == 0.0, (r.key, r.verdict)
        assert r.trajectory.counters.get("executions") == 1, r.key


def _proc_text(pid: int, name: str) -> str:
    return Path(f"/proc/{pid}/{name}").read_bytes().replace(b"\0", b"\n").decode(errors="replace")


@pytest.mark.parametrize("kind", CLI_KINDS)
async def test_the_agent_sees_its_tokens_never_the_key_and_is_cleaned_up(installed, kind, synthetic_root,
                                                                          appworld_python):
    """In one process: the agent's environment (read from /proc while its first execution runs) holds
    the two per-trial tokens, never the key, nor do its files; its process group is gone once the
    completing call ended its turn, its home once the trial ends."""
    import asyncio
    import os

    from agentrig.agents.base import AgentSettings
    from agentrig.bench.appworld.cli_agent import CliAppWorldAgent
    from agentrig.bench.appworld.data import load_task
    from agentrig.bench.appworld.episode import AppWorldSession, SessionSettings
    from agentrig.bench.appworld.pool import WorkerPool
    from agentrig.bench.appworld.scripted.appworld_endpoint import AppWorldEndpoint
    from agentrig.benchmark import Limits
    from agentrig.trial.context import TrialContext
    from agentrig.types import TrialKey

    from tests.support import KEY, make_channel

    task_id = TASKS[0]
    endpoint = AppWorldEndpoint(synthetic_root, api_key=KEY)
    await endpoint.start()
    pool = WorkerPool(appworld_python, synthetic_root, 1)
    channel = make_channel(endpoint.base_url, ("agent",), model="appworld-solution", timeout_s=60)
    ctx = TrialContext(key=TrialKey(arm="a", domain="appworld", task_id=task_id, trial=0),
                       task=load_task(synthetic_root, task_id), seed=1, channel=channel)
    seen: list[dict] = []
    try:
        async with asyncio.timeout(600), pool.lease() as worker:
            await worker.call("open", task_id=task_id, exec_timeout_s=60, max_interactions=20, random_seed=100,
                              raise_on_failure=True, timeout_s=120)
            session = AppWorldSession(ctx, ctx.task, worker, SessionSettings(
                agent=AgentSettings(kind=kind), limits=Limits(max_steps=10), execute_timeout_s=60, output_limit=20000))
            agent = CliAppWorldAgent(AgentSettings(kind=kind), session)
            execute = session.execute

            async def watching(code):  # while the agent's process waits for this tool call
                if not seen:
                    pid = agent.trial.convo.pid
                    seen.append({"pid": pid, "environ": _proc_text(pid, "environ"), "cmdline": _proc_text(pid, "cmdline"),
                                 "files": [p.read_bytes() for p in agent.trial.home.rglob("*") if p.is_file()]})
                return await execute(code)

            session.execute = watching
            try:
                await agent.run(session)
                home, pid = agent.trial.home, agent.trial.convo.pid
                proxy_token, mcp_token = agent.trial.proxy.token, agent.trial.server.token
            finally:
                await agent.aclose()
            assert session.completed
    finally:
        await channel.aclose()
        await endpoint.stop()
        pool.close()
    assert seen, "the agent never executed code"
    env = dict(line.split("=", 1) for line in seen[0]["environ"].splitlines() if "=" in line)
    assert env["AGENTRIG_MCP_TOKEN"] == mcp_token
    assert env.get("OPENAI_API_KEY", env.get("ANTHROPIC_API_KEY")) == proxy_token
    assert KEY not in seen[0]["environ"] and KEY not in seen[0]["cmdline"]
    assert all(KEY.encode() not in f for f in seen[0]["files"])
    with pytest.raises(ProcessLookupError):
        os.killpg(pid, 0)
    assert not home.exists()
