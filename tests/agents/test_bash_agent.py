"""The bash agent through the real channel, a real local endpoint and a real bwrap sandbox."""

from __future__ import annotations

import asyncio
import os

import pytest

from agentrig.agents.base import AgentSettings, AgentStop
from agentrig.agents.bash import BashAgent, parse_action, submission
from agentrig.agents.bash_prompts import ACTION_LABEL, PREAMBLE, SUBMIT_SENTINEL
from agentrig.bench.terminal.tasks.taskfile import builtin_tasks_dir, load_tasks
from agentrig.bench.terminal.tasks.taskmodel import support
from agentrig.channel.client import Channel
from agentrig.config import ChannelConfig, ChannelSettings, Price, RoleConfig
from agentrig.errors import ContextOverflow
from agentrig.testing.fake_endpoint import FakeEndpoint
from agentrig.testing.personalities import make_personality
from agentrig.bench.terminal.scripted.solution_endpoint import SolutionEndpoint
from agentrig.types import Transient

from tests.support import KEY, KEY_ENV, make_channel

from .conftest import chat_bodies
from .terminal_harness import builtin_task, open_session, verify_session

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the bwrap sandbox enters namespaces with setns: needs root")

TEXT = AgentSettings(tool_mode="text")
NATIVE = AgentSettings(tool_mode="native")
SUBMIT = f"echo {SUBMIT_SENTINEL} && echo finished"


def block(command: str, before: str = "Next.") -> dict:
    return {"content": f"{before}\n\n```{ACTION_LABEL}\n{command}\n```"}


def call(command: str, content: str | None = None, **extra) -> dict:
    return {"content": content, "tool_calls": [{"name": "bash", "arguments": {"command": command}}], **extra}


async def play(session, settings: AgentSettings) -> str | None:
    """Run the agent phase; returns the AgentStop termination, or None when it returned."""
    try:
        await BashAgent(settings, session).run(session)
    except AgentStop as stop:
        return stop.termination
    return None


@pytest.fixture
async def session(fake, tmp_path):
    channel = make_channel(fake.base_url)
    s = await open_session(builtin_task("write-marker"), channel, tmp_path, command_timeout_s=20)
    yield s
    await s.sandbox.close()
    await channel.aclose()


# ---------------------------------------------------------------------------------- solving


@pytest.mark.parametrize("mode", ["native", "text"])
async def test_solves_every_builtin_task_through_the_solution_endpoint(mode, tmp_path):
    tasks, invalid = load_tasks(builtin_tasks_dir())
    assert not invalid and len(tasks) >= 12
    playable = [t for t in tasks if support(t, "bwrap").ok]
    assert len(playable) == len(tasks)
    async with SolutionEndpoint(api_key=KEY, record=True) as ep:
        channel = make_channel(ep.base_url, model="solution")
        gate = asyncio.Semaphore(3)

        async def one(task):
            async with gate:
                s = await open_session(task, channel, tmp_path / task.id)
                try:
                    stop = await play(s, AgentSettings(tool_mode=mode, step_limit=30))  # bounds a failure
                    result = await verify_session(s)
                finally:
                    await s.sandbox.close()
                return task.id, stop, s, result

        outcomes = await asyncio.gather(*(one(t) for t in playable))
        await channel.aclose()
    for task_id, stop, s, result in outcomes:
        assert stop is None and s.submitted, task_id
        assert s.submission == "solution played\n", task_id
        assert result.resolved, (task_id, result.failure_mode, result.output[-800:])
        assistants = [m for m in s.ctx.trajectory.messages if m.role == "assistant"]
        observations = [m for m in s.ctx.trajectory.messages if m.role == ("tool" if mode == "native" else "user")]
        assert all(len(m.tool_calls) == 1 and m.tool_calls[0].name == "bash" for m in assistants), task_id
        assert [m.tool_calls[0].arguments["command"] for m in assistants] == s.commands, task_id
        assert observations[-1].content.startswith("exit code: 0") and SUBMIT_SENTINEL in observations[-1].content
        system = s.ctx.trajectory.messages[0].content
        assert ("same bash session" in system) == task_id.startswith("shell-session"), task_id
        assert ("fresh `bash -lc`" in system) != task_id.startswith("shell-session"), task_id
    bodies = [r.json for r in ep.requests if r.path.endswith("/chat/completions")]
    assert all(("tools" in b) == (mode == "native") for b in bodies)
    chats = [r for r in ep.requests if r.path.endswith("/chat/completions")]  # not the window question (GET /models)
    assert {r.headers["x-agentrig-task"] for r in chats} == {t.id for t in playable}


