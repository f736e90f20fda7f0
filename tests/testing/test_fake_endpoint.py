"""The fake OpenAI-compatible endpoint, over real HTTP on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

import aiohttp
import pytest

from agentrig.testing.fake_endpoint import (
    DEFAULT_KEY,
    FakeEndpoint,
    Fault,
    ThreadedFakeEndpoint,
    mask_key,
)

KEY = DEFAULT_KEY
AUTH = {"Authorization": f"Bearer {KEY}"}
MSG = [{"role": "user", "content": "hello there, how are you?"}]  # 25 chars
TOOLS = [
    {"type": "function", "function": {"name": "lookup", "parameters": {
        "type": "object", "required": ["q"], "properties": {"q": {"type": "string"}}}}},
    {"type": "function", "function": {"name": "book", "parameters": {
        "type": "object",
        "required": ["s", "i", "n", "b", "a", "o", "e", "u"],
        "properties": {"s": {"type": "string"}, "i": {"type": "integer"}, "n": {"type": "number"},
                       "b": {"type": "boolean"}, "a": {"type": "array", "items": {"type": "string"}},
                       "o": {"type": "object"}, "e": {"type": "string", "enum": ["economy", "business"]},
                       "u": {"type": ["null", "integer"]}, "optional": {"type": "string"}}}}},
]


@pytest.fixture
async def fake():
    async with FakeEndpoint() as ep:
        yield ep


@pytest.fixture
async def http():
    async with aiohttp.ClientSession() as s:
        yield s


async def chat(http, ep, body=None, headers=AUTH, **extra):
    body = dict(body or {"model": "fake-model", "messages": MSG}, **extra)
    async with http.post(ep.base_url + "/chat/completions", json=body, headers=headers) as r:
        return r.status, dict(r.headers), await r.read()


def err(raw: bytes) -> dict:
    return json.loads(raw)["error"]


# ---------------------------------------------------------------- normal replies


async def test_models_list_and_default_completion_shape(fake, http):
    assert fake.base_url == fake.root_url + "/v1" and fake.root_url.startswith("http://127.0.0.1:")
    async with http.get(fake.base_url + "/models", headers=AUTH) as r:
        assert r.status == 200
        models = await r.json()
    assert models["object"] == "list"
    assert [(m["id"], m["object"], m["owned_by"]) for m in models["data"]] == [
        ("fake-model", "model", "agentrig-fake"), ("fake-model-mini", "model", "agentrig-fake")]
    assert all(isinstance(m["created"], int) for m in models["data"])

    status, headers, raw = await chat(http, fake, model="fake-model-mini")
    assert status == 200 and headers["Content-Type"].startswith("application/json")
    c = json.loads(raw)
    assert c["object"] == "chat.completion" and c["id"].startswith("chatcmpl-") and isinstance(c["created"], int)
    assert c["model"] == "fake-model-mini"
    choice = c["choices"][0]
    assert choice["index"] == 0 and choice["finish_reason"] == "stop"
    assert choice["message"] == {"role": "assistant", "content": "OK"}
    assert c["usage"] == {"prompt_tokens": 6, "completion_tokens": 1, "total_tokens": 7,
                          "prompt_tokens_details": {"cached_tokens": 0},
                          "completion_tokens_details": {"reasoning_tokens": 0}}


async def test_scripted_replies_fifo_then_default(fake, http):
    fake.push_reply(
        {"content": None, "tool_calls": [{"name": "lookup", "arguments": {"q": "abc"}},
                                         {"name": "lookup", "arguments": "{\"q\": \"unterminated", "id": "mine"}],
         "reasoning_content": "r" * 40},
        {"content": "second", "finish_reason": "length", "usage": {"prompt_tokens": 1000, "completion_tokens": 5}},
    )
    first = json.loads((await chat(http, fake, tools=TOOLS))[2])
    msg = first["choices"][0]["message"]
    assert first["choices"][0]["finish_reason"] == "tool_calls" and msg["content"] is None
    assert msg["reasoning_content"] == "r" * 40
    assert [(t["id"], t["type"], t["function"]["name"], t["function"]["arguments"]) for t in msg["tool_calls"]] == [
        ("call_1", "function", "lookup", '{"q": "abc"}'), ("mine", "function", "lookup", '{"q": "unterminated')]
    assert first["usage"]["completion_tokens_details"]["reasoning_tokens"] == 10
    assert first["usage"]["completion_tokens"] == (12 + 18) // 4 + 10
    second = json.loads((await chat(http, fake))[2])
    assert second["choices"][0]["message"]["content"] == "second"
    assert second["choices"][0]["finish_reason"] == "length"
    assert (second["usage"]["prompt_tokens"], second["usage"]["total_tokens"]) == (1000, 1005)
    third = json.loads((await chat(http, fake))[2])
    assert third["choices"][0]["message"]["content"] == "OK"


async def test_default_tool_calls_follow_tool_choice(fake, http):
    forced = {"type": "function", "function": {"name": "book"}}
    c = json.loads((await chat(http, fake, tools=TOOLS, tool_choice=forced))[2])
    call = c["choices"][0]["message"]["tool_calls"][0]
    assert call["function"]["name"] == "book" and c["choices"][0]["finish_reason"] == "tool_calls"
    assert json.loads(call["function"]["arguments"]) == {
        "s": "x", "i": 1, "n": 1.0, "b": True, "a": [], "o": {}, "e": "economy", "u": 1}
    c = json.loads((await chat(http, fake, tools=TOOLS, tool_choice="required"))[2])
    call2 = c["choices"][0]["message"]["tool_calls"][0]
    assert (call2["function"]["name"], json.loads(call2["function"]["arguments"])) == ("lookup", {"q": "x"})
    assert call2["id"] != call["id"]
    c = json.loads((await chat(http, fake, tools=TOOLS, tool_choice="auto"))[2])
    assert c["choices"][0]["message"] == {"role": "assistant", "content": "OK"}
    status, _, raw = await chat(http, fake, tools=TOOLS, tool_choice={"type": "function", "function": {"name": "nope"}})
    assert status == 400 and "nope" in err(raw)["message"]


async def test_responder_sync_async_fault_and_failure(http):
    seen = []

    def sync(body):
        seen.append(body["messages"][-1]["content"])
        return {"content": f"echo {len(seen)}"}

    async with FakeEndpoint(responder=sync) as ep:
        assert json.loads((await chat(http, ep))[2])["choices"][0]["message"]["content"] == "echo 1"
        ep.push_reply({"content": "scripted first"})
        assert json.loads((await chat(http, ep))[2])["choices"][0]["message"]["content"] == "scripted first"
        assert seen == [MSG[0]["content"]]

    async def asyn(body):
        await asyncio.sleep(0)
        if body.get("temperature") == 9:
            return Fault("rate_limit", retry_after=3)
        if body.get("temperature") == 8:
            raise RuntimeError("boom")
        return {"content": "async"}

    async with FakeEndpoint(responder=asyn) as ep:
        assert json.loads((await chat(http, ep))[2])["choices"][0]["message"]["content"] == "async"
        status, headers, _ = await chat(http, ep, temperature=9)
        assert status == 429 and headers["Retry-After"] == "3"
        status, _, raw = await chat(http, ep, temperature=8)
        assert status == 500 and "boom" in err(raw)["message"]
        assert [type(e) for e in ep.errors] == [RuntimeError]


async def test_stream_true_sends_server_sent_chunks(fake, http):
    fake.push_reply({"content": "hi", "tool_calls": [{"name": "lookup", "arguments": {"q": 1}}]})
    body = {"model": "fake-model", "messages": MSG, "stream": True, "stream_options": {"include_usage": True}}
    async with http.post(fake.base_url + "/chat/completions", json=body, headers=AUTH) as r:
        assert r.status == 200 and r.headers["Content-Type"].startswith("text/event-stream")
        text = (await r.read()).decode()
    events = [line[6:] for line in text.split("\n\n") if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    assert chunks[0]["choices"][0]["delta"]["content"] == "hi"
    assert chunks[0]["choices"][0]["delta"]["tool_calls"][0]["index"] == 0
    assert chunks[1]["choices"][0]["finish_reason"] == "tool_calls"
    assert chunks[2]["choices"] == [] and chunks[2]["usage"]["total_tokens"] > 0


async def test_openai_client_parses_the_replies(fake):
    openai = pytest.importorskip("openai")
    client = openai.AsyncOpenAI(base_url=fake.base_url, api_key=KEY, max_retries=0)
    try:
        fake.push_reply({"content": None, "tool_calls": [{"name": "lookup", "arguments": {"q": "z"}}]})
        r = await client.chat.completions.create(model="fake-model", messages=MSG, tools=TOOLS)
        assert r.choices[0].message.tool_calls[0].function.arguments == '{"q": "z"}'
        models = await client.models.list()
        assert [m.id for m in models.data] == ["fake-model", "fake-model-mini"]
        fake.push("quota")
        with pytest.raises(openai.RateLimitError) as exc:
            await client.chat.completions.create(model="fake-model", messages=MSG)
        assert exc.value.code == "insufficient_quota"
    finally:
        await client.close()


# ---------------------------------------------------------------- auth, models, paths


async def test_auth_rejections_mask_the_sent_key(fake, http):
    wrong = "sk-wrong-9876543210fedcba"
    for route in ("models", "chat"):
        if route == "models":
            async with http.get(fake.base_url + "/models", headers={"Authorization": f"Bearer {wrong}"}) as r:
                status, raw = r.status, await r.read()
        else:
            status, _, raw = await chat(http, fake, headers={"Authorization": f"Bearer {wrong}"})
        e = err(raw)
        assert status == 401 and (e["type"], e["param"], e["code"]) == ("invalid_request_error", None, "invalid_api_key")
        assert e["message"].startswith("Incorrect API key provided: sk-wr***dcba. You can find your API key at ")
        assert wrong not in raw.decode()
    assert mask_key(KEY) == "sk-fa***cdef" and mask_key("short") == "sh***"
    for headers in ({}, {"Authorization": KEY}, {"Authorization": "Bearer "}):
        status, _, raw = await chat(http, fake, headers=headers)
        assert status == 401 and err(raw)["message"].startswith("You didn't provide an API key")
    assert fake.chat_count == 4 and [r.auth_ok for r in fake.requests] == [False] * 5
    status, _, _ = await chat(http, fake)
    assert status == 200 and fake.requests[-1].auth_ok
    assert all("authorization" not in r.headers for r in fake.requests)
    assert fake.requests[-1].headers["content-type"] == "application/json"


async def test_no_auth_endpoint_accepts_anything(http):
    async with FakeEndpoint(api_key=None) as ep:
        assert (await chat(http, ep, headers={}))[0] == 200
        assert (await chat(http, ep, headers={"Authorization": "Bearer whatever"}))[0] == 200
        ep.push("unauthorized")
        status, _, raw = await chat(http, ep, headers={"Authorization": "Bearer sk-abcdefghijklmnop"})
        assert status == 401 and "sk-ab***mnop" in err(raw)["message"]


async def test_unknown_model_and_bad_bodies(fake, http):
    status, _, raw = await chat(http, fake, model="gpt-9")
    assert status == 404 and err(raw) == {
        "message": "The model `gpt-9` does not exist or you do not have access to it.",
        "type": "invalid_request_error", "param": None, "code": "model_not_found"}
    async with http.post(fake.base_url + "/chat/completions", data=b"{not json", headers=AUTH) as r:
        assert r.status == 400 and "parse the JSON" in err(await r.read())["message"]
    assert fake.requests[-1].json is None
    status, _, raw = await chat(http, fake, {"model": "fake-model"})
    assert status == 400 and err(raw)["param"] == "messages"


@pytest.mark.parametrize("path", ["/v1/v1/models", "/models", "/chat/completions", "/v1/chat/completions/models",
                                  "/v2/models", "/"])
async def test_wrong_paths_are_plain_404(fake, http, path):
    async with http.get(fake.root_url + path, headers=AUTH) as r:
        assert r.status == 404 and await r.text() == "404: Not Found"
        assert r.headers["Content-Type"].startswith("text/plain")
    async with http.post(fake.root_url + path, json={"model": "fake-model", "messages": MSG}, headers=AUTH) as r:
        assert r.status == 404
    assert fake.chat_count == 0 and [r.path for r in fake.requests] == [path, path]


async def test_wrong_method_and_custom_prefix(http):
    async with FakeEndpoint(prefix="/serving/v9/") as ep:
        assert ep.base_url == ep.root_url + "/serving/v9"
        async with http.get(ep.base_url + "/chat/completions", headers=AUTH) as r:
            assert r.status == 405
        async with http.get(ep.root_url + "/v1/models", headers=AUTH) as r:
            assert r.status == 404
        assert (await chat(http, ep))[0] == 200
    async with FakeEndpoint(prefix="") as ep:
        assert ep.base_url == ep.root_url
        async with http.get(ep.root_url + "/models", headers=AUTH) as r:
            assert r.status == 200


# ---------------------------------------------------------------- faults

FAULT_CASES = [
    # fault, status, error type, error code, message fragment
    ("unauthorized", 401, "invalid_request_error", "invalid_api_key", "sk-fa***cdef."),
    ("forbidden", 403, "invalid_request_error", "permission_denied", "permission"),
    ("rate_limit", 429, "rate_limit_exceeded", "rate_limit_exceeded", "Please try again in 1s."),
    ("quota", 429, "insufficient_quota", "insufficient_quota",
     "You exceeded your current quota, please check your plan and billing details."),
    ("server_error", 500, "server_error", None, "error"),
    (Fault("server_error", status=502), 502, "server_error", None, "gateway"),
    (Fault("server_error", status=503), 503, "server_error", None, "overloaded"),
    ("request_timeout", 408, "timeout", None, "timed out"),
    ("conflict", 409, "conflict", None, "retry"),
    ("context_overflow", 400, "invalid_request_error", "context_length_exceeded",
     "maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens"),
    ("bad_request", 400, "invalid_request_error", None, "Invalid value for 'temperature'"),
    (Fault("bad_request", message="Unrecognized request argument: top_k"), 400, "invalid_request_error", None,
     "Unrecognized request argument: top_k"),
]


@pytest.mark.parametrize("fault, status, etype, code, fragment", FAULT_CASES)
async def test_error_faults(fake, http, fault, status, etype, code, fragment):
    fake.push(fault)
    got, headers, raw = await chat(http, fake)
    e = err(raw)
    assert (got, e["type"], e["code"]) == (status, etype, code)
    assert fragment in e["message"]
    assert ("Retry-After" in headers) == (fault == "rate_limit")
    assert (await chat(http, fake))[0] == 200  # one fault per request
    assert fake.chat_count == 2


async def test_retry_after_forms(fake, http):
    fake.push(Fault("rate_limit", retry_after=7), Fault("rate_limit", retry_after_ms=250),
              Fault("rate_limit", retry_after=0.5))
    _, h, raw = await chat(http, fake)
    assert h["Retry-After"] == "7" and "try again in 7s" in err(raw)["message"]
    _, h, raw = await chat(http, fake)
    assert h["retry-after-ms"] == "250" and "Retry-After" not in h and "0.25s" in err(raw)["message"]
    _, h, _ = await chat(http, fake)
    assert h["Retry-After"] == "0.5"


async def test_body_faults(fake, http):
    fake.push("malformed", "not_completion", "html", "unprocessable")
    status, h, raw = await chat(http, fake)
    assert status == 200 and h["Content-Type"].startswith("application/json")
    with pytest.raises(ValueError):
        json.loads(raw)
    status, _, raw = await chat(http, fake)
    assert status == 200 and json.loads(raw) == {"status": "ok"}
    status, h, raw = await chat(http, fake)
    assert status == 200 and h["Content-Type"].startswith("text/html") and b"<html" in raw
    status, _, raw = await chat(http, fake)
    assert status == 422 and json.loads(raw)["detail"][0]["loc"] == ["body", "messages"]


async def test_delay_and_disconnect(fake, http):
    fake.push(Fault("delay", delay_s=0.2), "disconnect")
    t0 = time.perf_counter()
    status, _, raw = await chat(http, fake)
    assert status == 200 and time.perf_counter() - t0 >= 0.2
    assert json.loads(raw)["choices"][0]["message"]["content"] == "OK"
    with pytest.raises(aiohttp.ServerDisconnectedError):
        await chat(http, fake)
    assert (await chat(http, fake))[0] == 200
    assert fake.chat_count == 3 and len(fake.requests) == 3 and fake.in_flight == 0


async def test_fault_targets(fake, http):
    fake.push(Fault("server_error", on="models"), Fault("rate_limit", on="any"))
    assert (await chat(http, fake))[0] == 429  # skips the models-only fault
    assert (await chat(http, fake))[0] == 200
    async with http.get(fake.base_url + "/models", headers=AUTH) as r:
        assert r.status == 500
    async with http.get(fake.base_url + "/models", headers=AUTH) as r:
        assert r.status == 200
    fake.push(Fault("malformed", on="models"))
    async with http.get(fake.base_url + "/models", headers=AUTH) as r:
        with pytest.raises(ValueError):
            json.loads(await r.read())


def test_fault_values_are_validated():
    assert Fault.coerce("rate_limit") == Fault("rate_limit")
    assert Fault.coerce({"kind": "delay", "delay_s": 0.1}) == Fault("delay", delay_s=0.1)
    with pytest.raises(ValueError, match="unknown fault kind"):
        Fault("rate-limit")
    with pytest.raises(ValueError, match="on="):
        Fault("quota", on="both")
    with pytest.raises(ValueError):
        FakeEndpoint(fault_kinds=("nope",))
    with pytest.raises(ValueError):
        FakeEndpoint(tool_support="maybe")


async def statuses(ep: FakeEndpoint, http, n: int) -> list[int]:
    return [(await chat(http, ep))[0] for _ in range(n)]


async def test_fault_rate_is_deterministic_per_seed(http):
    kinds = ("rate_limit", "server_error", "quota")
    async with FakeEndpoint(fault_rate=0.5, fault_kinds=kinds, seed=7) as a, \
            FakeEndpoint(fault_rate=0.5, fault_kinds=kinds, seed=7) as b, \
            FakeEndpoint(fault_rate=0.5, fault_kinds=kinds, seed=8) as c:
        sa, sb, sc = await statuses(a, http, 40), await statuses(b, http, 40), await statuses(c, http, 40)
        assert sa == sb and sa != sc
        assert set(sa) == {200, 429, 500} and 8 <= sa.count(200) <= 32
        a.reset()  # reseeds
        assert await statuses(a, http, 40) == sa
        a.push("conflict")  # queued faults come first and do not draw from the generator
        a.reset()
        a.push("conflict")
        assert await statuses(a, http, 41) == [409] + sa


async def test_tool_support_modes(http):
    async with FakeEndpoint(tool_support="ignore") as ep:
        c = json.loads((await chat(http, ep, tools=TOOLS, tool_choice="required"))[2])
        assert c["choices"][0]["message"] == {"role": "assistant", "content": "OK"}
    async with FakeEndpoint(tool_support="reject") as ep:
        status, _, raw = await chat(http, ep, tools=TOOLS)
        assert status == 400 and err(raw) == {"message": "tools is not supported by this model",
                                              "type": "invalid_request_error", "param": "tools",
                                              "code": "unsupported_parameter"}
        assert (await chat(http, ep))[0] == 200


async def test_max_in_flight_reaches_concurrency(http):
    async with FakeEndpoint(delay_s=0.3) as ep:
        results = await asyncio.gather(*(chat(http, ep) for _ in range(12)))
        assert [r[0] for r in results] == [200] * 12
        # served concurrently, not one by one: all 12 were in flight at once
        assert ep.max_in_flight == 12 and ep.in_flight == 0 and ep.chat_count == 12
        assert all(r.t_end - r.t_start >= 0.29 for r in ep.requests)


async def test_record_off_keeps_counters(http):
    async with FakeEndpoint(record=False) as ep:
        await chat(http, ep)
        assert ep.requests == [] and ep.chat_count == 1


# ---------------------------------------------------------------- out of process


async def test_control_routes(fake, http):
    async def post(path, payload=None):
        async with http.post(fake.root_url + path, json=payload) as r:
            return r.status, await r.json()

    assert await post("/_fake/faults", ["quota", {"kind": "rate_limit", "retry_after": 4}]) == (200, {"queued": 2})
    assert (await post("/_fake/replies", [{"content": "from control"}]))[0] == 200
    assert (await post("/_fake/faults", ["bogus"]))[0] == 400
    assert (await chat(http, fake))[0] == 429
    status, headers, _ = await chat(http, fake)
    assert status == 429 and headers["Retry-After"] == "4"
    assert json.loads((await chat(http, fake))[2])["choices"][0]["message"]["content"] == "from control"
    async with http.get(fake.root_url + "/_fake/stats") as r:
        stats = await r.json()
    assert (stats["chat_count"], stats["max_in_flight"], stats["requests"]) == (3, 1, 3)
    async with http.get(fake.root_url + "/_fake/requests") as r:
        recs = await r.json()
    assert [x["path"] for x in recs] == ["/v1/chat/completions"] * 3 and recs[0]["json"]["model"] == "fake-model"
    await post("/_fake/faults", ["quota"])
    assert await post("/_fake/reset") == (200, {"ok": True})
    assert (await chat(http, fake))[0] == 200  # the queued fault was cleared
    assert fake.chat_count == 1 and len(fake.requests) == 1


def urlopen_json(url: str, body: dict | None = None, key: str | None = KEY):
    req = urllib.request.Request(url, data=json.dumps(body).encode() if body is not None else None,
                                 headers={"Content-Type": "application/json", **({"Authorization": f"Bearer {key}"} if key else {})})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_threaded_endpoint_from_sync_code():
    with ThreadedFakeEndpoint(models=("m1",)) as srv:
        assert srv.base_url.startswith("http://127.0.0.1:") and srv.base_url.endswith("/v1")
        url = srv.base_url + "/chat/completions"
        body = {"model": "m1", "messages": MSG}
        srv.endpoint.push("rate_limit")
        srv.endpoint.push_reply({"content": "threaded"})
        assert urlopen_json(url, body)[0] == 429
        status, c = urlopen_json(url, body)
        assert status == 200 and c["choices"][0]["message"]["content"] == "threaded"
        assert srv.endpoint.chat_count == 2 and srv.endpoint.requests[-1].json == body
        srv.endpoint.push("quota")
        srv.endpoint.reset()
        assert urlopen_json(url, body)[0] == 200 and srv.endpoint.chat_count == 1
        base = srv.base_url
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(base + "/models", timeout=2)


def test_cli_serves_until_sigterm():
    env = {k: v for k, v in os.environ.items() if not k.endswith("_proxy") and not k.endswith("_PROXY")}
    env["FAKE_KEY_FOR_CLI"] = "sk-cli-key-abcdef123456"
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentrig.testing.fake_endpoint", "--models", "a,b", "--api-key-env", "FAKE_KEY_FOR_CLI",
         "--fault-rate", "0", "--seed", "3"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        line = proc.stdout.readline().strip()
        assert line.startswith("http://127.0.0.1:") and line.endswith("/v1"), proc.stderr.read() if not line else line
        status, models = urlopen_json(line + "/models", key="sk-cli-key-abcdef123456")
        assert status == 200 and [m["id"] for m in models["data"]] == ["a", "b"]
        assert urlopen_json(line + "/models", key=KEY)[0] == 401
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
        assert "Traceback" not in proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_cli_without_the_key_variable_is_a_clear_error():
    env = {k: v for k, v in os.environ.items() if k != "NO_SUCH_KEY_VAR_X"}
    p = subprocess.run([sys.executable, "-m", "agentrig.testing.fake_endpoint", "--api-key-env", "NO_SUCH_KEY_VAR_X"],
                       capture_output=True, text=True, env=env, timeout=20)
    assert p.returncode == 2 and "NO_SUCH_KEY_VAR_X" in p.stderr and "Traceback" not in p.stderr


def test_each_record_holds_the_status_the_usage_and_the_fault_answered():
    with ThreadedFakeEndpoint(models=("m1",), wires=("responses", "anthropic")) as srv:
        url = srv.base_url + "/chat/completions"
        body = {"model": "m1", "messages": MSG}
        srv.endpoint.push("rate_limit", "malformed")
        assert urlopen_json(url, body)[0] == 429
        assert urllib.request.urlopen(urllib.request.Request(url, data=json.dumps(body).encode(), headers=AUTH),
                                      timeout=30).status == 200  # a malformed body, status 200
        status, c = urlopen_json(url, body)
        assert status == 200
        assert urlopen_json(url, {"model": "nope", "messages": MSG})[0] == 404
        status, r = urlopen_json(srv.base_url + "/responses", {"model": "m1", "input": "hi"})
        assert status == 200
        recs = srv.endpoint.requests
    assert [(x.status, x.fault) for x in recs] == [(429, "rate_limit"), (200, "malformed"), (200, None), (404, None),
                                                   (200, None)]
    assert recs[0].usage is None and recs[1].usage is None and recs[3].usage is None  # no completion answered
    assert recs[2].usage == c["usage"] and recs[2].usage["prompt_tokens"] > 0
    assert recs[4].usage["prompt_tokens"] == r["usage"]["input_tokens"]  # the usage answered, in chat's fields


def test_cli_log_file_outlives_a_killed_endpoint(tmp_path):
    """``--log FILE``: each request appended as it is answered (no body, only X-Agentrig-* headers),
    so the log of an endpoint killed abruptly still counts every request it served."""
    log = tmp_path / "ep.jsonl"
    env = {k: v for k, v in os.environ.items() if not k.endswith("_proxy") and not k.endswith("_PROXY")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentrig.testing.fake_endpoint", "--no-auth", "--models", "m1", "--log", str(log),
         "--fault-rate", "0.5", "--fault-kinds", "server_error", "--seed", "4"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        base = proc.stdout.readline().strip()
        answered = []
        for i in range(8):
            req = urllib.request.Request(base + "/chat/completions", data=json.dumps({"model": "m1", "messages": MSG}).encode(),
                                         headers={"Content-Type": "application/json", "X-Agentrig-Task": f"t{i}",
                                                  "X-Secret": "not logged"})
            try:
                with urllib.request.urlopen(req, timeout=30) as r:
                    answered.append((200, json.loads(r.read())["usage"]))
            except urllib.error.HTTPError as exc:
                answered.append((exc.code, None))
        proc.kill()  # abruptly: nothing flushed at exit
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    assert [(x["status"], x["usage"]) for x in lines] == answered
    assert {x["fault"] for x in lines if x["status"] == 500} == {"server_error"} and {200, 500} == {a for a, _ in answered}
    assert [x["headers"] for x in lines] == [{"x-agentrig-task": f"t{i}"} for i in range(8)]
    assert all("json" not in x for x in lines)
