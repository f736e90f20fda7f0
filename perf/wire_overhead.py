"""The channel's client-side cost per call in each wire format (chat, responses, anthropic).

The endpoint is agentrig's fake server in a separate process (it answers the three wires from
the same chat logic, instantly), so what differs is client-side: for ``responses`` and
``anthropic``, the conversion of a chat-style conversation to the wire's request and of its reply
back, and each SDK's own request building (the chat wire posts a pre-serialized body). Each call
sends a 12-message conversation with 14 tools, like an agent step mid-trial. Rounds alternate
between wires; the median calls/s of each and its CPU ms per call are printed.

    .venv/bin/python perf/wire_overhead.py [--calls 600] [--rounds 3] [--concurrency 16]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import resource
import statistics
import subprocess
import sys
import time

from agentrig.channel import Channel
from agentrig.channel.doctor.checks import REPRESENTATIVE_TOOLS
from agentrig.config import ChannelConfig

KEY_ENV = "AGENTRIG_BENCH_KEY"
KEY = "sk-bench-0123456789abcdef"
WIRES = ("chat", "responses", "anthropic")


def conversation() -> list[dict]:
    msgs: list[dict] = [{"role": "system", "content": "You are a customer service agent. " * 40},
                        {"role": "assistant", "content": "Hi! How can I help you today?"},
                        {"role": "user", "content": "I want to return an item from my last order."}]
    for i in range(4):
        call = {"id": f"call_{i}", "type": "function", "function": {"name": "get_order_details",
                                                                    "arguments": f'{{"order_id": "#W{i}"}}'}}
        msgs += [{"role": "assistant", "content": None, "tool_calls": [call]},
                 {"role": "tool", "tool_call_id": f"call_{i}", "content": '{"status": "delivered", "items": []}' * 5}]
    msgs.append({"role": "user", "content": "Yes, please go ahead."})
    return msgs


def start_server() -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-m", "agentrig.testing.fake_endpoint", "--api-key-env", KEY_ENV,
                             "--no-record"], stdout=subprocess.PIPE, text=True, env={**os.environ, KEY_ENV: KEY})
    base_url = proc.stdout.readline().strip()
    if not base_url.startswith("http"):
        proc.kill()
        raise SystemExit(f"the fake endpoint did not start (printed {base_url!r})")
    return proc, base_url


async def one_round(base_url: str, wire: str, calls: int, concurrency: int) -> tuple[float, float]:
    cfg = ChannelConfig.model_validate({"channel": {"base_url": base_url, "api_key_env": KEY_ENV, "model": "fake-model",
                                                    "wire": wire, "max_concurrency": concurrency}})
    msgs = conversation()
    remaining = calls
    async with Channel(cfg, env={KEY_ENV: KEY}) as ch:
        await ch.complete("agent", msgs, REPRESENTATIVE_TOOLS)  # warm: connections, SDK imports

        async def worker() -> None:
            nonlocal remaining
            while remaining > 0:
                remaining -= 1
                await ch.complete("agent", msgs, REPRESENTATIVE_TOOLS)

        cpu0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        wall, cpu1 = time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_SELF)
    cpu = (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)
    return calls / wall, 1000 * cpu / calls


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=600)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--concurrency", type=int, default=16)
    args = ap.parse_args()
    proc, base_url = start_server()
    try:
        got: dict[str, list[tuple[float, float]]] = {w: [] for w in WIRES}
        for _ in range(args.rounds):
            for wire in WIRES:
                got[wire].append(asyncio.run(one_round(base_url, wire, args.calls, args.concurrency)))
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    print(f"python {platform.python_version()}, {os.cpu_count()} cores; {args.calls} calls x {args.rounds} rounds, "
          f"concurrency {args.concurrency}; 12 messages + 14 tools per call")
    base = statistics.median(r for r, _ in got["chat"])
    for wire in WIRES:
        rate = statistics.median(r for r, _ in got[wire])
        cpu = statistics.median(c for _, c in got[wire])
        print(f"  {wire:10s} {rate:8.0f} calls/s  {cpu:6.2f} ms CPU/call (client)  {rate / base:5.2f}x chat")


if __name__ == "__main__":
    main()
