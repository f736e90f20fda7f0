"""The gold-scripting endpoint over real HTTP with the real openai SDK, driven by hand.

A small two-sided loop here plays agent and user through the endpoint (tool results from the
real Environment) and checks the calls it makes against the task's gold, then judges the end
state with the real replay code."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import openai
import pytest

from agentrig.agents.base import GREETING
from agentrig.bench.tau.data import domain_dir, load_tasks
from agentrig.bench.tau.domains import get_domain
from agentrig.bench.tau.environment import Environment
from agentrig.bench.tau.replay import judge_state
from agentrig.bench.tau.scripted.gold_endpoint import MEMORY_NOTE, GoldEndpoint, GoldScript

KEY = "sk-gold-unit-5f3a9c0e11"


@pytest.fixture
async def gold(tau2_root):
    ep = GoldEndpoint(tau2_root, api_key=KEY)
    await ep.start()
    yield ep
    await ep.stop()


def client(ep) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=ep.base_url, api_key=KEY, max_retries=0)


def hdr(domain, task, role):
    return {"X-Agentrig-Domain": domain, "X-Agentrig-Task": task, "X-Agentrig-Role": role}


async def ask(c, domain, task, role, messages, tools=None, retries=0):
    kwargs = {"tools": tools} if tools else {}
    for attempt in range(retries + 1):
        try:
            r = await c.chat.completions.create(model="gold", messages=messages, extra_headers=hdr(domain, task, role),
                                                **kwargs)
            if r.choices:
                return r
        except (openai.RateLimitError, openai.InternalServerError, openai.APIResponseValidationError, ValueError):
            if attempt == retries:
                raise
    raise AssertionError("no answer")


def _as_call(tc) -> dict:
    return {"id": tc.id, "type": "function", "function": {"name": tc.function.name, "arguments": tc.function.arguments}}


async def drive(c, root, domain, task, *, retries=0, max_turns=80, prefix="", names=None):
    """Play a task through the endpoint: returns (calls made, agent texts, user texts, end). With
    ``prefix``, the agent's tools are offered as an MCP client offers them (``mcp__tau__NAME``), and
    the names its calls come under are added to ``names``."""
    spec = get_domain(domain)
    ddir = domain_dir(root, domain)
    env = Environment.fresh(spec, ddir)
    env.set_state(task)
    agent_tools = spec.agent_toolkit.openai_tools()
    for t in agent_tools if prefix else ():
        t["function"]["name"] = prefix + t["function"]["name"]
    user_tools = spec.user_toolkit.openai_tools() if spec.user_toolkit is not None else None
    a_msgs = [{"role": "system", "content": "policy"}, {"role": "assistant", "content": GREETING}]
    u_msgs = [{"role": "system", "content": "you are a user"}, {"role": "user", "content": GREETING}]
    calls, a_texts, u_texts = [], [], []
    to = "user"
    for _ in range(max_turns):
        if to == "user":
            m = (await ask(c, domain, task.id, "user", u_msgs, user_tools, retries)).choices[0].message
            if m.tool_calls:
                u_msgs.append({"role": "assistant", "content": None, "tool_calls": [_as_call(t) for t in m.tool_calls]})
                for t in m.tool_calls:
                    args = json.loads(t.function.arguments)
                    calls.append(("user", t.function.name, args))
                    out = env.call("user", t.function.name, args)
                    u_msgs.append({"role": "tool", "tool_call_id": t.id, "content": out.text})
                continue
            u_texts.append(m.content)
            u_msgs.append({"role": "assistant", "content": m.content})
            a_msgs.append({"role": "user", "content": m.content})
            if "###STOP###" in m.content:
                return calls, a_texts, u_texts, "user_stop"
            to = "agent"
        else:
            m = (await ask(c, domain, task.id, "agent", a_msgs, agent_tools, retries)).choices[0].message
            if m.tool_calls:
                assert len(m.tool_calls) == 1
                a_msgs.append({"role": "assistant", "content": None, "tool_calls": [_as_call(t) for t in m.tool_calls]})
                t = m.tool_calls[0]
                args = json.loads(t.function.arguments)
                if names is not None:
                    names.add(t.function.name)
                name = t.function.name.removeprefix(prefix)
                calls.append(("assistant", name, args))
                out = env.call("assistant", name, args)
                a_msgs.append({"role": "tool", "tool_call_id": t.id, "content": out.text})
                if name == "transfer_to_human_agents":
                    return calls, a_texts, u_texts, "agent_transfer"
                continue
            a_texts.append(m.content)
            a_msgs.append({"role": "assistant", "content": m.content})
            u_msgs.append({"role": "user", "content": m.content})
            to = "user"
    raise AssertionError(f"{domain}/{task.id}: no end after {max_turns} turns")


def gold_of(task):
    return [(a.requestor, a.name, a.arguments) for a in task.gold_actions]


def pick(root, domain, pred):
    return next(t for t in load_tasks(root, domain) if pred(t))


async def test_airline_task_plays_gold_calls_and_communicates(gold, tau2_root):
    task = pick(tau2_root, "airline", lambda t: t.evaluation_criteria.communicate_info and len(t.gold_actions) >= 2)
    calls, a_texts, u_texts, end = await drive(client(gold), tau2_root, "airline", task)
    assert calls == gold_of(task)
    assert end == "user_stop"
    assert len(u_texts) == 2  # the request, then the stop
    for info in task.evaluation_criteria.communicate_info:
        assert info.lower() in a_texts[-1].lower().replace(",", "")
    judged = judge_state(get_domain("airline"), domain_dir(tau2_root, "airline"), task, calls)
    assert judged.db_match


@pytest.mark.parametrize("prefix", ["mcp__tau__", "tau."])
async def test_an_mcp_agent_gets_the_gold_calls_under_the_names_it_offers(gold, tau2_root, prefix):
    """Claude Code offers an MCP server's tools as ``mcp__<server>__<tool>``; Codex's namespaced
    tools reach the endpoint named so too: the gold calls come back under those names."""
    task = pick(tau2_root, "airline", lambda t: t.evaluation_criteria.communicate_info and len(t.gold_actions) >= 2)
    names: set[str] = set()
    calls, _, _, end = await drive(client(gold), tau2_root, "airline", task, prefix=prefix, names=names)
    assert calls == gold_of(task) and end == "user_stop"
    assert names == {prefix + a.name for a in task.gold_actions}


async def test_two_offered_tools_ending_with_the_gold_tool_s_name_are_a_400(gold, tau2_root):
    task = pick(tau2_root, "airline", lambda t: t.gold_actions and t.gold_actions[0].requestor == "assistant")
    name = task.gold_actions[0].name
    tools = [{"type": "function", "function": {"name": f"{p}{name}", "parameters": {"type": "object"}}}
             for p in ("mcp__a__", "mcp__b__")]
    with pytest.raises(openai.BadRequestError) as info:
        await ask(client(gold), "airline", task.id, "agent", [{"role": "user", "content": "hi"}], tools)
    assert f"several tools named like the scripted step's {name!r}" in str(info.value)


async def test_telecom_user_actions_are_made_by_the_user_in_order(gold, tau2_root):
    task = pick(tau2_root, "telecom", lambda t: [a.requestor for a in t.gold_actions][:2] == ["user", "user"]
                and "assistant" in [a.requestor for a in t.gold_actions])
    calls, a_texts, u_texts, end = await drive(client(gold), tau2_root, "telecom", task)
    assert calls == gold_of(task)
    assert end == "user_stop"
    groups = len(GoldScript.from_task("telecom", task).texts) - 1
    assert sum(1 for t in u_texts if t == "Done.") == groups >= 1
    judged = judge_state(get_domain("telecom"), domain_dir(tau2_root, "telecom"), task, calls)
    assert judged.env_reward == 1.0


async def test_mock_user_actions_are_made_by_the_user_too(tau2_root, tmp_path):
    """The mock user side (τ²-bench v1.0.1: the notification inbox) is played like telecom's
    phone: a gold action with requestor "user" is made by the user, through the user tools. The
    shared data has no such mock task, so one is built from update_task_with_user_tools with the
    user's dismiss_notification added to its gold — then the gold earns DB and ENV_ASSERTION."""
    import shutil

    root = tmp_path / "data"
    shutil.copytree(tau2_root / "domains" / "mock", root / "domains" / "mock")
    tasks_file = root / "domains" / "mock" / "tasks.json"
    raw = json.loads(tasks_file.read_text())
    task = dict(next(t for t in raw if t["id"] == "update_task_with_user_tools"), id="with_user_gold")
    task["evaluation_criteria"] = dict(task["evaluation_criteria"], actions=[
        *task["evaluation_criteria"]["actions"],
        {"action_id": "dismiss_1", "requestor": "user", "name": "dismiss_notification",
         "arguments": {"notification_id": "notif_1"}}])
    tasks_file.write_text(json.dumps([*raw, task]))
    (root / "domains" / "mock" / "split_tasks.json").unlink(missing_ok=True)
    ep = GoldEndpoint(root, api_key=KEY)
    await ep.start()
    try:
        task = pick(root, "mock", lambda t: t.id == "with_user_gold")
        calls, _, u_texts, end = await drive(client(ep), root, "mock", task)
    finally:
        await ep.stop()
    assert calls == gold_of(task) and calls[-1][0] == "user"
    assert end == "user_stop" and "Done." in u_texts
    judged = judge_state(get_domain("mock"), domain_dir(root, "mock"), task, calls)
    assert (judged.db_reward, judged.env_reward) == (1.0, 1.0) and judged.user_db_match


