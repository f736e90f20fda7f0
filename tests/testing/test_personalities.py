"""Server personalities of the fake endpoint, over real HTTP on 127.0.0.1."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request

import aiohttp
import pytest

from agentrig.testing.fake_endpoint import DEFAULT_KEY, FakeEndpoint
from agentrig.testing.personalities import PERSONALITIES, estimate_prompt_tokens, make_personality

AUTH = {"Authorization": f"Bearer {DEFAULT_KEY}"}
TOOLS = [{"type": "function", "function": {"name": "lookup", "parameters": {
    "type": "object", "required": ["q"], "properties": {"q": {"type": "string"}}}}},
         {"type": "function", "function": {"name": "book", "parameters": {"type": "object", "properties": {}}}}]
NAMED = {"type": "function", "function": {"name": "book"}}
ASK = [{"role": "user", "content": "please lookup the order"}]


async def post(ep, body, url=None):
    url = url or ep.base_url + "/chat/completions"
    async with aiohttp.ClientSession() as h, h.post(url, json=body, headers=AUTH) as r:
        return r.status, dict(r.headers), json.loads(await r.read())


async def get(ep, url):
    async with aiohttp.ClientSession() as h, h.get(url, headers=AUTH) as r:
        return r.status, dict(r.headers), await r.text()


def body(messages=ASK, choice="__absent__", tools=TOOLS, **extra):
    b = {"model": "fake-model", "messages": messages, **extra}
    if tools:
        b["tools"] = tools
    if choice != "__absent__":
        b["tool_choice"] = choice
    return b


def calls(completion) -> list[str]:
    return [tc["function"]["name"] for tc in completion["choices"][0]["message"].get("tool_calls") or []]


async def test_vllm_without_auto_tool_choice_refuses_auto_and_absent_but_honours_forced():
    async with FakeEndpoint(personality="vllm-no-auto-tool-choice") as ep:
        for choice in ("__absent__", "auto"):
            status, headers, out = await post(ep, body(choice=choice))
            assert status == 400 and out["error"]["type"] == "BadRequestError" and out["error"]["code"] == 400
            assert out["error"]["message"] == ('"auto" tool choice requires --enable-auto-tool-choice and '
                                               '--tool-call-parser to be set')
        status, _, out = await post(ep, body(choice=NAMED))
        assert status == 200 and calls(out) == ["book"]
        status, _, out = await post(ep, body(choice="required"))
        assert status == 200 and calls(out) == ["lookup"]  # the tool named in the user's message
        status, _, out = await post(ep, body(tools=None))
        assert status == 200 and out["choices"][0]["message"]["content"] == "OK"
        status, headers, text = await get(ep, ep.base_url + "/models")
        model = json.loads(text)["data"][0]
        assert headers["Server"] == "uvicorn"
        assert (model["owned_by"], model["root"], model["max_model_len"]) == ("vllm", "fake-model", 8192)


async def test_vllm_with_flags_calls_under_auto_and_refuses_an_oversized_prompt():
    async with FakeEndpoint(personality=make_personality("vllm", window=300)) as ep:
        status, _, out = await post(ep, body(choice="auto"))
        assert status == 200 and calls(out) == ["lookup"]
        after_tool = ASK + [{"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "found"}]
        status, _, out = await post(ep, body(after_tool, choice="auto"))
        assert status == 200 and calls(out) == [] and out["choices"][0]["message"]["content"] == "OK"
        status, _, out = await post(ep, body([{"role": "user", "content": "x" * 2000}], tools=None))
        assert status == 400 and "maximum context length is 300 tokens" in out["error"]["message"]
        assert "504 input tokens" in out["error"]["message"]
        status, _, out = await post(ep, body(tools=None, max_tokens=295))
        assert status == 400 and "'max_tokens' or 'max_completion_tokens' is too large: 295" in out["error"]["message"]


async def test_llama_cpp_python_chatml_hides_tools_without_tool_choice():
    async with FakeEndpoint(personality=make_personality("llama-cpp-python-chatml", window=500)) as ep:
        status, headers, out = await post(ep, body())
        assert status == 200 and calls(out) == [] and out["choices"][0]["message"]["content"] == "OK"
        assert headers["Server"] == "uvicorn" and "openai-processing-ms" in headers
        # the prompt the server counted has no tools in it
        assert out["usage"]["prompt_tokens"] == estimate_prompt_tokens(body(), with_tools=False)
        ep.push_reply({"content": None, "tool_calls": [{"name": "lookup", "arguments": {"q": "x"}}]})
        status, _, out = await post(ep, body())  # even a scripted call cannot happen: the model never saw tools
        assert status == 200 and calls(out) == []
        status, _, out = await post(ep, body(choice="auto"))
        assert status == 200 and calls(out) == ["lookup"]
        assert out["usage"]["prompt_tokens"] == estimate_prompt_tokens(body(), with_tools=True)
        status, _, out = await post(ep, body(choice=NAMED))
        tc = out["choices"][0]["message"]["tool_calls"][0]
        assert status == 200 and tc["id"].startswith("call__0_book_cmpl-")
        status, _, out = await post(ep, body(choice="required"))
        assert status == 500 and out["error"] == {"message": "", "type": "internal_server_error", "param": None,
                                                  "code": None}
        status, _, out = await post(ep, body([{"role": "user", "content": "y" * 4000}], tools=None, max_tokens=64))
        assert status == 400 and out["error"]["code"] == "context_length_exceeded"
        assert out["error"]["message"].startswith(
            "This model's maximum context length is 500 tokens. However, you requested 1068 tokens "
            "(1004 in the messages, 64 in the completion).")
        _, _, text = await get(ep, ep.base_url + "/models")
        assert json.loads(text)["data"][0] == {"id": "fake-model", "object": "model", "owned_by": "me",
                                               "permissions": []}


async def test_ollama_cuts_the_prompt_to_its_window_and_answers_200():
    async with FakeEndpoint(personality="ollama-small-window", api_key=None) as ep:
        short = body([{"role": "user", "content": "a" * 400}], tools=None)
        status, _, out = await post(ep, short)
        assert status == 200 and out["usage"]["prompt_tokens"] == 104
        status, _, out = await post(ep, body([{"role": "user", "content": "a" * 40000}], tools=None))
        assert status == 200 and out["usage"]["prompt_tokens"] == 2048  # stuck at the window
        status, _, out = await post(ep, body(choice="none"))  # Ollama ignores tool_choice
        assert status == 200 and calls(out) == ["lookup"]
        assert (await get(ep, ep.root_url + "/"))[2] == "Ollama is running"
        assert json.loads((await get(ep, ep.root_url + "/api/version"))[2]) == {"version": "0.6.2"}
        status, _, show = await post(ep, {"model": "fake-model"}, url=ep.root_url + "/api/show")
        assert status == 200 and "num_ctx" in show["parameters"] and "2048" in show["parameters"]
        assert show["model_info"]["llama.context_length"] == 131072
        status, _, missing = await post(ep, {"model": "nope"}, url=ep.root_url + "/api/show")
        assert status == 404 and "not found" in missing["error"]
        ps = json.loads((await get(ep, ep.root_url + "/api/ps"))[2])
        assert ps["models"][0]["context_length"] == 2048
        assert json.loads((await get(ep, ep.base_url + "/models"))[2])["data"][0]["owned_by"] == "library"


@pytest.mark.parametrize("name,status,kind", [("llama-cpp-overflow", 400, "exceed_context_size_error"),
                                              ("llama-cpp-overflow-old", 500, "server_error")])
async def test_llama_cpp_overflow_forms(name, status, kind):
    async with FakeEndpoint(personality=make_personality(name, window=256)) as ep:
        got, headers, out = await post(ep, body([{"role": "user", "content": "z" * 2000}], tools=None))
        assert got == status and out["error"]["type"] == kind and headers["Server"] == "llama.cpp"
        if status == 400:
            assert (out["error"]["n_prompt_tokens"], out["error"]["n_ctx"]) == (504, 256)
            assert "exceeds the available context size (256 tokens)" in out["error"]["message"]
        else:
            assert out["error"]["message"] == "Context size has been exceeded."
        got, _, out = await post(ep, body(choice="auto"))
        assert got == 200 and calls(out) == ["lookup"]
        status_p, headers, props = await get(ep, ep.root_url + "/props")
        assert status_p == 200 and json.loads(props)["default_generation_settings"]["n_ctx"] == 256
        assert headers["Server"] == "llama.cpp"
        model = json.loads((await get(ep, ep.base_url + "/models"))[2])["data"][0]
        assert model["owned_by"] == "llamacpp" and model["meta"]["n_ctx_train"] == 8192


async def test_llama_cpp_without_jinja_and_forced_tools_only():
    async with FakeEndpoint(personality="llama-cpp-no-jinja") as ep:
        status, _, out = await post(ep, body(choice=NAMED))
        assert status == 500 and out["error"]["message"] == "tools param requires --jinja flag"
        assert (await post(ep, body(tools=None)))[0] == 200
    async with FakeEndpoint(personality="forced-tools-only") as ep:
        assert calls((await post(ep, body(choice="auto")))[2]) == []
        assert calls((await post(ep, body()))[2]) == []
        assert calls((await post(ep, body(choice="required")))[2]) == ["lookup"]
        assert calls((await post(ep, body(choice=NAMED)))[2]) == ["book"]


def test_unknown_personality_is_refused_with_the_names():
    with pytest.raises(ValueError, match="unknown personality 'vllm-x'.*ollama-small-window"):
        FakeEndpoint(personality="vllm-x")
    assert set(PERSONALITIES) >= {"vllm-no-auto-tool-choice", "llama-cpp-python-chatml", "ollama-small-window",
                                  "llama-cpp-overflow", "llama-cpp-overflow-old", "forced-tools-only"}


def test_cli_serves_a_personality_with_its_window():
    proc = subprocess.Popen([sys.executable, "-m", "agentrig.testing.fake_endpoint", "--personality",
                             "llama-cpp-overflow", "--window", "1234", "--no-auth"],
                            stdout=subprocess.PIPE, text=True)
    try:
        base = proc.stdout.readline().strip()
        root = base.rsplit("/v1", 1)[0]
        with urllib.request.urlopen(root + "/props", timeout=10) as r:
            assert r.headers["Server"] == "llama.cpp"
            assert json.load(r)["default_generation_settings"]["n_ctx"] == 1234
    finally:
        proc.terminate()
        proc.wait(timeout=10)