# ---------------------------------------------------------------------------------- text mode


def test_parse_action_accepts_exactly_one_labelled_block():
    assert parse_action(f"Look.\n```{ACTION_LABEL}\nls -la\n```") == ("ls -la", None)
    # a README-style ```bash fence is text, not an action
    command, problem = parse_action("Run this:\n```bash\nrm -rf /\n```")
    assert command is None and f"```{ACTION_LABEL}" in problem and "```bash" in problem
    # a longer fence may hold ``` lines (a markdown file written by the agent)
    text = f"````{ACTION_LABEL}\ncat > notes.md <<'EOF'\n```\ncode\n```\nEOF\n````"
    assert parse_action(text)[0] == "cat > notes.md <<'EOF'\n```\ncode\n```\nEOF"
    # thinking is not read for actions
    assert parse_action(f"<think>```{ACTION_LABEL}\nwrong\n```</think>\n```{ACTION_LABEL}\nright\n```")[0] == "right"
    assert "2 action blocks" in parse_action(f"```{ACTION_LABEL}\na\n```\n```{ACTION_LABEL}\nb\n```")[1]
    assert "empty" in parse_action(f"```{ACTION_LABEL}\n\n```")[1]
    assert "never closed" in parse_action(f"```{ACTION_LABEL}\nls")[1]
    assert "cut off" in parse_action(f"```{ACTION_LABEL}\nls", "length")[1]
    assert submission(f"\n{SUBMIT_SENTINEL}\nmy answer\n") == "my answer\n"
    assert submission(f"note\n{SUBMIT_SENTINEL}\n") is None


async def test_format_errors_get_the_right_message_then_the_trial_goes_on(fake, session):
    fake.push_reply(
        {"content": f"```{ACTION_LABEL}\nls\n```\n```{ACTION_LABEL}\npwd\n```"},
        {"content": "I think the marker should be written next."},
        {"content": f"Let me write it.\n```{ACTION_LABEL}\necho agentrig-ok > /app/ma", "finish_reason": "length"},
        block("echo agentrig-ok > /app/marker.txt && ls /app"),
        block(SUBMIT),
    )
    assert await play(session, AgentSettings(tool_mode="text", max_format_errors=4)) is None
    assert session.submitted and session.submission == "finished\n"
    bodies = chat_bodies(fake)
    assert len(bodies) == 5
    notes = [b["messages"][-1]["content"] for b in bodies[1:4]]
    assert notes[0].startswith("Format error: your reply holds 2 action blocks")
    assert notes[1].startswith("Format error: your reply holds no action block")
    assert notes[2].startswith("Format error: your reply was cut off")
    assert all(b["messages"][-1]["role"] == "user" for b in bodies[1:])
    assert session.commands == ["echo agentrig-ok > /app/marker.txt && ls /app", SUBMIT]
    traj = session.ctx.trajectory
    assert traj.counters["format_errors"] == 3 and traj.counters["agent_steps"] == 5
    assert [e.kind for e in traj.events].count("format_error") == 3
    obs = bodies[4]["messages"][-1]
    assert obs["role"] == "user" and obs["content"].startswith("exit code: 0\noutput:\nmarker.txt")
    assert (await verify_session(session)).resolved


async def test_three_unusable_replies_in_a_row_end_the_trial(fake, session):
    fake.push_reply(block("ls"), {"content": "hmm"}, {"content": "```bash\nls\n```"},
                    {"content": f"```{ACTION_LABEL}\nls", "finish_reason": "length"}, block("never"))
    assert await play(session, TEXT) == "format_errors"
    assert session.commands == ["ls"] and not session.submitted
    assert session.ctx.trajectory.counters["format_errors"] == 3
    assert len(chat_bodies(fake)) == 4