async def test_transfer_tasks_end_with_the_transfer(gold, tau2_root):
    task = pick(tau2_root, "mock", lambda t: any(a.name == "transfer_to_human_agents" for a in t.gold_actions))
    calls, _, _, end = await drive(client(gold), tau2_root, "mock", task)
    assert (calls, end) == (gold_of(task), "agent_transfer")


async def test_message_history_counts_are_not_taken_as_played(gold, tau2_root):
    task = pick(tau2_root, "mock", lambda t: t.id == "update_task_with_message_history")
    hist = task.initial_state.message_history
    c = client(gold)
    # the agent's request holds the history: its create_task call must not count as a gold action
    msgs = [{"role": "system", "content": "p"}]
    for m in hist:
        if m["role"] == "tool":
            msgs.append({"role": "tool", "tool_call_id": m["id"], "content": m["content"]})
        elif m.get("tool_calls"):
            msgs.append({"role": "assistant", "content": None, "tool_calls": [
                {"id": t["id"], "type": "function", "function": {"name": t["name"], "arguments": json.dumps(t["arguments"])}}
                for t in m["tool_calls"]]})
        else:
            msgs.append({"role": m["role"], "content": m["content"]})
    msgs.append({"role": "user", "content": "Please mark it completed."})
    tools = get_domain("mock").agent_toolkit.openai_tools()
    m = (await ask(c, "mock", task.id, "agent", msgs, tools)).choices[0].message
    assert m.tool_calls[0].function.name == task.gold_actions[0].name
    assert json.loads(m.tool_calls[0].function.arguments) == task.gold_actions[0].arguments


