"""The measuring proxy (agents/proxy/), over real HTTP end to end: the real openai and anthropic
SDKs as the agent → TrialProxy → a real Channel → the FakeEndpoint in each upstream wire."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import time

import aiohttp
import anthropic
import openai
import pytest

from agentrig.agents.proxy import TrialProxy
from agentrig.channel.client import Channel
from agentrig.config import ChannelConfig, ChannelSettings, Price, RoleConfig
from agentrig.errors import AuthError, RetriesExhausted
from agentrig.testing.fake_endpoint import Fault, mask_key
from agentrig.trial.context import TrialContext
from agentrig.types import TrialKey

from tests.agents.proxy_clients import STEPS, anthropic_client, openai_client
from tests.support import KEY, KEY_ENV

WIRES = ("chat", "responses", "anthropic")
COMMAND = "ls -la 'a b' && echo \"ü\" | tr -d '\\n'"


@contextlib.asynccontextmanager
async def serving(fake, up: str = "chat", *, key: str = KEY, prices: dict | None = None, channel: dict | None = None,
                  **limits):
    settings = {**dict(base_url=fake.base_url, api_key_env=KEY_ENV, model="fake-model", timeout_s=5, max_attempts=2,
                       backoff_base_s=0.001, backoff_max_s=0.002, wire=up), **(channel or {})}
    cfg = ChannelConfig(channel=ChannelSettings(**settings), roles={"agent": RoleConfig()}, prices=prices or {})
    ch = Channel(cfg, env={KEY_ENV: key})
    ctx = TrialContext(key=TrialKey(arm="a", domain="terminal", task_id="t", trial=0), task=None, seed=1, channel=ch)
    proxy = TrialProxy(ctx, **limits)
    await proxy.start()
    try:
        yield proxy
    finally:
        await proxy.close()
        await ch.aclose()


def upstream(fake) -> list:
    return [r for r in fake.requests if r.method == "POST"]


def strings(value):
    """Every string in a JSON value, a JSON object held in a string read too (arguments)."""
    if isinstance(value, dict):
        for v in value.values():
            yield from strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from strings(v)
    elif isinstance(value, str):
        yield value
        if value.startswith("{"):
            yield from strings(json.loads(value))


def reply(content=None, calls=(), prompt=100, completion=10, **extra) -> dict:
    return {"content": content, "tool_calls": [{"name": n, "arguments": a} for n, a in calls],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion}, **extra}


# ------------------------------------------------------------------------ every wire, both ways
@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("up", WIRES)
@pytest.mark.parametrize("wire", WIRES)
async def test_a_tool_step_and_its_answer_through_every_wire(fake, wire, up, stream):
    fake.push_reply(reply("Looking.", [("bash", {"command": COMMAND})], 120, 9),
                    reply("Done: 3 files.", prompt=150, completion=4))
    step, history = STEPS[wire]
    async with serving(fake, up) as proxy:
        first = await step(proxy, [], stream)
        assert [(n, a) for _, n, a in first.calls] == [("bash", {"command": COMMAND})]
        assert first.text == "Looking."
        assert first.model == "fake-model"  # the role's model, whatever the agent asked for
        assert first.usage == (120, 9)
        assert first.finish in ("tool_calls", "tool_use")
        second = await step(proxy, history(first, "f1\nf2\nü"), stream)
        assert second.text == "Done: 3 files." and second.calls == []
        assert second.finish in ("stop", "end_turn")

        calls = proxy.ctx.trajectory.model_calls
        assert len(calls) == 2 == len(upstream(fake)) == len(proxy.ctx.trajectory.agent_requests)
        assert [(c.usage.prompt_tokens, c.usage.completion_tokens) for c in calls] == [(120, 9), (150, 4)]
        assert all(c.purpose == "agent" and c.error is None for c in calls)
        assert [(r.call, r.wire, r.stream) for r in proxy.replies] == [(0, wire, stream), (1, wire, stream)]
        assert proxy.replies[0].tool_call_ids == [first.calls[0][0]]
        body = upstream(fake)[-1].json
        assert body["model"] == "fake-model"
        assert "temperature" not in body and body.get("max_tokens") in (None, 8192) and "max_output_tokens" not in body
        said = set(strings(body))
        assert "f1\nf2\nü" in said and COMMAND in said  # the call and its output went up
        assert proxy.failure is None and proxy.stop is None and not proxy.ended.is_set()


# ------------------------------------------------------------------------ faults and limits
@pytest.mark.parametrize("wire,up", [("chat", "responses"), ("responses", "anthropic"), ("anthropic", "chat")])
async def test_faults_are_ridden_out_unseen_and_counted(fake, wire, up):
    fake.fault_rate, fake.fault_kinds = 0.4, ("server_error", "malformed")
    fake.push(Fault("rate_limit", retry_after_ms=5), Fault("server_error", status=503))
    step, _ = STEPS[wire]
    async with serving(fake, up, channel=dict(max_attempts=30)) as proxy:
        for i in range(6):
            fake.push_reply(reply(f"step {i}", prompt=100 + i, completion=i + 1))
            got = await step(proxy, [], i % 2 == 1)
            assert got.text == f"step {i}"
        calls = proxy.ctx.trajectory.model_calls
        sent = upstream(fake)
        assert len(calls) == 6
        assert sum(len(c.attempts) for c in calls) == len(sent)
        retries = sum(c.retries for c in calls)
        assert retries == len(sent) - 6 >= 2
        assert proxy.ctx.channel.usage.summary()["agent"].retries == retries
        assert [c.usage.prompt_tokens for c in calls] == [100 + i for i in range(6)]
        assert proxy.failure is None and not proxy.ended.is_set()


async def test_an_outage_is_ridden_out_behind_the_proxy(fake):
    """A run of 503s past max_attempts opens the channel's breaker; the agent's streamed calls wait
    and get their answers, as a built-in agent's would.

    max_attempts is the breaker's threshold (5 outage faults in a row), so the breaker opens however
    the four calls interleave: with 2, a call whose retry came before the other calls' first attempts
    (a loaded machine) used up its attempts at a streak of 2 and failed, as it should."""
    from agentrig.channel.breaker import THRESHOLD

    async with serving(fake, channel=dict(max_attempts=THRESHOLD, outage_wait_s=60)) as proxy:
        step, _ = STEPS["anthropic"]
        await step(proxy, [], True)  # the endpoint has answered: the breaker is armed
        fake.push(*[Fault("server_error", status=503)] * 8)
        got = await asyncio.gather(*(step(proxy, [], True) for _ in range(4)))
        assert [g.text for g in got] == ["OK"] * 4
        (ep,) = proxy.ctx.channel._endpoints.values()
        (outage,) = ep.breaker.history
        assert outage.resumed is True
        calls = proxy.ctx.trajectory.model_calls
        assert len(calls) == 5 and sum(a.status == 503 for c in calls for a in c.attempts) == 8
        assert proxy.failure is None and not proxy.ended.is_set()


LIMITED = {"chat": openai.RateLimitError, "responses": openai.RateLimitError, "anthropic": anthropic.BadRequestError}


@pytest.mark.parametrize("wire", WIRES)
@pytest.mark.parametrize("limit", ["step", "token", "cost"])
async def test_a_limit_ends_the_trial_as_a_server_at_its_limit(fake, wire, limit):
    limits = {"step": dict(step_limit=2), "token": dict(token_limit=150),
              "cost": dict(cost_limit=0.2, prices={"fake-model": Price(input=1000, output=1000)})}[limit]
    fake.push_reply(reply("one"), reply("two"), reply("three"))  # 110 tokens each: 0.11 USD at these prices
    step, _ = STEPS[wire]
    async with serving(fake, **limits) as proxy:
        await step(proxy, [], False)
        await step(proxy, [], True)
        with pytest.raises(LIMITED[wire]) as refused:
            await step(proxy, [], True)
        assert proxy.stop is not None and proxy.stop.termination == "limits_exceeded"
        assert f"{limit} limit" in proxy.stop.detail
        assert proxy.ended.is_set() and proxy.failure is None
        error = refused.value.body if wire == "anthropic" else refused.value.body
        assert "limit is reached" in json.dumps(error)
        if wire != "anthropic":
            assert refused.value.code == "insufficient_quota"
        with pytest.raises(LIMITED[wire]):  # and so on: no more calls
            await step(proxy, [], False)
        assert len(upstream(fake)) == 2 == len(proxy.ctx.trajectory.model_calls)


async def test_the_deadline_ends_the_trial_as_the_agent_s_timeout(fake):
    async with serving(fake, deadline=time.monotonic() - 0.001) as proxy:
        with pytest.raises(anthropic.BadRequestError):
            await STEPS["anthropic"][0](proxy, [], True)
        assert proxy.stop.termination == "agent_timeout" and proxy.ended.is_set()
        assert upstream(fake) == [] and proxy.ctx.trajectory.model_calls == []


@pytest.mark.parametrize("wire", WIRES)
async def test_an_upstream_auth_failure_is_the_proxy_s_failure(fake, wire):
    step, _ = STEPS[wire]
    async with serving(fake, key="sk-wrong-key-ffff0000") as proxy:
        with pytest.raises((openai.InternalServerError, anthropic.InternalServerError)) as failed:
            await step(proxy, [], True)
        assert failed.value.status_code == 502
        assert isinstance(proxy.failure, AuthError) and proxy.stop is None and proxy.ended.is_set()
        assert [c.error for c in proxy.ctx.trajectory.model_calls] == [proxy.failure.diagnosis.code]
        assert "sk-wr" not in json.dumps(failed.value.body)  # the endpoint's echo of the key stays here
        with pytest.raises((openai.InternalServerError, anthropic.InternalServerError)):
            await step(proxy, [], False)
        assert len(upstream(fake)) == 1  # the trial is over: no second call


async def test_a_call_in_flight_that_fails_after_a_limit_still_makes_the_trial_invalid(fake):
    release = asyncio.Event()

    async def responder(body):
        await release.wait()  # held until the limit has been met by the next request
        return Fault("unauthorized")

    fake.responder = responder
    chat = dict(model="m", messages=[{"role": "user", "content": "hi"}])
    async with serving(fake, step_limit=1) as proxy:
        client = openai_client(proxy)
        first = asyncio.create_task(client.chat.completions.create(**chat))
        while fake.chat_count == 0:  # the first call has reached the endpoint
            await asyncio.sleep(0.01)
        with pytest.raises(openai.RateLimitError):
            await client.chat.completions.create(**chat)
        assert proxy.stop is not None and proxy.failure is None
        release.set()
        with pytest.raises(openai.InternalServerError):
            await first
        assert isinstance(proxy.failure, AuthError) and proxy.ended.is_set()
        with pytest.raises(openai.InternalServerError):  # from now on, the failure's answer
            await client.chat.completions.create(**chat)


async def test_retries_exhausted_is_a_503_and_the_failure(fake):
    fake.push(*[Fault("server_error", status=500)] * 3)
    async with serving(fake, channel=dict(max_attempts=2)) as proxy:
        with pytest.raises(openai.InternalServerError) as failed:
            await STEPS["chat"][0](proxy, [], False)
        assert failed.value.status_code == 503
        assert isinstance(proxy.failure, RetriesExhausted) and proxy.ended.is_set()
        assert proxy.ctx.trajectory.model_calls[0].retries == 1


# ------------------------------------------------------------------------ tokens and the key
async def test_only_the_trial_s_token_opens_its_proxy_and_none_after_it_closed(fake):
    chat = dict(model="m", messages=[{"role": "user", "content": "hi"}])
    anth = dict(model="m", max_tokens=8, messages=[{"role": "user", "content": "hi"}])
    async with serving(fake) as mine, serving(fake) as other:
        assert mine.token != other.token and KEY not in (mine.token, other.token)
        with pytest.raises(openai.AuthenticationError) as refused:
            await openai_client(mine, other.token).chat.completions.create(**chat)
        assert refused.value.code == "invalid_api_key"
        with pytest.raises(openai.AuthenticationError):
            await openai_client(mine, other.token).responses.create(model="m", input="hi")
        with pytest.raises(anthropic.AuthenticationError) as refused_a:
            await anthropic_client(mine, other.token).messages.create(**anth)
        assert refused_a.value.body["error"]["type"] == "authentication_error"
        with pytest.raises(openai.AuthenticationError):
            await openai_client(mine, KEY).models.list()  # not even the real key
        with pytest.raises(openai.BadRequestError) as stateful:  # a body it cannot mean: a 400, no call
            await openai_client(mine).responses.create(model="m", input="hi", previous_response_id="resp_1")
        assert "previous_response_id" in stateful.value.message
        async with aiohttp.ClientSession() as http:  # no token at all
            async with http.post(mine.base_url + "/v1/chat/completions", json=chat) as resp:
                assert resp.status == 401
        assert (await openai_client(mine).chat.completions.create(**chat)).choices[0].message.content == "OK"
        bearer = anthropic.AsyncAnthropic(base_url=mine.base_url, auth_token=mine.token, max_retries=0)  # ANTHROPIC_AUTH_TOKEN
        assert (await bearer.messages.create(**anth)).content[0].text == "OK"
        base, token = mine.base_url, mine.token
        await mine.close()
        with pytest.raises(openai.APIConnectionError):
            await openai.AsyncOpenAI(base_url=base + "/v1", api_key=token, max_retries=0).chat.completions.create(**chat)
        with pytest.raises(anthropic.APIConnectionError):
            await anthropic.AsyncAnthropic(base_url=base, api_key=token, max_retries=0).messages.create(**anth)
    assert len(upstream(fake)) == 2


async def test_the_real_key_is_never_in_what_the_agent_receives(fake):
    real = "sk-real-SECRET-0123456789abcdef"
    fake.api_key, fake._auth_header = real, f"Bearer {real}"
    fake.push_reply(reply("a", [("bash", {"command": "ls"})]), reply("b"), reply("c"), reply("d"))
    received: list[bytes] = []
    chat = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    wrong = real[:-4] + "beef"  # a real key the endpoint refuses (it echoes it masked, as OpenAI does)
    async with serving(fake, key=real) as ok, serving(fake, key=wrong) as failing:
        async with aiohttp.ClientSession() as http:
            requests = [
                (ok, "/v1/chat/completions", {**chat, "stream": True}, {"Authorization": f"Bearer {ok.token}"}),
                (ok, "/v1/chat/completions", chat, {"Authorization": f"Bearer {ok.token}"}),
                (ok, "/v1/responses", {"model": "m", "input": "hi", "stream": True}, {"Authorization": f"Bearer {ok.token}"}),
                (ok, "/v1/messages?beta=true", {"model": "m", "max_tokens": 9, "stream": True, "messages": [{"role": "user", "content": "hi"}]},
                 {"x-api-key": ok.token, "anthropic-version": "2023-06-01"}),
                (ok, "/v1/chat/completions", chat, {"Authorization": f"Bearer {real}"}),
                (failing, "/v1/chat/completions", chat, {"Authorization": f"Bearer {failing.token}"}),
                (failing, "/v1/messages", {"model": "m", "max_tokens": 9, "messages": [{"role": "user", "content": "hi"}]},
                 {"x-api-key": failing.token, "anthropic-version": "2023-06-01"}),
            ]
            for proxy, path, body, headers in requests:
                async with http.post(proxy.base_url + path, json=body, headers=headers) as resp:
                    received.append(str(dict(resp.headers)).encode() + await resp.read())
            async with http.get(ok.base_url + "/v1/models", headers={"Authorization": f"Bearer {ok.token}"}) as resp:
                received.append(str(dict(resp.headers)).encode() + await resp.read())
        assert isinstance(failing.failure, AuthError)
    everything = b"\n".join(received)
    assert b"data: [DONE]" in everything and b"message_stop" in everything  # the answers are in there
    for secret in (real, mask_key(real), real[:12], real[-8:], wrong, mask_key(wrong), wrong[-8:]):
        assert secret.encode() not in everything


# ------------------------------------------------------------------------ translation
async def test_a_codex_like_request_round_trips(fake):
    grammar = 'start: begin_patch hunk+ end_patch\nbegin_patch: "*** Begin Patch" LF'
    patch = "*** Begin Patch\n*** Add File: a.txt\n+hello\n*** End Patch\n"
    body = {
        "model": "gpt-5-codex", "instructions": "You are Codex.", "store": False, "stream": True,
        "parallel_tool_calls": False, "tool_choice": "auto", "reasoning": {"effort": "high", "summary": "auto"},
        "include": ["reasoning.encrypted_content"], "prompt_cache_key": "abc",
        "input": [
            {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "<permissions>full</permissions>"}]},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "<env>cwd=/app</env>"},
                                                            {"type": "input_text", "text": "Fix the bug."}]},
            {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "look first"}],
             "encrypted_content": "gAAAA"},
            {"type": "function_call", "id": "fc_1", "call_id": "call_a", "name": "exec_command",
             "arguments": "{\"cmd\":\"ls\"}"},
            {"type": "function_call_output", "call_id": "call_a", "output": "main.py"},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "I'll patch it."}]},
            {"type": "custom_tool_call", "id": "ctc_1", "call_id": "call_b", "name": "apply_patch", "input": patch},
            {"type": "custom_tool_call_output", "call_id": "call_b", "output": "Success."},
        ],
        "tools": [
            {"type": "function", "name": "exec_command", "description": "Run a command", "strict": False,
             "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}, "required": ["cmd"]}},
            {"type": "custom", "name": "apply_patch", "description": "Edit files.",
             "format": {"type": "grammar", "syntax": "lark", "definition": grammar}},
            {"type": "web_search"},
        ],
    }
    fake.push_reply(reply("Patching again.", [("apply_patch", {"input": patch})]))
    async with serving(fake) as proxy:
        events = []
        async with aiohttp.ClientSession() as http:
            async with http.post(proxy.base_url + "/v1/responses", json=body,
                                 headers={"Authorization": f"Bearer {proxy.token}"}) as resp:
                async for line in resp.content:
                    if line.startswith(b"data: "):
                        events.append(json.loads(line[6:]))
        sent = upstream(fake)[0].json
        assert sent["messages"] == [
            {"role": "system", "content": "You are Codex."},
            {"role": "system", "content": "<permissions>full</permissions>"},
            {"role": "user", "content": "<env>cwd=/app</env>\nFix the bug."},
            {"role": "assistant", "content": "", "tool_calls": [
                {"id": "call_a", "type": "function", "function": {"name": "exec_command", "arguments": "{\"cmd\":\"ls\"}"}}]},
            {"role": "tool", "tool_call_id": "call_a", "content": "main.py"},
            {"role": "assistant", "content": "I'll patch it.", "tool_calls": [
                {"id": "call_b", "type": "function", "function": {"name": "apply_patch", "arguments": json.dumps({"input": patch})}}]},
            {"role": "tool", "tool_call_id": "call_b", "content": "Success."},
        ]
        tools = {t["function"]["name"]: t["function"] for t in sent["tools"]}
        assert set(tools) == {"exec_command", "apply_patch"}
        assert tools["apply_patch"]["parameters"]["properties"]["input"]["type"] == "string"
        assert grammar in tools["apply_patch"]["description"]
        assert sent["parallel_tool_calls"] is False and sent["tool_choice"] == "auto"
        assert "reasoning" not in sent and "prompt_cache_key" not in sent
        assert proxy.left_out == {"web_search"}
        assert [e.data["tools"] for e in proxy.ctx.trajectory.events if e.kind == "tools_left_out"] == [["web_search"]]
    done = [e["item"] for e in events if e["type"] == "response.output_item.done"]
    assert [d["type"] for d in done] == ["message", "custom_tool_call"]
    assert done[1]["input"] == patch and done[1]["name"] == "apply_patch"
    assert "".join(e["delta"] for e in events if e["type"] == "response.custom_tool_call_input.delta") == patch
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    assert events[-1]["type"] == "response.completed" and events[-1]["response"]["usage"]["total_tokens"] == 110



@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
async def test_a_namespace_s_functions_reach_the_model_and_its_calls_go_back_namespaced(fake, stream):
    """Codex offers an MCP server's tools as one tool of type namespace: each function reaches the
    model as ``<namespace>__<name>``, and the model's call of it goes back with its namespace."""
    lookup = {"type": "object", "properties": {"user_id": {"type": "string"}}, "required": ["user_id"]}
    body = {
        "model": "m", "stream": stream, "store": False, "tool_choice": "auto", "parallel_tool_calls": True,
        "input": [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Who is u1?"}]},
            {"type": "function_call", "id": "fc_1", "call_id": "call_a", "name": "get_user_details",
             "namespace": "mcp__tau", "arguments": "{\"user_id\":\"u0\"}"},
            {"type": "function_call_output", "call_id": "call_a", "output": "Wall time: 0.01 seconds\nOutput:\nno such user"},
        ],
        "tools": [
            {"type": "function", "name": "view_image", "parameters": {"type": "object", "properties": {}}},
            {"type": "namespace", "name": "mcp__tau", "description": "the airline's tools", "tools": [
                {"type": "function", "name": "get_user_details", "description": "A user's details.", "strict": False,
                 "parameters": lookup},
                {"type": "function", "name": "transfer_to_human_agents", "parameters": {"type": "object"}}]},
        ],
    }
    fake.push_reply(reply(None, [("mcp__tau__get_user_details", {"user_id": "u1"})]))
    async with serving(fake) as proxy:
        async with aiohttp.ClientSession() as http:
            async with http.post(proxy.base_url + "/v1/responses", json=body,
                                 headers={"Authorization": f"Bearer {proxy.token}"}) as resp:
                raw = await resp.read()
        sent = upstream(fake)[0].json
        assert [t["function"]["name"] for t in sent["tools"]] == [
            "view_image", "mcp__tau__get_user_details", "mcp__tau__transfer_to_human_agents"]
        assert sent["tools"][1]["function"]["parameters"] == lookup
        assert sent["tools"][1]["function"]["description"] == "A user's details."
        assert sent["messages"][1]["tool_calls"][0]["function"]["name"] == "mcp__tau__get_user_details"
        assert proxy.left_out == set()
        assert proxy.replies[0].message.tool_calls[0].name == "mcp__tau__get_user_details"
    if stream:
        events = [json.loads(line[6:]) for line in raw.split(b"\n") if line.startswith(b"data: ")]
        items = [e["item"] for e in events if e["type"] == "response.output_item.done"]
        added = [e["item"] for e in events if e["type"] == "response.output_item.added"]
        assert (added[0]["name"], added[0]["namespace"]) == ("get_user_details", "mcp__tau")
    else:
        items = json.loads(raw)["output"]
    assert [(i["type"], i["namespace"], i["name"], json.loads(i["arguments"])) for i in items] == [
        ("function_call", "mcp__tau", "get_user_details", {"user_id": "u1"})]