async def test_native_mode_runs_several_calls_in_order_and_answers_bad_ones(fake, session):
    fake.push_reply(
        {"content": "no call here"},
        {"content": None, "tool_calls": [
            {"name": "bash", "arguments": {"command": "echo one"}},
            {"name": "bash", "arguments": {"cmd": "oops"}},
            {"name": "python", "arguments": {"command": "print(1)"}},
            {"name": "bash", "arguments": {"command": "echo two"}}]},
        {"content": "", "finish_reason": "length"},
        {"content": None, "tool_calls": [
            {"name": "bash", "arguments": {"command": SUBMIT}},
            {"name": "bash", "arguments": {"command": "echo after"}}]},
    )
    assert await play(session, NATIVE) is None
    assert session.commands == ["echo one", "echo two", SUBMIT]
    bodies = chat_bodies(fake)
    assert bodies[0]["tools"][0]["function"]["name"] == "bash"
    assert bodies[1]["messages"][-1]["content"].startswith("Format error: your reply made no `bash` call")
    results = [m for m in bodies[2]["messages"] if m["role"] == "tool"]
    assert [r["content"].splitlines()[-1] for r in results] == ["one", results[1]["content"].splitlines()[-1],
                                                                results[2]["content"].splitlines()[-1], "two"]
    assert "non-empty `command`" in results[1]["content"] and "no tool 'python'" in results[2]["content"]
    assert bodies[3]["messages"][-1]["content"].startswith("Format error: your reply was cut off")
    last = session.ctx.trajectory.messages[-1]
    assert last.role == "tool" and last.content.startswith("Not run")
    assert session.ctx.trajectory.counters["invalid_tool_args"] == 2


async def test_a_hung_command_is_killed_at_its_timeout_and_the_trial_goes_on(fake, tmp_path):
    channel = make_channel(fake.base_url)
    s = await open_session(builtin_task("write-marker"), channel, tmp_path, command_timeout_s=1.0)
    try:
        fake.push_reply(block("setsid sleep 600 & sleep 600"), block("echo alive"), block(SUBMIT))
        assert await play(s, TEXT) is None
    finally:
        await s.sandbox.close()
        await channel.aclose()
    obs = [m.content for m in s.ctx.trajectory.messages if m.role == "user"][1:]
    assert obs[0].startswith("exit code: none (killed: the command ran longer than 1 seconds)")
    assert obs[1] == "exit code: 0\noutput:\nalive\n" and s.submitted
    assert s.ctx.trajectory.counters["command_timeouts"] == 1


# ---------------------------------------------------------------------------------- limits


def _priced_channel(base_url: str, prices: dict) -> Channel:
    cfg = ChannelConfig(channel=ChannelSettings(base_url=base_url, api_key_env=KEY_ENV, model="fake-model",
                                                timeout_s=5, max_attempts=2, backoff_base_s=0.01, backoff_max_s=0.02),
                        roles={"agent": RoleConfig()}, prices=prices)
    return Channel(cfg, env={KEY_ENV: KEY})


@pytest.mark.parametrize("priced", [True, False])
async def test_cost_limit_stops_the_trial_and_unparseable_replies_count(priced, fake, tmp_path):
    prices = {"fake-model": Price(input=1000.0, output=0.0)} if priced else {}
    channel = _priced_channel(fake.base_url, prices)
    s = await open_session(builtin_task("write-marker"), channel, tmp_path)
    # about 1 USD a reply when priced; the counts grow with the conversation, as a server's do (a
    # count that stays put while the conversation grows is a cut prompt: PROMPT_TRUNCATED)
    usage = [{"usage": {"prompt_tokens": 1000 + 100 * i, "completion_tokens": 0}} for i in range(5)]
    fake.push_reply({**block("echo a"), **usage[0]}, {"content": "no action", **usage[1]},
                    {**block("echo b"), **usage[2]}, {**block("echo c"), **usage[3]}, {**block(SUBMIT), **usage[4]})
    settings = AgentSettings(tool_mode="text", cost_limit=2.5, token_limit=None if priced else 2500)
    try:
        assert await play(s, settings) == "limits_exceeded"
    finally:
        await s.sandbox.close()
        await channel.aclose()
    assert len(chat_bodies(fake)) == 3 and s.commands == ["echo a", "echo b"]  # the 2nd reply was billed too
    events = [e for e in s.ctx.trajectory.events if e.kind == "cost_limit_off"]
    assert bool(events) is not priced
    if not priced:
        assert "token_limit still does" in events[0].data["reason"]


async def test_step_limit(fake, session):
    fake.push_reply(block("echo 1"), block("echo 2"), block("echo 3"))
    assert await play(session, AgentSettings(tool_mode="text", step_limit=2)) == "limits_exceeded"
    assert session.commands == ["echo 1", "echo 2"]
    assert "Replies: at most 2." in chat_bodies(fake)[0]["messages"][0]["content"]


