"""Agent kind "python" (agents/python_agent/): a user's agent in its own process, one per trial.

Real subprocesses (the runner started with an interpreter, the protocol on its socket), real HTTP
(the agent's `openai` client → the trial's TrialProxy → a real Channel → the gold endpoint), the
real τ² episode and judge. The test agents are examples/python_agents/openai_agent.py and the probe
around it (tests/agents/python_agents/probe_agent.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from agentrig.agents.base import AgentSettings
from agentrig.agents.python_agent import check_settings, preflight
from agentrig.agents.python_agent.host import agent_environment
from agentrig.bench.tau.episode import play_trial
from agentrig.bench.tau.scripted.gold_endpoint import GoldEndpoint
from agentrig.bench.tau.user import UserSettings
from agentrig.benchmark import Limits
from agentrig.channel.client import Channel
from agentrig.config import ChannelConfig, ChannelSettings, RoleConfig
from agentrig.errors import ConfigError
from agentrig.testing.fake_endpoint import FakeEndpoint

from tests.agents.conftest import make_ctx
from tests.support import KEY, KEY_ENV

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "python_agents"
PROBES = Path(__file__).resolve().parent / "python_agents"
PATH = [str(EXAMPLES), str(PROBES)]
TASKS = ("rent_city_bike", "damage_report_transfer")  # the second ends by a transfer
GOLD_USER = UserSettings(kind="llm", guidelines="builtin")


def probe(**settings) -> AgentSettings:
    return AgentSettings(kind="python", entry="probe_agent:make", path=PATH, settings=settings)


def channel_to(agent_url: str, others_url: str | None = None, **settings) -> Channel:
    base = dict(base_url=others_url or agent_url, api_key_env=KEY_ENV, model="gold", timeout_s=10, max_attempts=10,
                backoff_base_s=0.001, backoff_max_s=0.005)
    base.update(settings)
    roles = {"agent": RoleConfig(base_url=agent_url), "user": RoleConfig(), "judge": RoleConfig()}
    return Channel(ChannelConfig(channel=ChannelSettings(**base), roles=roles), env={KEY_ENV: KEY})


@pytest.fixture
async def gold():
    ep = GoldEndpoint(None, api_key=KEY, fault_rate=0.25, seed=3)
    await ep.start()
    yield ep
    await ep.stop()


async def play(agent: AgentSettings, channel: Channel, task: str = "rent_city_bike", limits: Limits = Limits()):
    ctx = make_ctx(task, channel=channel)
    record = await play_trial(ctx, agent=agent, user=GOLD_USER, plugins=[], limits=limits)
    return ctx, record


def events(record, kind: str) -> list:
    return [e for e in record.trajectory.events if e.plugin == "agent" and e.kind == kind]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is no longer running
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


# ------------------------------------------------------------------------------ playing


@pytest.mark.parametrize("task", TASKS)
async def test_the_openai_example_plays_the_gold_through_faults(gold, task):
    channel = channel_to(gold.base_url)
    try:
        ctx, record = await play(AgentSettings(kind="python", entry="openai_agent:make", path=[str(EXAMPLES)]),
                                 channel, task)
    finally:
        await channel.aclose()
    v = record.verdict
    assert v.valid and v.termination in ("user_stop", "agent_transfer") and v.reward == 1.0, v
    calls = record.trajectory.model_calls
    agent_calls = [c for c in calls if c.role == "agent"]
    assert agent_calls and all(c.error is None for c in calls)
    # every agent message came from one of its model calls, recorded with the request that made it
    said = [m for m in record.trajectory.messages[1:] if m.role == "assistant"]
    assert said and all(m.call is not None and calls[m.call].role == "agent" for m in said)
    assert len(record.trajectory.agent_requests) == len(agent_calls)
    # the tool calls are the task's gold actions, in order
    gold_names = [a.name for a in ctx.task.evaluation_criteria.actions if a.requestor != "user"]
    assert [c.name for m in said for c in m.tool_calls] == gold_names
    assert events(record, "ready")[0].data["client"] == "openai"


@pytest.mark.parametrize("api", ["chat", "responses"])
async def test_the_agents_sdk_example_calls_its_tools_itself_and_a_transfer_ends_the_trial(gold, api):
    agent = AgentSettings(kind="python", entry="agents_sdk_agent:make", path=[str(EXAMPLES)], settings={"api": api})
    channel = channel_to(gold.base_url)
    try:
        ctx, record = await play(agent, channel, "damage_report_transfer")
    finally:
        await channel.aclose()
    v = record.verdict
    assert v.valid and v.termination == "agent_transfer" and v.reward == 1.0, v
    msgs = record.trajectory.messages
    calls = [m for m in msgs if m.role == "assistant" and m.tool_calls]
    assert [m.tool_calls[0].name for m in calls] == ["find_customer_by_phone", "get_customer_details",
                                                      "transfer_to_human_agents"]
    assert all(len(m.tool_calls) == 1 and m.call is not None for m in calls)  # each names its model call
    assert msgs[-1].role == "tool" and msgs[-2].tool_calls[0].name == "transfer_to_human_agents"
    # nothing after the transfer: the SDK's run was not waited for, its process ended
    agent_calls = [c for c in record.trajectory.model_calls if c.role == "agent"]
    assert max(c.turn for c in agent_calls) < msgs[-1].turn
    assert not alive(events(record, "start")[0].data["pid"])


async def test_an_anthropic_client_when_asked(gold):
    agent = AgentSettings(kind="python", entry="anthropic_agent:make", path=PATH, client="anthropic")
    channel = channel_to(gold.base_url)
    try:
        _, record = await play(agent, channel)
    finally:
        await channel.aclose()
    assert record.verdict.valid and record.verdict.reward == 1.0, record.verdict
    assert events(record, "ready")[0].data["client"] == "anthropic"


async def test_faults_are_retried_by_the_channel_never_by_the_agent():
    ep = GoldEndpoint(None, api_key=KEY, fault_rate=0.5, seed=11)
    await ep.start()
    channel = channel_to(ep.base_url)
    try:
        _, record = await play(AgentSettings(kind="python", entry="openai_agent:make", path=[str(EXAMPLES)]), channel)
    finally:
        await channel.aclose()
        await ep.stop()
    assert record.verdict.valid and record.verdict.reward == 1.0
    agent_calls = [c for c in record.trajectory.model_calls if c.role == "agent"]
    assert sum(c.retries for c in agent_calls) > 0  # at 50% faults, some agent call was retried


async def test_the_agent_process_gets_the_token_never_the_key(gold, monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)
    monkeypatch.setenv("SOME_OTHER_PLACE", KEY)  # the key under a name agentrig does not know: dropped by value
    monkeypatch.setenv("OPENAI_API_KEY", "sk-a-real-looking-key-0000")
    monkeypatch.setenv("PYTHONPATH", "/somewhere/agentrig/src")
    monkeypatch.setenv("AGENTRIG_HARMLESS", "kept")
    channel = channel_to(gold.base_url)
    try:
        _, record = await play(probe(dump_env=True, chatter=True), channel)
    finally:
        await channel.aclose()
    assert record.verdict.valid and record.verdict.reward == 1.0
    out = "".join(e.data["text"] for e in events(record, "output") if e.data["stream"] == "stdout")
    env = json.loads(next(line for line in out.splitlines() if line.startswith("ENV "))[4:])
    assert env["OPENAI_API_KEY"] == "[trial token]" == env["ANTHROPIC_API_KEY"]  # the token, scrubbed in the record
    assert env["OPENAI_BASE_URL"].startswith("http://127.0.0.1:") and env["OPENAI_BASE_URL"].endswith("/v1")
    assert env["AGENTRIG_MODEL"] == "gold" and env["AGENTRIG_HARMLESS"] == "kept"
    assert KEY_ENV not in env and "SOME_OTHER_PLACE" not in env and "PYTHONPATH" not in env
    assert KEY not in json.dumps(record.model_dump(mode="json"))
    # what the agent printed, each stream apart, step by step
    assert "step 0: 2 messages, 2 new" in out
    err = "".join(e.data["text"] for e in events(record, "output") if e.data["stream"] == "stderr")
    assert "step 1 on stderr" in err


def test_the_environment_drops_every_known_secret():
    ctx = make_ctx(channel=channel_to("http://127.0.0.1:9/v1"))
    env = agent_environment(ctx, "http://127.0.0.1:5", "agentrig-tok", "m",
                            environ={KEY_ENV: "x-not-the-key", "OPENAI_ORG_ID": "org", "PATH": "/bin", "NO_PROXY": "corp"})
    assert KEY_ENV not in env and "OPENAI_ORG_ID" not in env and env["PATH"] == "/bin"
    assert env["OPENAI_API_KEY"] == "agentrig-tok" and env["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:5"
    assert env["NO_PROXY"] == "corp,127.0.0.1,localhost"


def test_a_key_under_another_name_is_dropped_before_any_call(monkeypatch):
    """The channel's key is a secret under any name from the start: a trial's agent starts (and the
    preflight imports the entry) before the channel has read the key for a first call. A value no
    test has used before, so nothing registered it."""
    import uuid

    from agentrig.agents.python_agent.check import _environment

    value = f"sk-fresh-{uuid.uuid4().hex}"
    monkeypatch.setenv("MY_GATEWAY_KEY", value)
    monkeypatch.setenv("COPY_OF_IT", value)
    assert not {"MY_GATEWAY_KEY", "COPY_OF_IT"} & set(_environment(frozenset({"MY_GATEWAY_KEY"})))
    from types import SimpleNamespace

    from agentrig.agents.python_agent.check import channel_secrets

    exp = SimpleNamespace(channel=ChannelSettings(api_key_env="MY_GATEWAY_KEY"),
                          roles={"user": RoleConfig(api_key_env="USER_KEY", headers_from_env={"X-Org": "ORG_SECRET"})})
    arm = SimpleNamespace(roles={"agent": RoleConfig(api_key_env="ARM_KEY")})
    assert channel_secrets(exp, arm) >= {"MY_GATEWAY_KEY", "USER_KEY", "ORG_SECRET", "ARM_KEY"}
    fresh = f"sk-fresh-{uuid.uuid4().hex}"
    ctx = make_ctx(channel=channel_to("http://127.0.0.1:9/v1"))
    env = agent_environment(ctx, "http://127.0.0.1:5", "agentrig-tok", "m",
                            environ={KEY_ENV: fresh, "COPY_OF_IT": fresh, "PATH": "/bin"})
    assert KEY_ENV not in env and "COPY_OF_IT" not in env and env["PATH"] == "/bin"


# ------------------------------------------------------------------------------ how it ends


async def test_an_agent_that_raises_fails_the_trial_with_its_traceback(gold):
    channel = channel_to(gold.base_url)
    try:
        _, record = await play(probe(raise_at=1), channel)
    finally:
        await channel.aclose()
    v = record.verdict
    assert v.valid and v.termination == "agent_error" and v.reward == 0.0
    (error,) = events(record, "error")
    assert error.data["stage"] == "respond" and "probe failure at step 1" in error.data["error"]
    tb = error.data["traceback"]
    assert "Traceback" in tb and "probe_agent.py" in tb and "ValueError: probe failure at step 1" in tb
    assert "the Python agent failed in respond()" in events(record, "stop")[0].data["detail"]


@pytest.mark.parametrize("settings, stage, text", [
    ({"raise_in_make": True}, "make", "RuntimeError: probe cannot be made"),
    ({"bad_reply_at": 0}, "respond", "respond() returned a int"),
    ({"exit_at": 1}, "respond", "exit code 3"),
])
async def test_other_agent_failures_end_the_trial_agent_error(gold, settings, stage, text):
    channel = channel_to(gold.base_url)
    try:
        _, record = await play(probe(**settings), channel)
    finally:
        await channel.aclose()
    assert record.verdict.valid and record.verdict.termination == "agent_error"
    (error,) = events(record, "error")
    assert error.data["stage"] == stage and text in error.data["error"]
    if "exit_at" in settings:  # what it said on stderr before dying is its traceback
        assert "probe: leaving now" in error.data["traceback"]


async def test_a_channel_fault_makes_the_trial_invalid_not_the_agents_failure(gold):
    down = FakeEndpoint(api_key=KEY, models=("gold",), fault_rate=1.0, fault_kinds=("server_error",))
    await down.start()
    channel = channel_to(down.base_url, gold.base_url, max_attempts=2)
    try:
        _, record = await play(probe(), channel)
    finally:
        await channel.aclose()
        await down.stop()
    v = record.verdict
    assert not v.valid and v.termination == "channel_error", v
    assert not events(record, "error")  # the agent tripped on the 503 it got: not recorded as its failure


async def test_a_proxy_limit_ends_the_trial_limits_exceeded(gold):
    agent = AgentSettings(kind="python", entry="openai_agent:make", path=[str(EXAMPLES)], step_limit=2)
    channel = channel_to(gold.base_url)
    try:
        _, record = await play(agent, channel)
    finally:
        await channel.aclose()
    v = record.verdict
    assert v.valid and v.termination == "limits_exceeded" and v.reward == 0.0
    assert sum(1 for c in record.trajectory.model_calls if c.role == "agent") == 2


async def test_a_trial_that_times_out_ends_the_agents_process(gold):
    channel = channel_to(gold.base_url)
    try:
        _, record = await play(probe(hang_at=1), channel, limits=Limits(trial_timeout_s=8))
    finally:
        await channel.aclose()
    assert record.verdict.valid and record.verdict.termination == "timeout"
    pid = events(record, "start")[0].data["pid"]
    assert not alive(pid)
    assert any("hanging" in e.data["text"] for e in events(record, "output"))


# ------------------------------------------------------------------------------ settings and preflight


@pytest.mark.parametrize("agent, needle", [
    (AgentSettings(kind="python"), "needs `entry`"),
    (AgentSettings(kind="python", entry="my_agent.make"), "is not \"module:function\""),
    (AgentSettings(kind="python", entry="my agent:make"), "is not \"module:function\""),
    (AgentSettings(kind="python", entry="m:make", python="/nonexistent/bin/python"), "agent.python /nonexistent/bin/python"),
    (AgentSettings(kind="python", entry="m:make", path=["/nonexistent/dir"]), "agent.path /nonexistent/dir"),
    (AgentSettings(kind="llm", entry="m:make"), "agent.entry is for kind \"python\""),
])
def test_settings_errors_name_the_setting_and_the_fix(agent, needle):
    with pytest.raises(ConfigError) as err:
        check_settings(agent, "exp.toml: arm 'a'")
    assert needle in str(err.value) and "fix:" in str(err.value)


@pytest.mark.parametrize("agent, needle", [
    (AgentSettings(kind="python", entry="no_such_module:make", path=PATH),
     "agent.entry 'no_such_module:make': cannot import it"),
    (AgentSettings(kind="python", entry="broken_import:make", path=PATH), "No module named 'a_module_that_does_not_exist'"),
    (AgentSettings(kind="python", entry="not_a_factory:make", path=PATH), "agent.entry: not_a_factory:make is a int"),
    (AgentSettings(kind="python", entry="probe_agent:make", path=PATH, python="/bin/false"), "agent.python: /bin/false"),
])
def test_the_preflight_says_what_cannot_start(agent, needle):
    check_settings(agent, "exp.toml: arm 'a'")
    with pytest.raises(ConfigError) as err:
        preflight(agent, "exp.toml: arm 'a'")
    assert needle in str(err.value) and "fix:" in str(err.value), str(err.value)


def test_the_preflight_passes_a_good_entry():
    preflight(AgentSettings(kind="python", entry="probe_agent:make", path=PATH), "exp.toml: arm 'a'")


async def test_a_cancelled_trial_ends_the_agents_process(gold):
    """Ctrl-C cancels the trials in flight: the agent's process goes with its trial."""
    import asyncio

    channel = channel_to(gold.base_url)
    ctx = make_ctx("rent_city_bike", channel=channel)
    trial = asyncio.ensure_future(play_trial(ctx, agent=probe(hang_at=1), user=GOLD_USER, plugins=[], limits=Limits()))
    try:
        for _ in range(600):  # a hang guard: the agent is in its second step, hanging
            if ctx.trajectory.counters.get("agent_steps", 0) >= 2 or trial.done():
                break
            await asyncio.sleep(0.1)
        assert not trial.done()
        pid = next(e.data["pid"] for e in ctx.trajectory.events if e.kind == "start")
        assert alive(pid)
        trial.cancel()
        with pytest.raises(asyncio.CancelledError):
            await trial
        assert not alive(pid)
    finally:
        await channel.aclose()


def test_the_entry_modules_code_is_in_the_runs_comparability(tmp_path):
    from agentrig.agents.python_agent import entry_sha

    (tmp_path / "mine.py").write_text("def make(settings, client, model):\n    return None\n")
    agent = AgentSettings(kind="python", entry="mine:make", path=[str(tmp_path)])
    first = entry_sha(agent)
    assert first and entry_sha(agent) == first
    (tmp_path / "mine.py").write_text("def make(settings, client, model):\n    return 1\n")
    assert entry_sha(agent) not in (None, first)
