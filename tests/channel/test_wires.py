"""The Responses and Anthropic Messages wires behind the same channel (issue 14 §1), against the
fake endpoint's /v1/responses and /v1/messages routes (real HTTP on 127.0.0.1): what each request
holds, what comes back, reasoning kept and sent back, usage, faults retried or fatal with the
right codes, and the doctor's codes per wire."""

from __future__ import annotations

import asyncio

import pytest

from agentrig.agents.llm import assistant_dict
from agentrig.channel.client import Channel
from agentrig.channel.doctor.diagnose import run_doctor
from agentrig.config import ChannelConfig, load_channel_config
from agentrig.errors import AuthError, BadRequest, ConfigError, ModelNotFound
from agentrig.testing.fake_endpoint import DEFAULT_KEY, Fault, FakeEndpoint
from agentrig.types import Message

WIRES = ("responses", "anthropic")
PATH = {"responses": "/v1/responses", "anthropic": "/v1/messages"}
TOOLS = [{"type": "function", "function": {
    "name": "lookup", "description": "Look a thing up.",
    "parameters": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}}}]


@pytest.fixture
async def fake():
    async with FakeEndpoint() as ep:
        yield ep


def channel(fake: FakeEndpoint, wire: str, key: str = DEFAULT_KEY, **settings) -> Channel:
    cfg = ChannelConfig.model_validate({"channel": {"base_url": fake.base_url, "api_key_env": "K", "model": "fake-model",
                                                    "wire": wire, "backoff_base_s": 0.001, **settings}})
    return Channel(cfg, env={"K": key})


def sent(fake: FakeEndpoint) -> list[dict]:
    return [r.json for r in fake.requests if r.path in PATH.values()]


def back(done) -> dict:
    """The assistant message as the LLM agent sends it back (agents/llm.assistant_dict)."""
    m = done.message
    return assistant_dict(Message(role="assistant", content=m.content, tool_calls=m.tool_calls,
                                  reasoning=m.reasoning, extra=m.extra), True)


def test_wire_setting_defaults_to_chat_and_rejects_unknown_values(tmp_path):
    cfg = ChannelConfig.model_validate({"channel": {"wire": "anthropic"}, "roles": {"judge": {"wire": "responses"}}})
    assert ChannelConfig().resolve("agent").wire == "chat"
    assert (cfg.resolve("agent").wire, cfg.resolve("judge").wire) == ("anthropic", "responses")
    path = tmp_path / "exp.toml"
    path.write_text('[channel]\nwire = "messages"\n')
    with pytest.raises(ConfigError) as err:
        load_channel_config(path)
    assert "channel.wire" in str(err.value) and "'chat', 'responses' or 'anthropic'" in str(err.value)