async def test_same_request_same_answer_and_usage(gold, tau2_root):
    task = load_tasks(tau2_root, "retail")[0]
    c = client(gold)
    msgs = [{"role": "system", "content": "p"}, {"role": "assistant", "content": GREETING},
            {"role": "user", "content": "hello"}]
    r1 = await ask(c, "retail", task.id, "agent", msgs)
    r2 = await ask(c, "retail", task.id, "agent", msgs)
    m1, m2 = r1.choices[0].message, r2.choices[0].message
    assert (m1.tool_calls[0].id, m1.tool_calls[0].function.arguments) == (m2.tool_calls[0].id, m2.tool_calls[0].function.arguments)
    assert r1.usage.prompt_tokens > 0 and r1.usage.completion_tokens > 0


async def test_judge_answers_every_outcome_met(gold):
    outcomes = ["The agent refunds the order.", "The agent does not cancel anything."]
    msgs = [{"role": "system", "content": "grade"},
            {"role": "user", "content": f"conversation...\n<expected_outcomes>{json.dumps(outcomes)}</expected_outcomes>"}]
    r = await client(gold).chat.completions.create(model="gold", messages=msgs,
                                                   extra_headers={"X-Agentrig-Role": "judge"})
    doc = json.loads(r.choices[0].message.content)
    assert [x["expectedOutcome"] for x in doc["results"]] == outcomes
    assert all(x["metExpectation"] is True for x in doc["results"])


@pytest.mark.parametrize("headers, needle", [
    (hdr("airline", "no-such-task", "agent"), "unknown task 'no-such-task'"),
    (hdr("no-such-domain", "1", "agent"), "unknown domain 'no-such-domain'"),
    ({"X-Agentrig-Role": "agent"}, "X-Agentrig-Domain"),
    (hdr("airline", "0", "critic"), "X-Agentrig-Role is 'critic'"),
])
async def test_bad_requests_are_400_with_a_clear_message(gold, headers, needle):
    with pytest.raises(openai.BadRequestError) as info:
        await client(gold).chat.completions.create(model="gold", messages=[{"role": "user", "content": "x"}],
                                                   extra_headers=headers)
    assert needle in str(info.value)


MEMORY_TOOLS = [{"type": "function", "function": {"name": n, "description": "d", "parameters": {
    "type": "object", "properties": {"content": {"type": "string"}}, "required": ["content"]}}}
    for n in ("memory_update_status", "memory_save_knowledge", "memory_save_procedural", "memory_delete")]


