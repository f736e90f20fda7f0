"""The real SDK clients of the measuring proxy's tests: one tool-call step in each wire the proxy
serves, streamed or not, read the way an agent reads it (the deltas joined, as a CLI does)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import anthropic
import openai

from agentrig.agents.proxy import TrialProxy

BASH = {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}
SYSTEM = "You are a terminal agent."
TASK = "List the files."


@dataclass
class Step:
    """What the agent read from one answer."""

    text: str = ""
    calls: list[tuple[str, str, dict]] = field(default_factory=list)  # (id, name, arguments)
    model: str = ""
    usage: tuple[int, int] = (0, 0)  # (input, output) as the agent's SDK reads them
    finish: str = ""


def openai_client(proxy: TrialProxy, token: str | None = None) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=proxy.base_url + "/v1", api_key=token or proxy.token, max_retries=0)


def anthropic_client(proxy: TrialProxy, token: str | None = None) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(base_url=proxy.base_url, api_key=token or proxy.token, max_retries=0)


# ------------------------------------------------------------------------------------ chat
async def chat_step(proxy: TrialProxy, history: list[dict], stream: bool) -> Step:
    client = openai_client(proxy)
    tools = [{"type": "function", "function": {"name": "bash", "description": "Run a command", "parameters": BASH}}]
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": TASK}, *history]
    kw = dict(model="gpt-whatever", messages=messages, tools=tools, temperature=1.7, max_tokens=5)
    step = Step()
    if not stream:
        r = await client.chat.completions.create(**kw)
        m = r.choices[0].message
        step.text = m.content or ""
        step.calls = [(c.id, c.function.name, json.loads(c.function.arguments)) for c in m.tool_calls or ()]
        step.model, step.usage, step.finish = r.model, (r.usage.prompt_tokens, r.usage.completion_tokens), r.choices[0].finish_reason
        return step
    calls: dict[int, list[str]] = {}
    async for chunk in await client.chat.completions.create(**kw, stream=True, stream_options={"include_usage": True}):
        step.model = chunk.model
        if chunk.usage is not None:
            step.usage = (chunk.usage.prompt_tokens, chunk.usage.completion_tokens)
        for choice in chunk.choices:
            step.text += choice.delta.content or ""
            step.finish = choice.finish_reason or step.finish
            for tc in choice.delta.tool_calls or ():
                entry = calls.setdefault(tc.index, ["", "", ""])
                entry[0] = tc.id or entry[0]
                entry[1] = (tc.function.name or entry[1]) if tc.function else entry[1]
                entry[2] += (tc.function.arguments or "") if tc.function else ""
    step.calls = [(i, n, json.loads(a)) for i, n, a in (calls[k] for k in sorted(calls))]
    return step


def chat_history(step: Step, output: str) -> list[dict]:
    return [{"role": "assistant", "content": step.text or None,
             "tool_calls": [{"id": i, "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
                            for i, n, a in step.calls]},
            *({"role": "tool", "tool_call_id": i, "content": output} for i, _, _ in step.calls)]


# ------------------------------------------------------------------------------- responses
async def responses_step(proxy: TrialProxy, history: list[dict], stream: bool) -> Step:
    client = openai_client(proxy)
    tools = [{"type": "function", "name": "bash", "description": "Run a command", "parameters": BASH, "strict": False}]
    kw = dict(model="gpt-whatever", instructions=SYSTEM, input=[{"role": "user", "content": TASK}, *history],
              tools=tools, temperature=1.7, max_output_tokens=16, store=False)
    step = Step()
    if not stream:
        r = await client.responses.create(**kw)
        items = r.output
        step.model, step.usage = r.model, (r.usage.input_tokens, r.usage.output_tokens)
        step.text = r.output_text
    else:
        items, args = [], {}
        async for ev in await client.responses.create(**kw, stream=True):
            if ev.type == "response.output_text.delta":
                step.text += ev.delta
            elif ev.type == "response.function_call_arguments.delta":
                args[ev.item_id] = args.get(ev.item_id, "") + ev.delta
            elif ev.type == "response.output_item.done":
                items.append(ev.item)
            elif ev.type == "response.completed":
                step.model, step.usage = ev.response.model, (ev.response.usage.input_tokens, ev.response.usage.output_tokens)
        for item in items:  # the deltas say what the finished items say
            if item.type == "function_call":
                assert args[item.id] == item.arguments
    step.calls = [(i.call_id, i.name, json.loads(i.arguments)) for i in items if i.type == "function_call"]
    step.finish = "tool_calls" if step.calls else "stop"
    return step


def responses_history(step: Step, output: str) -> list[dict]:
    items: list[dict] = []
    if step.text:
        items.append({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": step.text}]})
    for i, n, a in step.calls:
        items.append({"type": "function_call", "call_id": i, "name": n, "arguments": json.dumps(a)})
    items.extend({"type": "function_call_output", "call_id": i, "output": output} for i, _, _ in step.calls)
    return items


# ------------------------------------------------------------------------------- anthropic
async def anthropic_step(proxy: TrialProxy, history: list[dict], stream: bool) -> Step:
    client = anthropic_client(proxy)
    kw = dict(model="claude-whatever", max_tokens=16, extra_body={"temperature": 0.9},
              system=[{"type": "text", "text": SYSTEM, "cache_control": {"type": "ephemeral"}}],
              messages=[{"role": "user", "content": [{"type": "text", "text": TASK}]}, *history],
              tools=[{"name": "bash", "description": "Run a command", "input_schema": BASH}])
    if stream:
        async with client.messages.stream(**kw) as s:
            text = "".join([t async for t in s.text_stream])
            m = await s.get_final_message()
        assert text == "".join(b.text for b in m.content if b.type == "text")
    else:
        m = await client.messages.create(**kw)
    u = m.usage
    return Step(text="".join(b.text for b in m.content if b.type == "text"),
                calls=[(b.id, b.name, b.input) for b in m.content if b.type == "tool_use"], model=m.model,
                usage=(u.input_tokens + (u.cache_read_input_tokens or 0) + (u.cache_creation_input_tokens or 0), u.output_tokens),
                finish=m.stop_reason or "")


def anthropic_history(step: Step, output: str) -> list[dict]:
    blocks: list[dict] = [{"type": "text", "text": step.text}] if step.text else []
    blocks += [{"type": "tool_use", "id": i, "name": n, "input": a} for i, n, a in step.calls]
    return [{"role": "assistant", "content": blocks},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": i, "content": output} for i, _, _ in step.calls]}]


STEPS = {"chat": (chat_step, chat_history), "responses": (responses_step, responses_history),
         "anthropic": (anthropic_step, anthropic_history)}