async def test_a_claude_code_like_request_round_trips(fake):
    body = {
        "model": "claude-sonnet-4-5", "max_tokens": 32000, "stream": True,
        "metadata": {"user_id": "u"}, "thinking": {"type": "enabled", "budget_tokens": 1024},
        "system": [{"type": "text", "text": "You are Claude Code.", "cache_control": {"type": "ephemeral"}},
                   {"type": "text", "text": "Be brief."}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "<system-reminder>todo</system-reminder>"},
                                         {"type": "text", "text": "Fix it.", "cache_control": {"type": "ephemeral"}},
                                         {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}}]},
            {"role": "assistant", "content": [{"type": "thinking", "thinking": "hm", "signature": "sig"},
                                              {"type": "text", "text": "Running tests."},
                                              {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "pytest"}},
                                              {"type": "tool_use", "id": "toolu_2", "name": "Read", "input": {"file_path": "/a"}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "is_error": True,
                 "content": [{"type": "text", "text": "1 failed"}]},
                {"type": "tool_result", "tool_use_id": "toolu_2", "content": "line 1"},
                {"type": "text", "text": "go on"}]},
        ],
        "tools": [{"name": "Bash", "description": "Run bash", "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}}},
                  {"name": "Read", "description": "Read a file", "input_schema": {"type": "object", "properties": {"file_path": {"type": "string"}}}},
                  {"type": "web_search_20250305", "name": "web_search"}],
        "tool_choice": {"type": "auto", "disable_parallel_tool_use": True},
    }
    fake.push_reply(reply("Fixed.", [("Bash", {"command": "pytest -q"})]))
    async with serving(fake) as proxy:
        client = anthropic_client(proxy)
        async with client.messages.stream(**{k: v for k, v in body.items() if k != "stream"}) as s:
            message = await s.get_final_message()
        sent = upstream(fake)[0].json
        assert sent["messages"] == [
            {"role": "system", "content": "You are Claude Code.\n\nBe brief."},
            {"role": "user", "content": "<system-reminder>todo</system-reminder>\n\nFix it.\n\n[image]"},
            {"role": "assistant", "content": "Running tests.", "tool_calls": [
                {"id": "toolu_1", "type": "function", "function": {"name": "Bash", "arguments": "{\"command\": \"pytest\"}"}},
                {"id": "toolu_2", "type": "function", "function": {"name": "Read", "arguments": "{\"file_path\": \"/a\"}"}}]},
            {"role": "tool", "tool_call_id": "toolu_1", "content": "[tool error] 1 failed"},
            {"role": "tool", "tool_call_id": "toolu_2", "content": "line 1"},
            {"role": "user", "content": "go on"},
        ]
        assert [t["function"]["name"] for t in sent["tools"]] == ["Bash", "Read"]
        assert sent["tool_choice"] == "auto" and sent["parallel_tool_calls"] is False
        assert "temperature" not in sent and "thinking" not in sent
        assert proxy.left_out == {"web_search_20250305"}
    assert [b.type for b in message.content] == ["text", "tool_use"]
    assert message.content[1].input == {"command": "pytest -q"} and message.stop_reason == "tool_use"


