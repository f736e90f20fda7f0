"""The gold endpoint answers another harness's requests (tau2-bench's own LLM agent and user
simulator, as ``perf/tau2_vs_tau2bench.py`` runs it): no X-Agentrig-* headers, the role named by the
model (``gold-agent`` / ``gold-user``), the task recognised from the request — the user's by the
scenario in its system prompt, the agent's by the gold user's opening.

The requests here have tau2-bench's shape: the user simulator's system prompt is the guidelines
file followed by a ``<scenario>`` block with the scenario's fields, tab-indented under their
headings; it sees the agent's texts as ``user`` messages (the greeting first) and its own as
``assistant``; the agent's prompt is the policy, its conversation opens with the greeting."""

from __future__ import annotations

import json
import shutil

import openai
import pytest

from agentrig.agents.base import GREETING
from agentrig.bench.tau.data import domain_dir, load_tasks
from agentrig.bench.tau.domains import get_domain
from agentrig.bench.tau.environment import Environment
from agentrig.bench.tau.replay import judge_state
from agentrig.bench.tau.scripted.gold_endpoint import GoldEndpoint

KEY = "sk-gold-headerless-81c2"


def scenario_prompt(root, task) -> str:
    """A user-simulator system prompt shaped as tau2-bench's: guidelines, then the scenario."""
    guidelines = (root / "user_simulator" / "simulation_guidelines.md").read_text()
    ins = task.user_scenario.instructions
    lines = []
    if task.user_scenario.persona:
        lines += ["Persona:", "\t" + task.user_scenario.persona]
    lines.append("Instructions:")
    if isinstance(ins, str):
        lines.append("\t" + ins)
    else:
        fields = [("Domain", ins.domain), ("Reason for call", ins.reason_for_call), ("Known info", ins.known_info),
                  ("Unknown info", ins.unknown_info), ("Task instructions", ins.task_instructions)]
        for head, value in fields:
            if value is not None:
                lines.append(f"\t{head}:")
                lines += ["\t\t" + line for line in str(value).splitlines()]
    return guidelines + "\n\n<scenario>\n" + "\n".join(lines) + "\n</scenario>"


@pytest.fixture
async def gold_at():
    started = []

    async def start(root):
        ep = GoldEndpoint(root, api_key=KEY)
        await ep.start()
        started.append(ep)
        return openai.AsyncOpenAI(base_url=ep.base_url, api_key=KEY, max_retries=0)

    yield start
    for ep in started:
        await ep.stop()


async def create(c, model, messages, tools=None):
    kwargs = {"tools": tools} if tools else {}
    return (await c.chat.completions.create(model=model, messages=messages, **kwargs)).choices[0].message


async def play(c, root, domain, task, max_turns=80):
    """One conversation without headers; returns the calls made (requestor, name, arguments)."""
    spec = get_domain(domain)
    env = Environment.fresh(spec, domain_dir(root, domain))
    env.set_state(task)
    tools = spec.agent_toolkit.openai_tools()
    a_msgs = [{"role": "system", "content": (domain_dir(root, domain) / "policy.md").read_text()},
              {"role": "assistant", "content": GREETING}]
    u_msgs = [{"role": "system", "content": scenario_prompt(root, task)}, {"role": "user", "content": GREETING}]
    calls = []
    to_user = True
    for _ in range(max_turns):
        if to_user:
            m = await create(c, "gold-user", u_msgs)
            assert not m.tool_calls  # airline's user has no tools
            u_msgs.append({"role": "assistant", "content": m.content})
            a_msgs.append({"role": "user", "content": m.content})
            if "###STOP###" in m.content:
                return calls
            to_user = False
            continue
        m = await create(c, "gold-agent", a_msgs, tools)
        if not m.tool_calls:
            a_msgs.append({"role": "assistant", "content": m.content})
            u_msgs.append({"role": "user", "content": m.content})
            to_user = True
            continue
        t = m.tool_calls[0]
        a_msgs.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": t.id, "type": "function", "function": {"name": t.function.name, "arguments": t.function.arguments}}]})
        args = json.loads(t.function.arguments)
        calls.append(("assistant", t.function.name, args))
        out = env.call("assistant", t.function.name, args)
        a_msgs.append({"role": "tool", "tool_call_id": t.id, "content": out.text})
        if t.function.name == "transfer_to_human_agents":
            return calls
    raise AssertionError(f"{task.id}: no end after {max_turns} turns")