BIG = "seq 100000 103000"  # about 21,000 characters, cut to the output limit (10,000)


async def test_old_observations_are_elided_to_fit_a_configured_window(fake, session):
    fake.push_reply(block(BIG), block(BIG), block(BIG), block(SUBMIT))
    settings = AgentSettings(tool_mode="text", context_tokens=6000, elided_keep_chars=400)
    assert await play(session, settings) is None and session.submitted
    bodies = chat_bodies(fake)
    observations = [[m["content"] for m in b["messages"][2:] if m["role"] == "user"] for b in bodies]
    assert "elided" not in observations[1][0]  # one big output fits
    assert "elided to fit the context window" in observations[2][0] and "100000" in observations[2][0]
    assert "elided" not in observations[2][1]  # the newest output is kept whole
    assert all(len(o) < 1000 for o in observations[3][:2]) and "elided" not in observations[3][2]
    stored = [m.content for m in session.ctx.trajectory.messages if m.role == "user"][1:]
    assert all("elided" not in o for o in stored) and len(stored[0]) > 9000  # the trajectory keeps everything
    assert any(e.kind == "context_elided" for e in session.ctx.trajectory.events)


async def test_the_window_is_learned_from_the_endpoints_overflow_error(tmp_path):
    limit_chars = 4 * 8192  # the fake's message: "maximum context length is 8192 tokens"
    script = [BIG, BIG, BIG, BIG, SUBMIT]

    def responder(body):
        if sum(len(m.get("content") or "") for m in body["messages"]) > limit_chars:
            return "context_overflow"
        done = sum(1 for m in body["messages"] if m["role"] == "assistant")
        return block(script[done])

    async with FakeEndpoint(api_key=KEY, responder=responder) as fake:
        channel = make_channel(fake.base_url)
        s = await open_session(builtin_task("write-marker"), channel, tmp_path)
        try:
            assert await play(s, TEXT) is None
        finally:
            await s.sandbox.close()
            await channel.aclose()
    assert s.submitted and s.commands == script
    kinds = [e.kind for e in s.ctx.trajectory.events]
    assert "context_overflow" in kinds and "context_elided" in kinds
    learned = next(e for e in s.ctx.trajectory.events if e.kind == "context_overflow")
    assert learned.data["window"] == 8192
    assert [c.error for c in s.ctx.trajectory.model_calls if c.error] == ["CONTEXT_OVERFLOW"]


async def test_a_window_too_small_for_the_first_request_raises_the_overflow(fake, session):
    """Before any answered call eliding cannot help: the overflow propagates (the run stops)."""
    with pytest.raises(ContextOverflow) as caught:
        await play(session, AgentSettings(context_tokens=256))
    assert chat_bodies(fake) == [] and caught.value.window == 256 and caught.value.first
    assert "first request" in caught.value.diagnosis.message


async def test_a_first_request_the_endpoint_refuses_raises_its_overflow(tmp_path):
    async with FakeEndpoint(api_key=KEY, personality=make_personality("llama-cpp-overflow", window=300)) as fake:
        channel = make_channel(fake.base_url)
        s = await open_session(builtin_task("write-marker"), channel, tmp_path)
        try:
            with pytest.raises(ContextOverflow) as caught:
                await play(s, TEXT)
        finally:
            await s.sandbox.close()
            await channel.aclose()
    assert caught.value.first and caught.value.window == 300 and len(chat_bodies(fake)) == 1


async def test_outgrowing_the_window_mid_trial_ends_it_context_overflow(tmp_path):
    """The model's own long replies (never elided) outgrow the window after a few answered
    steps: old outputs are elided first, then the trial ends context_overflow."""
    async with FakeEndpoint(api_key=KEY, responder=lambda body: block("seq 1 3000", before="x" * 3000)) as fake:
        channel = make_channel(fake.base_url)
        s = await open_session(builtin_task("write-marker"), channel, tmp_path)
        try:
            settings = AgentSettings(tool_mode="text", context_tokens=4000, elided_keep_chars=200)
            assert await play(s, settings) == "context_overflow"
        finally:
            await s.sandbox.close()
            await channel.aclose()
    assert len(s.commands) >= 2 and not s.submitted  # it played some steps before the window was full
    assert any(e.kind == "context_elided" for e in s.ctx.trajectory.events)
    assert not [c for c in s.ctx.trajectory.model_calls if c.error]  # never sent a request that could not fit