@pytest.mark.parametrize("up", ["anthropic", "responses"])
async def test_the_reply_s_reasoning_goes_back_to_the_endpoint_as_it_came(fake, up):
    """The endpoint wants its own thinking block (with its signature) or reasoning item back; the
    agent (here on chat completions) never had them: the proxy puts them back."""
    fake.push_reply(reply(None, [("bash", {"command": "ls"})], reasoning_content="I should list."), reply("done"))
    step, history = STEPS["chat"]
    async with serving(fake, up) as proxy:
        first = await step(proxy, [], True)
        await step(proxy, history(first, "a b"), True)
        assert proxy.failure is None
    sent = upstream(fake)[1].json
    if up == "anthropic":
        turn = sent["messages"][1]
        assert turn["role"] == "assistant" and turn["content"][0]["type"] == "thinking"
        assert turn["content"][0]["thinking"] == "I should list."
    else:
        kinds = [i.get("type") for i in sent["input"]]
        assert "reasoning" in kinds and kinds[kinds.index("reasoning") + 1] == "function_call"


async def test_models_and_count_tokens_make_no_model_call(fake):
    async with serving(fake) as proxy:
        models = await openai_client(proxy).models.list()
        assert [m.id for m in models.data] == ["fake-model"]
        listed = await anthropic_client(proxy).models.list()
        assert [m.id for m in listed.data] == ["fake-model"]
        counted = await anthropic_client(proxy).messages.count_tokens(
            model="m", messages=[{"role": "user", "content": "x" * 400}])
        assert counted.input_tokens == 100
        assert proxy.ctx.trajectory.model_calls == [] and upstream(fake) == []