async def test_every_airline_task_plays_its_gold_without_headers(gold_at, tau2_root):
    c = await gold_at(tau2_root)
    spec = get_domain("airline")
    tasks = load_tasks(tau2_root, "airline")
    assert tasks
    for task in tasks:
        calls = await play(c, tau2_root, "airline", task)
        assert calls == [(a.requestor, a.name, a.arguments) for a in task.gold_actions], task.id
        assert judge_state(spec, domain_dir(tau2_root, "airline"), task, calls).db_match, task.id


def twin_root(tmp_path, tau2_root, change_actions: bool):
    """A data root whose airline tasks hold a twin of the first task with a write action: the same
    opening (reason for call), other task instructions; its gold actions the same or not."""
    root = tmp_path / "data"
    (root / "domains" / "airline").mkdir(parents=True)
    src = domain_dir(tau2_root, "airline")
    for name in ("db.json", "policy.md"):
        (root / "domains" / "airline" / name).symlink_to(src / name)
    shutil.copytree(tau2_root / "user_simulator", root / "user_simulator")
    raw = json.loads((src / "tasks.json").read_text())
    first = next(t for t in raw if len((t.get("evaluation_criteria") or {}).get("actions") or []) >= 2)
    twin = json.loads(json.dumps(first))
    twin["id"] = "twin-of-" + first["id"]
    twin["user_scenario"]["instructions"]["task_instructions"] = "You want the twin's outcome, nothing else."
    if change_actions:
        twin["evaluation_criteria"]["actions"] = twin["evaluation_criteria"]["actions"][::-1]
    (root / "domains" / "airline" / "tasks.json").write_text(json.dumps(raw + [twin]))
    tasks = {t.id: t for t in load_tasks(root, "airline")}
    return root, tasks[first["id"]], tasks[twin["id"]]


async def test_tasks_that_play_alike_are_one_and_the_user_is_told_apart_by_its_scenario(gold_at, tau2_root, tmp_path):
    root, first, twin = twin_root(tmp_path, tau2_root, change_actions=False)
    c = await gold_at(root)
    for task in (first, twin):
        calls = await play(c, root, "airline", task)
        assert calls == [(a.requestor, a.name, a.arguments) for a in task.gold_actions]


async def test_an_opening_that_fits_tasks_playing_differently_is_a_400(gold_at, tau2_root, tmp_path):
    root, first, twin = twin_root(tmp_path, tau2_root, change_actions=True)
    c = await gold_at(root)
    opening = await create(c, "gold-user", [{"role": "system", "content": scenario_prompt(root, twin)},
                                            {"role": "user", "content": GREETING}])
    assert opening.content.startswith("Hi, I need some help.")
    with pytest.raises(openai.BadRequestError) as info:
        await create(c, "gold-agent", [{"role": "system", "content": "policy"},
                                       {"role": "assistant", "content": GREETING},
                                       {"role": "user", "content": opening.content}])
    text = str(info.value)
    assert "fits several tasks that play differently" in text
    assert f"airline/{first.id}" in text and f"airline/{twin.id}" in text


async def test_a_request_naming_no_task_or_role_is_a_400_that_says_why(gold_at, tau2_root):
    c = await gold_at(tau2_root)
    with pytest.raises(openai.BadRequestError) as info:
        await create(c, "gold-user", [{"role": "system", "content": "You are a customer."},
                                      {"role": "user", "content": GREETING}])
    assert "no task's scenario" in str(info.value)
    with pytest.raises(openai.BadRequestError) as info:
        await create(c, "gold-agent", [{"role": "user", "content": "Hello there."}])
    assert "no user message is a task's opening" in str(info.value)
    with pytest.raises(openai.BadRequestError) as info:  # model "gold": the role must come from the header
        await create(c, "gold", [{"role": "user", "content": "Hello there."}])
    assert "X-Agentrig-Role" in str(info.value)