# ---------------------------------------------------------------------------------- prompt, reasoning, plug-ins


async def test_prompt_names_the_task_workdir_sentinel_and_limits(fake, session, tmp_path):
    fake.push_reply(call(SUBMIT))
    assert await play(session, NATIVE) is None
    system, task = chat_bodies(fake)[0]["messages"][:2]
    assert system["content"].startswith(PREAMBLE) and SUBMIT_SENTINEL in system["content"]
    assert "20 seconds" in system["content"] and "1 minutes" not in system["content"]
    assert session.task.instruction in task["content"] and "Working directory: /app" in task["content"]
    custom = tmp_path / "preamble.txt"
    custom.write_text("You are a careful shell assistant for arm B.\n")
    fake.push_reply(block(SUBMIT))
    session.submitted = False
    assert await play(session, AgentSettings(tool_mode="text", prompt=str(custom))) is None
    system = chat_bodies(fake)[1]["messages"][0]["content"]
    assert system.startswith("You are a careful shell assistant for arm B.") and PREAMBLE not in system
    assert f"```{ACTION_LABEL}" in system


@pytest.mark.parametrize("mode", ["native", "text"])
async def test_reasoning_is_kept_and_sent_back(mode, tmp_path):
    async with SolutionEndpoint(api_key=KEY, reasoning=True, record=True) as ep:
        channel = make_channel(ep.base_url, model="solution")
        s = await open_session(builtin_task("write-marker"), channel, tmp_path)
        try:
            assert await play(s, AgentSettings(tool_mode=mode)) is None
            assert (await verify_session(s)).resolved
        finally:
            await s.sandbox.close()
            await channel.aclose()
    stored = [m for m in s.ctx.trajectory.messages if m.role == "assistant"]
    assert [m.reasoning for m in stored] == [f"Reasoning for step {n} of task write-marker." for n in (1, 2)]
    last = [r.json for r in ep.requests if r.path.endswith("/chat/completions")][-1]
    sent = [m for m in last["messages"] if m["role"] == "assistant"]
    assert sent[0]["reasoning_content"] == "Reasoning for step 1 of task write-marker."


async def test_transient_context_reaches_each_call_and_is_not_kept(fake, session):
    session.transients = [Transient(text="MEMORY: the marker goes to /app.", placement="system", source="memory")]
    fake.push_reply(call("echo hi"), call(SUBMIT))
    assert await play(session, NATIVE) is None
    assert session.hook_steps == [0, 1]
    bodies = chat_bodies(fake)
    assert all(b["messages"][-1] == {"role": "system", "content": "MEMORY: the marker goes to /app."} for b in bodies)
    assert sum(m["content"] == "MEMORY: the marker goes to /app." for m in bodies[1]["messages"]) == 1
    assert all("MEMORY" not in (m.content or "") for m in session.ctx.trajectory.messages)


# ---------------------------------------------------------------------------------- through the episode


@pytest.mark.parametrize("mode", ["native", "text"])
async def test_a_bash_arm_plays_whole_trials_through_the_terminal_episode(mode, tmp_path):
    from agentrig.benchmark import Limits
    from agentrig.bench.terminal.episode import play_trial
    from agentrig.bench.terminal.sandbox import SandboxSettings

    from .terminal_harness import make_trial_ctx

    agent = AgentSettings(kind="bash", tool_mode=mode)
    sandbox = SandboxSettings(kind="bwrap", cache_dir=tmp_path / "cache")
    async with SolutionEndpoint(api_key=KEY) as ep:
        channel = make_channel(ep.base_url, model="solution")
        task = builtin_task("shell-session-state")
        solved = await play_trial(make_trial_ctx(task, channel), task, agent=agent, sandbox=sandbox, limits=Limits())
        async with FakeEndpoint(api_key=KEY) as fake:  # answers "OK" every time: never an action
            bad = make_channel(fake.base_url)
            lost = await play_trial(make_trial_ctx(task, bad), task, agent=agent, sandbox=sandbox, limits=Limits())
            await bad.aclose()
        await channel.aclose()
    assert solved.verdict.valid and solved.verdict.termination == "submitted" and solved.verdict.reward == 1.0
    assert lost.verdict.valid and lost.verdict.termination == "format_errors" and lost.verdict.reward == 0.0
    assert lost.trajectory.counters["format_errors"] == 3 and "commands" not in lost.trajectory.counters