async def test_it_serves_on_a_socket_it_is_given(fake):
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    async with serving(fake) as unused:
        proxy = TrialProxy(unused.ctx)
        assert await proxy.start(sock) == f"http://127.0.0.1:{port}"
        try:
            r = await openai.AsyncOpenAI(base_url=proxy.base_url, api_key=proxy.token, max_retries=0).chat.completions.create(
                model="m", messages=[{"role": "user", "content": "hi"}])
            assert r.choices[0].message.content == "OK"
        finally:
            await proxy.close()


@pytest.mark.parametrize("wire", WIRES)
async def test_every_streamed_event_is_one_of_the_sdk_s_own_types(fake, wire):
    """Each event the proxy streams validates against the official SDK's type for it (required
    fields present, right types), the event name matching its ``type``."""
    from anthropic.types import RawMessageStreamEvent
    from openai.types.chat import ChatCompletionChunk
    from openai.types.responses import ResponseStreamEvent
    from pydantic import TypeAdapter

    fake.push_reply(reply("Let me look.", [("bash", {"command": "ls"}), ("apply_patch", {"input": "*** Begin Patch"})],
                          reasoning_content="Two calls."))
    path, body = {
        "chat": ("/v1/chat/completions", {"model": "m", "stream": True, "stream_options": {"include_usage": True},
                                          "messages": [{"role": "user", "content": "hi"}]}),
        "responses": ("/v1/responses", {"model": "m", "stream": True, "input": "hi",
                                        "tools": [{"type": "custom", "name": "apply_patch"}]}),
        "anthropic": ("/v1/messages", {"model": "m", "stream": True, "max_tokens": 9, "messages": [{"role": "user", "content": "hi"}]}),
    }[wire]
    adapter = {"chat": TypeAdapter(ChatCompletionChunk), "responses": TypeAdapter(ResponseStreamEvent),
               "anthropic": TypeAdapter(RawMessageStreamEvent)}[wire]
    async with serving(fake) as proxy:
        async with aiohttp.ClientSession() as http:
            async with http.post(proxy.base_url + path, json=body, headers={"x-api-key": proxy.token}) as resp:
                assert resp.status == 200 and resp.headers["Content-Type"].startswith("text/event-stream")
                raw = (await resp.read()).decode()
    events = [e for e in raw.split("\n\n") if e]
    seen = []
    for event in events:
        lines = dict(line.split(": ", 1) for line in event.split("\n"))
        if lines["data"] == "[DONE]":
            seen.append("[DONE]")
            continue
        data = json.loads(lines["data"])
        if "event" in lines:
            assert lines["event"] == data["type"]
        if wire == "anthropic" and data["type"] == "ping":
            seen.append("ping")
            continue
        adapter.validate_python(data)
        seen.append(data.get("type") or data["object"])
    if wire == "chat":
        assert seen[-1] == "[DONE]" and seen.count("chat.completion.chunk") >= 6
    elif wire == "responses":
        assert seen[:2] == ["response.created", "response.in_progress"] and seen[-1] == "response.completed"
        assert {"response.reasoning_summary_text.delta", "response.output_text.delta", "response.function_call_arguments.delta",
                "response.custom_tool_call_input.delta", "response.content_part.done"} <= set(seen)
    else:
        assert seen[:2] == ["message_start", "ping"] and seen[-2:] == ["message_delta", "message_stop"]
        assert seen.count("content_block_start") == 4 == seen.count("content_block_stop")  # thinking, text, 2 tool uses


# ------------------------------------------------------------------------ an agent gone mid-request
@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/messages/count_tokens"])
async def test_an_agent_that_goes_away_mid_request_leaves_no_traceback_and_no_call(fake, caplog, path):
    """An agent ended while it sends a request (the doctor's capture, a trial's end kills it): the
    proxy reads a body cut short — nobody to answer, no model call, and no "Error handling request"
    traceback on agentrig's stderr (the doctor's output once showed one)."""
    async with serving(fake) as proxy:
        host, port = proxy.base_url.split("//")[1].split("/")[0].split(":")
        reader, writer = await asyncio.open_connection(host, int(port))
        head = (f"POST {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {proxy.token}\r\n"
                "Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n")
        writer.write(head.encode() + b'{"model": "m", "messages": [')
        await writer.drain()
        await asyncio.sleep(0.2)  # the proxy is reading the body
        writer.transport.abort()  # the agent is gone
        for _ in range(50):  # the proxy's handler notices, then finishes
            await asyncio.sleep(0.02)
        assert proxy.steps == 0 and not upstream(fake)
    assert not [r for r in caplog.records if r.exc_info or "Error handling request" in r.getMessage()]
