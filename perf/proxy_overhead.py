"""The measuring proxy's cost: CPU per call, and the first-byte latency it adds to a streamed answer.

Three processes, so that each cost is counted where it is paid:

- the endpoint: agentrig's fake OpenAI-compatible server (``python -m agentrig.testing.fake_endpoint``),
  answering at once (chat completions upstream; its default reply to a forced tool choice is a
  tool call);
- the proxy: a ``TrialProxy`` over a real ``Channel`` (this script with ``--serve``), whose process
  CPU time (``/proc/PID/stat``: user + system) is read before and after N calls;
- the agent: the real openai / anthropic SDK in this process, N calls one after another.

CPU per call: the proxy process's CPU over N calls / N, for each wire the agent speaks (streamed and
not), with a small request (2 messages) and a Codex-sized one (~40 KB: long instructions and ten
tool steps). Beside it, the same calls made by ``ctx.complete`` alone in a process of their own
(``--direct``: the channel and the trial's record, what a built-in agent pays too): the difference
is what the proxy itself adds (its HTTP server, the translation both ways, the answer).

First byte: the time from the SDK's request to its first streamed event (median), through the proxy
(agent → proxy → fake endpoint, the upstream call not streamed) and straight to an endpoint that
streams the agent's wire itself (agent → endpoint: the fake endpoint's own chat stream; for every
wire, ``--native``: a bare server answering the same tool call in that wire at once), the same SDK
call and request both ways, interleaved; the difference is the latency the proxy adds.

    .venv/bin/python perf/proxy_overhead.py [--calls 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import subprocess
import sys
import time

KEY_ENV = "AGENTRIG_BENCH_KEY"
KEY = "sk-bench-0123456789abcdef"
TICK = os.sysconf("SC_CLK_TCK")
BASH = {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}


def conversation(size: str) -> tuple[str, list[tuple[str, str, str]]]:
    """(instructions, steps of (command, output, id)) for a request of ``size``."""
    if size == "small":
        return "You are a terminal agent.", []
    text = "You are a terminal agent. Follow the rules below.\n" + "- keep commands short and check their output.\n" * 600
    return text, [(f"cat file_{i}.py", ("line of output " * 60) + str(i), f"call_{i}") for i in range(10)]


def chat_body(size: str) -> dict:
    system, steps = conversation(size)
    messages = [{"role": "system", "content": system}, {"role": "user", "content": "Fix the failing test."}]
    for cmd, out, cid in steps:
        messages.append({"role": "assistant", "content": "", "tool_calls": [
            {"id": cid, "type": "function", "function": {"name": "bash", "arguments": json.dumps({"command": cmd})}}]})
        messages.append({"role": "tool", "tool_call_id": cid, "content": out})
    return {"messages": messages, "tools": [{"type": "function", "function": {"name": "bash", "parameters": BASH}}],
            "tool_choice": "required"}


def responses_body(size: str) -> dict:
    system, steps = conversation(size)
    items: list[dict] = [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Fix the failing test."}]}]
    for cmd, out, cid in steps:
        items.append({"type": "function_call", "call_id": cid, "name": "bash", "arguments": json.dumps({"command": cmd})})
        items.append({"type": "function_call_output", "call_id": cid, "output": out})
    return {"instructions": system, "input": items, "tool_choice": "required", "store": False,
            "tools": [{"type": "function", "name": "bash", "parameters": BASH, "strict": False}]}


def anthropic_body(size: str) -> dict:
    system, steps = conversation(size)
    turns: list[dict] = [{"role": "user", "content": [{"type": "text", "text": "Fix the failing test."}]}]
    for cmd, out, cid in steps:
        turns.append({"role": "assistant", "content": [{"type": "tool_use", "id": cid, "name": "bash", "input": {"command": cmd}}]})
        turns.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": cid, "content": out}]})
    return {"system": [{"type": "text", "text": system}], "messages": turns, "max_tokens": 1024,
            "tool_choice": {"type": "any"}, "tools": [{"name": "bash", "input_schema": BASH}]}


# ------------------------------------------------------------------------------ the processes
def spawn(*args: str) -> tuple[subprocess.Popen, list[str]]:
    proc = subprocess.Popen([sys.executable, *args], stdout=subprocess.PIPE, stdin=subprocess.PIPE, text=True,
                            env={**os.environ, KEY_ENV: KEY})
    first = proc.stdout.readline().split()
    if not first:
        proc.kill()
        raise SystemExit(f"{args} did not start")
    return proc, first


def cpu_s(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime + stime


def make_ctx(base_url: str):
    from agentrig.channel.client import Channel
    from agentrig.config import ChannelConfig, ChannelSettings
    from agentrig.trial.context import TrialContext
    from agentrig.types import TrialKey

    cfg = ChannelConfig(channel=ChannelSettings(base_url=base_url, api_key_env=KEY_ENV, model="fake-model", timeout_s=30))
    channel = Channel(cfg, env={KEY_ENV: KEY})
    return TrialContext(key=TrialKey(arm="bench", domain="terminal", task_id="t", trial=0), task=None, seed=1,
                        channel=channel)


def serve(base_url: str) -> None:
    """--serve: a TrialProxy until stdin closes; first line: its base URL and token."""
    from agentrig.agents.proxy import TrialProxy

    async def run() -> None:
        proxy = TrialProxy(make_ctx(base_url))
        print(await proxy.start(), proxy.token, flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
        await proxy.close()

    asyncio.run(run())


def native() -> None:
    """--native: an endpoint that speaks each wire itself and streams a fixed tool call at once (the
    proxy's answer writers, no upstream): what the agent would get from a server of its own wire."""
    from aiohttp import web

    from agentrig.agents.proxy import anthropic_out, openai_out
    from agentrig.types import AssistantMessage, Completion, ToolCall, Usage

    done = Completion(role="agent", model="fake-model", finish_reason="tool_calls", usage=Usage(prompt_tokens=10, completion_tokens=5),
                      message=AssistantMessage(tool_calls=[ToolCall(id="call_1", name="bash", arguments={"command": "ls"},
                                                                    arguments_raw='{"command": "ls"}')]))

    def answer(wire: str):
        async def handle(request: web.Request) -> web.StreamResponse:
            body = json.loads(await request.read())
            if wire == "chat":
                events = openai_out.chat_events(done, "fake-model", "chatcmpl-1", False)
            elif wire == "responses":
                events = openai_out.responses_events(done, "fake-model", "resp_1", frozenset())
            else:
                events = anthropic_out.message_events(done, "fake-model", "msg_1")
            if not body.get("stream"):
                return web.Response(status=400)
            resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
            await resp.prepare(request)
            await resp.write(b"".join(events))
            await resp.write_eof()
            return resp
        return handle

    async def run() -> None:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        for path, wire in (("/v1/chat/completions", "chat"), ("/v1/responses", "responses"), ("/v1/messages", "anthropic")):
            app.router.add_post(path, answer(wire))
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        print(f"http://127.0.0.1:{port}", flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
        await runner.cleanup()

    asyncio.run(run())


def direct(base_url: str) -> None:
    """--direct: on each stdin line ``SIZE N``, N calls with ctx.complete; prints the CPU seconds."""
    async def run() -> None:
        ctx = make_ctx(base_url)
        print("ready", flush=True)
        loop = asyncio.get_running_loop()
        while line := await loop.run_in_executor(None, sys.stdin.readline):
            size, n = line.split()
            body = chat_body(size)
            for _ in range(20):  # warm up
                await ctx.complete("agent", body["messages"], body["tools"], purpose="agent", tool_choice="required")
            t0 = time.process_time()
            for _ in range(int(n)):
                ctx.trajectory.model_calls.clear()
                await ctx.complete("agent", body["messages"], body["tools"], purpose="agent", tool_choice="required")
            print(time.process_time() - t0, flush=True)

    asyncio.run(run())


# ------------------------------------------------------------------------------ the agent
async def one_call(wire: str, stream: bool, base: str, token: str, body: dict, clients: dict) -> float:
    """One call as the agent makes it; returns the seconds to the first streamed event (or the answer)."""
    t0 = time.perf_counter()
    if wire == "anthropic":
        if stream:
            async with clients["a"].messages.stream(model="m", **body) as s:
                async for _ in s:
                    first = time.perf_counter() - t0
                    break
                await s.get_final_message()
            return first
        await clients["a"].messages.create(model="m", **body)
    elif wire == "responses":
        if stream:
            first = None
            async for _ in await clients["o"].responses.create(model="m", stream=True, **body):
                first = first or time.perf_counter() - t0
            return first
        await clients["o"].responses.create(model="m", **body)
    else:
        if stream:
            first = None
            async for _ in await clients["o"].chat.completions.create(model="fake-model", stream=True, **body):
                first = first or time.perf_counter() - t0
            return first
        await clients["o"].chat.completions.create(model="fake-model", **body)
    return time.perf_counter() - t0


def clients_for(base: str, token: str) -> dict:
    import anthropic
    import openai

    return {"o": openai.AsyncOpenAI(base_url=base + "/v1", api_key=token, max_retries=0, timeout=30),
            "a": anthropic.AsyncAnthropic(base_url=base, api_key=token, max_retries=0, timeout=30)}


BODIES = {"chat": chat_body, "responses": responses_body, "anthropic": anthropic_body}


async def agent(fake_url: str, native_url: str, proxy_pid: int, base: str, token: str, direct_proc: subprocess.Popen,
                calls: int, only: str | None) -> None:
    clients = clients_for(base, token)
    fake, native = clients_for(fake_url.removesuffix("/v1"), KEY), clients_for(native_url, "none")
    if only != "latency":
        await cpu_rows(proxy_pid, base, token, direct_proc, calls, clients)
    if only != "cpu":
        await latency_rows(base, token, calls, clients, fake, native)
    for group in (clients, fake, native):
        for client in group.values():
            await client.close()


async def cpu_rows(proxy_pid: int, base: str, token: str, direct_proc: subprocess.Popen, calls: int, clients: dict) -> None:
    print("\nCPU per call (the proxy's process: server, translation, channel, trial record):")
    print("| request | agent's wire | streamed | proxy process CPU/call | ctx.complete alone | the proxy's own |")
    print("|---|---|---|---:|---:|---:|")
    for size in ("small", "large"):
        direct_proc.stdin.write(f"{size} {calls}\n")
        direct_proc.stdin.flush()
        alone = float(direct_proc.stdout.readline()) / calls
        for wire in ("chat", "responses", "anthropic"):
            for stream in (False, True):
                body = BODIES[wire](size)
                for _ in range(20):  # warm up
                    await one_call(wire, stream, base, token, body, clients)
                c0 = cpu_s(proxy_pid)
                for _ in range(calls):
                    await one_call(wire, stream, base, token, body, clients)
                per = (cpu_s(proxy_pid) - c0) / calls
                kb = len(json.dumps(body)) / 1024
                print(f"| {size} ({kb:.0f} KB) | {wire} | {'yes' if stream else 'no'} | {per * 1e3:.2f} ms | "
                      f"{alone * 1e3:.2f} ms | {(per - alone) * 1e3:.2f} ms |", flush=True)


async def latency_rows(base: str, token: str, calls: int, clients: dict, fake: dict, native: dict) -> None:
    print("\nFirst byte of a streamed answer (median of %d): the same SDK call and request, straight to an endpoint "
          "that speaks the agent's wire and streams at once, and through the proxy (to the fake endpoint, not streamed)" % n_first(calls))
    print("| agent's wire | request | agent → endpoint | agent → proxy → endpoint | added |")
    print("|---|---|---:|---:|---:|")
    for size in ("small", "large"):
        for wire, straight in (("chat", fake), ("chat", native), ("responses", native), ("anthropic", native)):
            body = BODIES[wire](size)
            for _ in range(20):
                await one_call(wire, True, "", "", body, straight)
                await one_call(wire, True, base, token, body, clients)
            ref, via = [], []
            for _ in range(n_first(calls)):  # interleaved, so that a busy moment of the machine hits both
                ref.append(await one_call(wire, True, "", "", body, straight))
                via.append(await one_call(wire, True, base, token, body, clients))
            ref_s, via_s = statistics.median(ref), statistics.median(via)
            name = f"{wire} (fake endpoint)" if straight is fake else wire
            print(f"| {name} | {size} | {ref_s * 1e3:.2f} ms | {via_s * 1e3:.2f} ms | {(via_s - ref_s) * 1e3:.2f} ms |", flush=True)


def n_first(calls: int) -> int:
    return max(100, calls // 2)


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] in ("--serve", "--direct"):
        (serve if sys.argv[1] == "--serve" else direct)(sys.argv[2])
        return
    if sys.argv[1:] == ["--native"]:
        native()
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=1000)
    ap.add_argument("--only", choices=("cpu", "latency"), help="measure one of the two")
    args = ap.parse_args()
    import anthropic
    import openai

    endpoint_proc, (endpoint,) = spawn("-m", "agentrig.testing.fake_endpoint", "--api-key-env", KEY_ENV, "--no-record")
    proxy_proc, (base, token) = spawn(__file__, "--serve", endpoint)
    direct_proc, _ = spawn(__file__, "--direct", endpoint)
    native_proc, (native_url,) = spawn(__file__, "--native")
    try:
        print(f"machine: {platform.machine()}, {os.cpu_count()} cores, {platform.processor() or '?'}, "
              f"Python {platform.python_version()}, openai {openai.__version__}, anthropic {anthropic.__version__}; "
              f"{args.calls} calls per row")
        asyncio.run(agent(endpoint, native_url, proxy_proc.pid, base, token, direct_proc, args.calls, args.only))
    finally:
        for proc in (native_proc, direct_proc, proxy_proc, endpoint_proc):
            proc.stdin.close()
            proc.terminate()
            proc.wait(timeout=10)


if __name__ == "__main__":
    main()