async def test_memory_edit_saves_the_first_gold_step_once(gold, tau2_root):
    task = pick(tau2_root, "airline", lambda t: t.gold_actions and t.gold_actions[0].requestor == "assistant")
    c = client(gold)
    msgs = [{"role": "system", "content": "You keep a memory bank."},
            {"role": "user", "content": "Window:\n[step 0] agent: Hi\nBank: (empty)"}]
    m = (await ask(c, "airline", task.id, "memory", msgs, MEMORY_TOOLS)).choices[0].message
    assert len(m.tool_calls) == 1 and m.tool_calls[0].function.name == "memory_save_knowledge"
    note = json.loads(m.tool_calls[0].function.arguments)["content"]
    assert note.startswith(MEMORY_NOTE) and task.gold_actions[0].name in note
    # the follow-up of the same phase (the call and its result in the request): no second save
    follow = msgs + [{"role": "assistant", "content": None, "tool_calls": [_as_call(m.tool_calls[0])]},
                     {"role": "tool", "tool_call_id": m.tool_calls[0].id, "content": "saved K1"}]
    m2 = (await ask(c, "airline", task.id, "memory", follow, MEMORY_TOOLS)).choices[0].message
    assert not m2.tool_calls and m2.content
    # a later trigger whose prompt shows the bank with the note: nothing to save
    later = [msgs[0], {"role": "user", "content": f"Bank:\nK1 (step 0): {note}\nWindow: ..."}]
    m3 = (await ask(c, "airline", task.id, "memory", later, MEMORY_TOOLS)).choices[0].message
    assert not m3.tool_calls


async def test_memory_decide_is_mostly_silent_and_deterministic(gold, tau2_root):
    task = load_tasks(tau2_root, "airline")[0]
    c = client(gold)
    answers = []
    for i in range(30):
        msgs = [{"role": "system", "content": "Answer <context_for_action>…</context_for_action> or <no_intervention/>."},
                {"role": "user", "content": f"Window: step {i} …"}]
        a = (await ask(c, "airline", task.id, "memory", msgs)).choices[0].message.content
        again = (await ask(c, "airline", task.id, "memory", msgs)).choices[0].message.content
        assert a == again  # stateless: the same request, the same answer
        answers.append(a)
    silent = sum(a == "<no_intervention/>" for a in answers)
    reminders = [a for a in answers if a.startswith("<context_for_action>") and a.endswith("</context_for_action>")]
    assert silent + len(reminders) == 30 and 0 < len(reminders) < silent
    # a prompt that does not offer silence (always_inject) always gets a reminder
    msgs = [{"role": "system", "content": "Always answer with <context_for_action>…</context_for_action>."},
            {"role": "user", "content": "Window: step 0"}]
    for i in range(5):
        msgs[1]["content"] = f"Window: step {i}"
        a = (await ask(c, "airline", task.id, "memory", msgs)).choices[0].message.content
        assert a.startswith("<context_for_action>")


async def test_judge_without_outcomes_block_is_400(gold):
    with pytest.raises(openai.BadRequestError, match="expected_outcomes"):
        await client(gold).chat.completions.create(model="gold", messages=[{"role": "user", "content": "x"}],
                                                   extra_headers={"X-Agentrig-Role": "judge"})


async def test_under_faults_retried_requests_still_play_the_gold(tau2_root):
    ep = GoldEndpoint(tau2_root, api_key=KEY, fault_rate=0.3, fault_kinds=("rate_limit", "server_error", "malformed"),
                      seed=7)
    await ep.start()
    try:
        task = pick(tau2_root, "telecom", lambda t: len(t.gold_actions) >= 3)
        calls, _, _, end = await drive(client(ep), tau2_root, "telecom", task, retries=30)
        assert calls == gold_of(task) and end == "user_stop"
        assert ep.chat_count > ep._n_completion  # some requests were faults
    finally:
        await ep.stop()


def test_cli_serves_and_prints_base_url(tau2_root):
    env = dict(os.environ, GOLD_UNIT_KEY=KEY)
    proc = subprocess.Popen([sys.executable, "-m", "agentrig.bench.tau.scripted.gold_endpoint", "--data", str(tau2_root),
                             "--api-key-env", "GOLD_UNIT_KEY"], stdout=subprocess.PIPE, env=env, text=True)
    try:
        base = proc.stdout.readline().strip()
        assert base.startswith("http://127.0.0.1:") and base.endswith("/v1")
        c = openai.OpenAI(base_url=base, api_key=KEY, max_retries=0)
        r = c.chat.completions.create(model="gold", messages=[{"role": "system", "content": "s"},
                                                              {"role": "user", "content": GREETING}],
                                      extra_headers=hdr("airline", load_tasks(tau2_root, "airline")[0].id, "user"))
        assert r.choices[0].message.content.startswith("Hi, I need some help.")
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert proc.returncode == 0