@pytest.mark.parametrize("wire", WIRES)
async def test_a_tool_call_round_trip(fake, wire):
    fake.push_reply({"content": None, "tool_calls": [{"name": "lookup", "arguments": {"q": "bike"}}]})
    opening = [{"role": "system", "content": "You are terse."}, {"role": "assistant", "content": "Hi! How can I help?"},
               {"role": "user", "content": "Find the bike."}]
    async with channel(fake, wire) as ch:
        first = await ch.complete("agent", opening, TOOLS)
        call = first.message.tool_calls[0]
        assert (call.name, call.arguments, first.finish_reason) == ("lookup", {"q": "bike"}, "tool_calls")
        follow = opening + [back(first), {"role": "tool", "tool_call_id": call.id, "content": "bike #7"}]
        second = await ch.complete("agent", follow, TOOLS, parallel_tool_calls=False)
    assert (second.message.content, second.finish_reason) == ("OK", "stop")
    req1, req2 = sent(fake)
    if wire == "responses":
        assert req1["input"][:3] == [{"role": "system", "content": "You are terse."},
                                     {"role": "assistant", "content": "Hi! How can I help?"},
                                     {"role": "user", "content": "Find the bike."}]
        assert req1["tools"][0] == {"type": "function", "name": "lookup", "description": "Look a thing up.",
                                    "parameters": TOOLS[0]["function"]["parameters"], "strict": False}
        assert req2["input"][3:] == [
            {"type": "function_call", "call_id": call.id, "name": "lookup", "arguments": '{"q": "bike"}'},
            {"type": "function_call_output", "call_id": call.id, "output": "bike #7"}]
        assert req2["parallel_tool_calls"] is False and "seed" not in req2
    else:
        assert req1["system"] == "You are terse." and req1["max_tokens"] == 8192
        # the API wants a user turn first: the assistant's greeting gets one before it
        assert [t["role"] for t in req1["messages"]] == ["user", "assistant", "user"]
        assert req1["tools"][0] == {"name": "lookup", "description": "Look a thing up.",
                                    "input_schema": TOOLS[0]["function"]["parameters"]}
        assert req1["tool_choice"] == {"type": "auto"}
        assert req2["messages"][3]["content"] == [{"type": "tool_use", "id": call.id, "name": "lookup", "input": {"q": "bike"}}]
        assert req2["messages"][4]["content"] == [{"type": "tool_result", "tool_use_id": call.id, "content": "bike #7"}]
        assert req2["tool_choice"] == {"type": "auto", "disable_parallel_tool_use": True}


@pytest.mark.parametrize("wire", WIRES)
async def test_the_channel_headers_and_the_usage_ledger_are_shared(fake, wire):
    async with channel(fake, wire, max_concurrency=2) as ch:
        await asyncio.gather(*(ch.complete("judge", [{"role": "user", "content": f"q{i}"}]) for i in range(8)))
        usage = ch.usage.summary()["judge"]
    assert fake.max_in_flight <= 2  # the endpoint's concurrency bound holds for every wire
    assert usage.requests == 8 and usage.prompt_tokens > 0 and usage.completion_tokens > 0
    roles = {r.headers.get("x-agentrig-role") for r in fake.requests if r.path == PATH[wire]}
    assert roles == {"judge"}


async def test_responses_reasoning_items_go_back_with_their_following_items(fake):
    fake.push_reply({"content": "Let me look.", "reasoning_content": "The user wants a bike.",
                     "tool_calls": [{"name": "lookup", "arguments": {"q": "bike"}}]})
    msgs = [{"role": "user", "content": "Find the bike."}]
    async with channel(fake, "responses") as ch:
        first = await ch.complete("agent", msgs, TOOLS)
        assert first.message.reasoning == "The user wants a bike." and first.usage.reasoning_tokens > 0
        tool = {"role": "tool", "tool_call_id": first.message.tool_calls[0].id, "content": "bike #7"}
        await ch.complete("agent", msgs + [back(first), tool], TOOLS)
        edited = {**back(first), "content": "[elided]"}  # an edited message cannot carry its reasoning
        await ch.complete("agent", msgs + [edited, tool], TOOLS)
    kept, plain = sent(fake)[1]["input"], sent(fake)[2]["input"]
    assert [i.get("type") for i in kept[1:4]] == ["reasoning", "message", "function_call"]
    assert kept[1]["id"].startswith("rs_") and kept[3]["id"].startswith("fc_")  # by id, as the API wants
    assert all(i.get("type") != "reasoning" for i in plain) and plain[1] == {"role": "assistant", "content": "[elided]"}


