"""The user simulator on real tau2-bench data, through a real channel to a local fake endpoint."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentrig.agents.base import GREETING
from agentrig.bench.tau.data import domain_dir, load_tasks
from agentrig.bench.tau.domains import get_domain
from agentrig.bench.tau.environment import Environment
from agentrig.bench.tau.replay import judge_state, replay_gold
from agentrig.bench.tau.user import (
    STOP_TOKENS,
    LLMUser,
    ScriptedUser,
    UserSettings,
    build_user,
    is_stop,
    is_stop_message,
    request_text,
    stop_token,
    user_action_groups,
    user_tool_schemas,
)
from agentrig.bench.tau.user_prompts import builtin_guidelines
from agentrig.channel.client import Channel
from agentrig.errors import ChannelError, ConfigError, DataError
from agentrig.bench.tau.domain import TauTrial
from agentrig.trial.context import TrialContext
from agentrig.testing.fake_endpoint import FakeEndpoint
from agentrig.types import Message, ToolCall, TrialKey

from tests.support import make_channel



@pytest.fixture
async def channel(fake):
    ch = make_channel(fake.base_url, ("user",))
    yield ch
    await ch.aclose()


def make_ctx(task, domain: str, root: Path | None, channel: Channel | None = None) -> TrialContext:
    return TrialContext(
        key=TrialKey(arm="a", domain=domain, task_id=task.id, trial=0),
        task=task, bench=TauTrial(get_domain(domain), domain_dir(root, domain), ""),
        seed=7, channel=channel, data_root=root,
    )


def greeting() -> Message:
    return Message(role="assistant", content=GREETING)


def sent(fake: FakeEndpoint, i: int) -> dict:
    """The i-th chat request (the channel also asks the server's window once: GET /models …)."""
    return [r for r in fake.requests if r.path.endswith("/chat/completions")][i].json


def tau2_file(root: Path, name: str) -> str:
    return (root / "user_simulator" / name).read_text(encoding="utf-8")


@pytest.fixture
def bare_root(tmp_path, tau2_root) -> Path:
    """A data root with the real domains but no user_simulator/ directory."""
    root = tmp_path / "root"
    root.mkdir()
    (root / "domains").symlink_to(tau2_root / "domains")
    return root


# ---------------------------------------------------------------------------------- stop tokens


def test_stop_tokens():
    assert STOP_TOKENS == ("###STOP###", "###TRANSFER###", "###OUT-OF-SCOPE###")
    assert is_stop("Thanks, bye! ###STOP###")
    assert is_stop("###TRANSFER###") and is_stop("ok ###OUT-OF-SCOPE### sorry")
    assert stop_token("hello ###TRANSFER### there") == "###TRANSFER###"
    assert not is_stop("STOP") and not is_stop("## STOP ##") and not is_stop(None) and not is_stop("")
    call = ToolCall(id="c", name="check_status_bar", arguments={})
    assert not is_stop_message(Message(role="user", content="###STOP###", tool_calls=[call]))
    assert is_stop_message(Message(role="user", content="done ###STOP###"))


def test_settings_are_strict():
    assert UserSettings().kind == "llm" and UserSettings().guidelines == "auto"
    with pytest.raises(Exception):
        UserSettings(kind="llm", guideline="tau2")  # misspelt
    with pytest.raises(Exception):
        UserSettings(guidelines="mine")


# ---------------------------------------------------------------------------------- LLM user


async def test_telecom_user_gets_tau2_tools_prompt_and_flipped_roles(fake, channel, tau2_root):
    task = load_tasks(tau2_root, "telecom")[5]
    ctx = make_ctx(task, "telecom", tau2_root, channel)
    user = build_user(UserSettings(), ctx)
    assert isinstance(user, LLMUser) and user.guidelines_source == "tau2"

    fake.push_reply(
        {"content": "Hi, my mobile data is very slow.", "reasoning_content": "I should describe the problem."},
        {"content": None, "tool_calls": [{"id": "u1", "name": "toggle_data_saver_mode", "arguments": {}}]},
        {"content": "It is off now. ###STOP###"},
    )
    await user.start([])
    first = await user.respond([greeting()])
    assert first.role == "user" and first.content == "Hi, my mobile data is very slow."
    assert first.reasoning == "I should describe the problem." and first.call == 0

    body = sent(fake, 0)
    system = body["messages"][0]
    expected = tau2_file(tau2_root, "simulation_guidelines_tools.md")
    assert system["role"] == "system"
    assert system["content"] == f"{expected}\n\n<scenario>\n{task.user_scenario.render()}\n</scenario>"
    assert "Reason for call:" in system["content"] and "John Smith" in system["content"]
    assert body["messages"][1:] == [{"role": "user", "content": GREETING}]
    names = [t["function"]["name"] for t in body["tools"]]
    assert names == [s.name for s in get_domain("telecom").user_toolkit.tool_specs()]
    assert "toggle_data_saver_mode" in names and "get_customer_by_phone" not in names

    ask = Message(role="assistant", content="Please turn off data saver mode.")
    second = await user.respond([ask])
    assert second.tool_calls[0].name == "toggle_data_saver_mode" and second.tool_calls[0].id == "u1"
    assert second.call == 1 and not is_stop_message(second)

    result = Message(role="tool", content="Data Saver Mode is now OFF.", tool_call_id="u1", requestor="user")
    third = await user.respond([result])
    assert is_stop_message(third) and third.call == 2

    final = sent(fake, 2)["messages"]
    assert final[1:] == [
        {"role": "user", "content": GREETING},
        {"role": "assistant", "content": "Hi, my mobile data is very slow."},
        {"role": "user", "content": "Please turn off data saver mode."},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "u1", "type": "function", "function": {"name": "toggle_data_saver_mode", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "u1", "content": "Data Saver Mode is now OFF."},
    ]
    # incremental: each request extends the one before
    assert sent(fake, 1)["messages"] == final[:4] and sent(fake, 0)["messages"] == final[:2]
    calls = ctx.trajectory.model_calls
    assert [(c.role, c.purpose) for c in calls] == [("user", "user")] * 3
    assert all(r.headers.get("x-agentrig-role") == "user" for r in fake.requests if r.path.endswith("/chat/completions"))
    assert body["seed"] == 7


async def test_agent_tool_traffic_is_hidden(fake, channel, tau2_root):
    task = load_tasks(tau2_root, "telecom")[0]
    user = build_user(UserSettings(), make_ctx(task, "telecom", tau2_root, channel))
    agent_call = ToolCall(id="a1", name="get_customer_by_phone", arguments={"phone_number": "555"})
    hidden = [
        Message(role="assistant", tool_calls=[agent_call]),
        Message(role="tool", content="{\"customer_id\": \"C1\"}", tool_call_id="a1", requestor="assistant"),
        Message(role="assistant", content="Checking that for you.", tool_calls=[agent_call]),
        Message(role="system", content="not for the user"),
    ]
    await user.respond(hidden + [Message(role="assistant", content="Found your account.")])
    assert sent(fake, 0)["messages"][1:] == [{"role": "user", "content": "Found your account."}]


async def test_airline_user_has_no_tools_and_plain_guidelines(fake, channel, tau2_root):
    task = load_tasks(tau2_root, "airline")[0]
    user = build_user(UserSettings(guidelines="tau2"), make_ctx(task, "airline", tau2_root, channel))
    assert user.tools is None
    await user.respond([greeting()])
    body = sent(fake, 0)
    assert "tools" not in body
    plain = tau2_file(tau2_root, "simulation_guidelines.md")
    assert body["messages"][0]["content"].startswith(plain + "\n\n<scenario>\n")
    assert body["messages"][0]["content"].endswith("\n</scenario>")


async def test_builtin_guidelines_without_user_simulator_dir(fake, channel, bare_root, tau2_root):
    telecom = load_tasks(bare_root, "telecom")[0]
    user = build_user(UserSettings(), make_ctx(telecom, "telecom", bare_root, channel))
    assert user.guidelines_source == "builtin"
    await user.respond([greeting()])
    prompt = sent(fake, 0)["messages"][0]["content"]
    assert prompt.startswith(builtin_guidelines(True))
    assert tau2_file(tau2_root, "simulation_guidelines_tools.md") not in prompt
    for token in STOP_TOKENS:
        assert token in prompt
    assert f"<scenario>\n{telecom.user_scenario.render()}\n</scenario>" in prompt

    with pytest.raises(ConfigError) as err:
        build_user(UserSettings(guidelines="tau2"), make_ctx(telecom, "telecom", bare_root, channel))
    text = str(err.value)
    assert "user.guidelines" in text and str(bare_root / "user_simulator") in text
    assert "simulation_guidelines_tools.md" in text


async def test_bikeshop_builtin_and_forced_builtin(fake, channel, tau2_root):
    task = load_tasks(None, "bikeshop")[0]
    user = build_user(UserSettings(), make_ctx(task, "bikeshop", None, channel))
    assert user.guidelines_source == "builtin" and user.tools is None
    assert user.system_prompt.startswith(builtin_guidelines(False))
    assert "Diego Alvarez" in user.system_prompt
    with pytest.raises(ConfigError, match="no data root"):
        build_user(UserSettings(guidelines="tau2"), make_ctx(task, "bikeshop", None, channel))
    # "builtin" wins even where tau2-bench's files exist
    airline = load_tasks(tau2_root, "airline")[0]
    forced = build_user(UserSettings(guidelines="builtin"), make_ctx(airline, "airline", tau2_root, channel))
    assert forced.guidelines_source == "builtin"
    assert tau2_file(tau2_root, "simulation_guidelines.md") not in forced.system_prompt


def test_task_user_tools_narrow_the_offer(tau2_root):
    spec = get_domain("telecom")
    task = load_tasks(tau2_root, "telecom")[0]
    assert len(user_tool_schemas(spec, task)) == len(spec.user_toolkit.tool_specs())
    some = task.model_copy(update={"user_tools": ["toggle_roaming", "check_status_bar"]})
    # the toolkit's order, not the list's
    order = [s.name for s in spec.user_toolkit.tool_specs() if s.name in ("toggle_roaming", "check_status_bar")]
    assert [t["function"]["name"] for t in user_tool_schemas(spec, some)] == order
    none = task.model_copy(update={"user_tools": []})
    assert user_tool_schemas(spec, none) is None
    ctx = make_ctx(none, "telecom", tau2_root)
    user = build_user(UserSettings(), ctx)
    assert user.tools is None
    assert user.system_prompt.startswith(tau2_file(tau2_root, "simulation_guidelines.md"))
    bad = task.model_copy(update={"user_tools": ["toggle_roaming", "fly_to_the_moon"]})
    with pytest.raises(DataError, match="fly_to_the_moon"):
        user_tool_schemas(spec, bad)
    assert user_tool_schemas(get_domain("airline"), task) is None


def _history(raw: list[dict]) -> list[Message]:
    """tau2-bench history dicts as our Messages (the episode does this for real)."""
    out = []
    for m in raw:
        calls = [ToolCall(id=c["id"], name=c["name"], arguments=c["arguments"]) for c in m.get("tool_calls") or []]
        out.append(Message(role=m["role"], content=m.get("content"), tool_calls=calls,
                           tool_call_id=m.get("id") if m["role"] == "tool" else None,
                           requestor=(m.get("requestor") or "assistant") if m["role"] == "tool" else None))
    return out


async def test_start_with_message_history(fake, channel, tau2_root):
    task = next(t for t in load_tasks(tau2_root, "mock") if t.initial_state and t.initial_state.message_history)
    history = _history(task.initial_state.message_history)
    user = build_user(UserSettings(), make_ctx(task, "mock", tau2_root, channel))
    # as tau2's orchestrator: the history but its last message, which is then delivered
    await user.start(history[:-1])
    await user.respond(history[-1:])
    assert sent(fake, 0)["messages"][1:] == [
        {"role": "assistant", "content": "I need to create a task for the project review meeting."},
        {"role": "user", "content": history[-1].content},
    ]


async def test_channel_error_propagates(fake, channel, tau2_root):
    task = load_tasks(tau2_root, "airline")[0]
    ctx = make_ctx(task, "airline", tau2_root, channel)
    user = build_user(UserSettings(), ctx)
    fake.push("unauthorized")
    with pytest.raises(ChannelError):
        await user.respond([greeting()])
    assert ctx.trajectory.model_calls[-1].error is not None
    assert ctx.trajectory.model_calls[-1].purpose == "user"


# ---------------------------------------------------------------------------------- scripted user


async def test_scripted_user_without_user_actions():
    task = load_tasks(None, "bikeshop")[0]
    user = build_user(UserSettings(kind="scripted"), make_ctx(task, "bikeshop", None))
    assert isinstance(user, ScriptedUser)
    await user.start([])
    first = await user.respond([greeting()])
    ins = task.user_scenario.instructions
    assert first.content == f"{ins.reason_for_call}\n{ins.known_info}" and not is_stop(first.content)
    last = await user.respond([Message(role="assistant", content="Your rental is booked.")])
    assert is_stop_message(last) and last.content.endswith("###STOP###")


def test_scripted_request_of_a_string_scenario(tau2_root):
    task = next(t for t in load_tasks(tau2_root, "mock") if isinstance(t.user_scenario.instructions, str))
    assert request_text(task) == task.user_scenario.instructions.strip()


async def _play_scripted(spec, ddir, task) -> tuple[list[tuple[str, str, dict]], list[Message]]:
    """The scripted user against a stand-in agent that plays the gold actions: agent actions on the
    environment, a text message to ask for each group of user actions, a final text message."""
    env = Environment.fresh(spec, ddir)
    env.set_state(task)
    user = ScriptedUser(task)
    calls: list[tuple[str, str, dict]] = []
    said: list[Message] = []

    async def user_turn(agent_text: str) -> Message:
        incoming = [Message(role="assistant", content=agent_text)]
        while True:
            reply = await user.respond(incoming)
            said.append(reply)
            if not reply.tool_calls:
                return reply
            assert len(reply.tool_calls) == 1
            call = reply.tool_calls[0]
            outcome = env.call("user", call.name, call.arguments)
            calls.append(("user", call.name, call.arguments))
            incoming = [Message(role="tool", content=outcome.text, tool_call_id=call.id, requestor="user",
                                error=outcome.error)]

    await user.start([])
    reply = await user_turn(GREETING)
    assert reply.content == request_text(task)
    actions = task.gold_actions
    i = 0
    while i < len(actions):
        if actions[i].requestor == "user":
            reply = await user_turn("Please do the following on your phone.")
            assert reply.content == "Done."
            while i < len(actions) and actions[i].requestor == "user":
                i += 1
        else:
            a = actions[i]
            env.call("assistant", a.name, a.arguments)
            calls.append(("assistant", a.name, a.arguments))
            i += 1
    reply = await user_turn("All fixed. Anything else?")
    assert is_stop_message(reply)
    return calls, said


async def test_scripted_user_plays_every_telecom_task(tau2_root):
    spec = get_domain("telecom")
    ddir = domain_dir(tau2_root, "telecom")
    tasks = load_tasks(tau2_root, "telecom")
    assert len(tasks) == 114
    with_user_actions = earned = 0
    for task in tasks:
        calls, said = await _play_scripted(spec, ddir, task)
        groups = user_action_groups(task)
        gold_user = [(a.name, a.arguments) for a in task.gold_actions if a.requestor == "user"]
        assert [(n, a) for r, n, a in calls if r == "user"] == gold_user, task.id
        assert sum(len(g) for g in groups) == len(gold_user)
        ids = [m.tool_calls[0].id for m in said if m.tool_calls]
        assert ids == [f"user-gold-{n}" for n in range(len(gold_user))]
        with_user_actions += bool(gold_user)
        replay = replay_gold(spec, ddir, task)
        judged = judge_state(spec, ddir, task, calls)
        # the same state as the gold trajectory's (telecom's DB component differs from tau2's
        # unsynced gold state for some tasks either way; its reward basis is ENV_ASSERTION)
        assert judged.db_match == replay.judgement.db_match, task.id
        if replay.ok:
            assert judged.env_reward == 1.0, task.id
            earned += 1
    assert with_user_actions == 94
    assert earned == sum(replay_gold(spec, ddir, t).ok for t in tasks) > 0