async def test_anthropic_thinking_blocks_go_back_signed_and_cache_tokens_are_counted(fake):
    fake.push_reply({"content": None, "reasoning_content": "Look it up first.",
                     "tool_calls": [{"name": "lookup", "arguments": {"q": "bike"}}],
                     "usage": {"prompt_tokens": 1000, "cache_read_input_tokens": 600, "cache_creation_input_tokens": 300}})
    msgs = [{"role": "user", "content": "Find the bike."}]
    async with channel(fake, "anthropic", extra_body={"thinking": {"type": "enabled", "budget_tokens": 2048}}) as ch:
        first = await ch.complete("agent", msgs, TOOLS)
        assert first.message.reasoning == "Look it up first."
        u = first.usage
        assert (u.prompt_tokens, u.cached_tokens, u.cache_write_tokens) == (1000, 600, 300)
        tool = {"role": "tool", "tool_call_id": first.message.tool_calls[0].id, "content": "bike #7"}
        # the fake refuses a tool-use turn continued without its signed thinking block, as the API does
        second = await ch.complete("agent", msgs + [back(first), tool], TOOLS)
        assert second.message.content == "OK"
        forged = back(first)
        forged["thinking_blocks"] = [{**forged["thinking_blocks"][0], "thinking": "Something else."}]
        with pytest.raises(BadRequest) as err:
            await ch.complete("agent", msgs + [forged, tool], TOOLS)
    assert "Invalid `signature`" in err.value.diagnosis.message
    req = sent(fake)[1]
    assert req["max_tokens"] == 8192 + 2048 and req["thinking"]["budget_tokens"] == 2048
    assert req["messages"][1]["content"][0]["type"] == "thinking"


@pytest.mark.parametrize("wire", WIRES)
async def test_faults_are_retried_or_fatal_with_the_right_code(fake, wire):
    async with channel(fake, wire, max_attempts=4) as ch:
        fake.push(Fault("rate_limit", retry_after=0.05), Fault("server_error", status=529), "malformed")
        done = await ch.complete("agent", [{"role": "user", "content": "hi"}])
        assert [a.cause for a in done.attempts] == ["rate_limited", "server_error", "malformed", None]
        assert done.attempts[0].wait_s == 0.05 and done.attempts[1].status == 529  # retry-after honoured
        with pytest.raises(ModelNotFound) as nf:
            await channel(fake, wire, model="no-such-model").complete("agent", [{"role": "user", "content": "hi"}])
        assert nf.value.diagnosis.code == "MODEL_NOT_FOUND" and len(nf.value.attempts) == 1
    with pytest.raises(AuthError) as auth:
        await channel(fake, wire, key="sk-wrong-key-00000000000").complete("agent", [{"role": "user", "content": "hi"}])
    assert auth.value.diagnosis.code == "AUTH_REJECTED" and len(auth.value.attempts) == 1
    assert "sk-wrong-key-00000000000" not in str(auth.value.diagnosis)
    bodies = [r for r in fake.requests if r.path == PATH[wire]]
    assert len(bodies) == 6  # 4 attempts, then one each for the fatal faults: never retried


async def test_anthropic_error_bodies_map_to_codes(fake):
    """The Anthropic error shapes themselves (type names), as the SDK hands them over."""
    fake.push(Fault("rate_limit", retry_after=3))
    async with channel(fake, "anthropic", max_attempts=1) as ch:
        from agentrig.errors import RetriesExhausted
        with pytest.raises(RetriesExhausted) as limited:
            await ch.complete("agent", [{"role": "user", "content": "hi"}])
    assert limited.value.diagnosis.code == "RATE_LIMITED"
    last = fake.requests[-1]
    # the key went in x-api-key (accepted, and never recorded), with the API version header
    assert last.path == "/v1/messages" and last.auth_ok and last.headers.get("anthropic-version")
    assert DEFAULT_KEY not in repr(last)


DOCTOR_CASES = {  # fault planted -> (check, code) the doctor must report
    "ok": (None, None), "key": ("models", "AUTH_REJECTED"), "model": ("model", "MODEL_NOT_FOUND"),
    "429": ("chat", "RATE_LIMITED"), "529": ("chat", "SERVER_ERROR"),
}


@pytest.mark.parametrize("case", DOCTOR_CASES)
@pytest.mark.parametrize("wire", WIRES)
async def test_the_doctor_codes_per_wire(fake, wire, case):
    if case == "429":
        fake.push(Fault("rate_limit", retry_after=7))
    if case == "529":
        fake.push(Fault("server_error", status=529))
    cfg = ChannelConfig.model_validate({"channel": {"base_url": fake.base_url, "api_key_env": "K", "wire": wire,
                                                    "model": "no-such-model" if case == "model" else "fake-model"}})
    report = await run_doctor(cfg, env={"K": "sk-wrong-key-00000000000" if case == "key" else DEFAULT_KEY})
    failed = [(c.name, c.code) for c in report.endpoints[0].checks if c.status == "fail"]
    name, code = DOCTOR_CASES[case]
    assert failed == ([] if code is None else [(name, code)])
    if case == "429":
        assert "asked to wait 7s" in next(c.message for c in report.endpoints[0].checks if c.code == "RATE_LIMITED")
    if case == "ok":  # the chat and forced-tool checks went through the wire's own route
        assert any(r.path == PATH[wire] and r.json.get("tools") for r in fake.requests)
        assert not any(r.path.endswith("/chat/completions") for r in fake.requests)
    if case == "529" and wire == "anthropic":
        assert "Overloaded" in next(c.message for c in report.endpoints[0].checks if c.code == "SERVER_ERROR")


def test_the_wire_registry_speaks_every_wire_a_setting_may_name():
    # the names live in the core (config.WIRES: what a settings file may write), the modules with the
    # wires (wires.REGISTRY); a wire in one and not the other would be accepted and fail, or never be named
    from agentrig.channel.wires import REGISTRY, wire_module
    from agentrig.config import WIRES

    assert tuple(REGISTRY) == WIRES
    for wire in WIRES:
        module = wire_module(wire)
        assert module.__name__ == f"agentrig.channel.wires.{wire}"
        assert all(hasattr(module, a) for a in ("request", "parse", "classify", "STATUS", "TIMEOUT", "CONNECTION",
                                                "PATH", "MODELS")), wire


def test_the_doctor_command_takes_a_wire():
    from typer.testing import CliRunner

    from agentrig.cli import app
    from agentrig.testing.fake_endpoint import ThreadedFakeEndpoint

    with ThreadedFakeEndpoint(record=True) as server:
        args = ["doctor", "--base-url", server.base_url, "--model", "fake-model", "--api-key-env", "K", "--json"]
        ok = CliRunner(env={"K": DEFAULT_KEY}).invoke(app, [*args, "--wire", "anthropic"])
        paths = {r.path for r in server.endpoint.requests if r.method == "POST"}
        bad = CliRunner(env={"K": DEFAULT_KEY}).invoke(app, [*args, "--wire", "messages"])
    assert ok.exit_code == 0, ok.output
    assert "/v1/messages" in paths and "/v1/chat/completions" not in paths
    assert bad.exit_code == 1 and "--wire 'messages': expected chat, responses or anthropic" in bad.output
    assert "Traceback" not in bad.output


def test_a_changed_wire_makes_runs_incomparable(tmp_path):
    from agentrig.run.experiment import load
    from agentrig.run.snapshot import comparability
    from agentrig.store.rundir import differences

    def snap(wire_line: str) -> dict:
        path = tmp_path / "exp.toml"
        path.write_text(f'name = "w"\n[benchmark]\ndomains = ["bikeshop"]\n[user]\nkind = "scripted"\n'
                        f'[channel]\nmodel = "m"\n{wire_line}\n[[arms]]\nname = "a"\n', encoding="utf-8")
        return comparability(load(path, tmp_path / "run"))

    chat, explicit, anthropic = snap(""), snap('wire = "chat"'), snap('wire = "anthropic"')
    assert differences(chat, explicit) == []  # a chat run's snapshot is as it was before the setting existed
    assert any(d.startswith("arms.a.roles.agent.wire") and "anthropic" in d for d in differences(chat, anthropic))
