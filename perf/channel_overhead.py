"""The channel's own overhead per call, next to a bare openai SDK loop on the same endpoint.

The endpoint is agentrig's fake OpenAI-compatible server in a separate process, answering
instantly, so what is measured is client-side cost: the SDK and httpx for both, plus for the
channel its retry loop, semaphore, header building, defensive parsing and usage accounting.
Rounds alternate (bare, channel, bare, channel, ...) and the median of each is reported.

    .venv/bin/python perf/channel_overhead.py [--calls 3000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import subprocess
import sys
import time

import openai

from agentrig.channel import Channel
from agentrig.config import ChannelConfig, ChannelSettings

KEY_ENV = "AGENTRIG_BENCH_KEY"
KEY = "sk-bench-0123456789abcdef"
MESSAGES = [{"role": "system", "content": "You are a helpful agent."}, {"role": "user", "content": "Say OK."}]


def start_server() -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentrig.testing.fake_endpoint", "--api-key-env", KEY_ENV, "--no-record"],
        stdout=subprocess.PIPE, text=True, env={**os.environ, KEY_ENV: KEY},
    )
    base_url = proc.stdout.readline().strip()
    if not base_url.startswith("http"):
        proc.kill()
        raise SystemExit(f"the fake endpoint did not start (printed {base_url!r})")
    return proc, base_url


async def drive(call, calls: int, concurrency: int) -> float:
    remaining = calls

    async def worker():
        nonlocal remaining
        while remaining > 0:
            remaining -= 1
            await call()

    t0 = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return calls / (time.perf_counter() - t0)


async def measure(base_url: str, concurrency: int, calls: int, rounds: int) -> tuple[float, float]:
    bare = openai.AsyncOpenAI(api_key=KEY, base_url=base_url, max_retries=0, timeout=30)
    cfg = ChannelConfig(channel=ChannelSettings(base_url=base_url, api_key_env=KEY_ENV, model="fake-model",
                                                max_concurrency=concurrency, timeout_s=30))
    channel = Channel(cfg, env={KEY_ENV: KEY})

    async def bare_call():
        r = await bare.chat.completions.create(model="fake-model", messages=MESSAGES)
        assert r.choices[0].message.content == "OK"

    async def channel_call():
        c = await channel.complete("agent", MESSAGES)
        assert c.message.content == "OK"

    await drive(bare_call, 200, concurrency)  # warm up both
    await drive(channel_call, 200, concurrency)
    b, c = [], []
    for _ in range(rounds):
        b.append(await drive(bare_call, calls, concurrency))
        c.append(await drive(channel_call, calls, concurrency))
    await bare.close()
    await channel.aclose()
    return statistics.median(b), statistics.median(c)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=3000)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    proc, base_url = start_server()
    try:
        print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
              f"openai {openai.__version__}")
        print("| concurrency | bare SDK calls/s | channel calls/s | channel / bare |")
        print("|---:|---:|---:|---:|")
        for conc in (1, 64):
            b, c = asyncio.run(measure(base_url, conc, args.calls, args.rounds))
            print(f"| {conc} | {b:,.0f} | {c:,.0f} | {c / b:.2f} |", flush=True)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


if __name__ == "__main__":
    main()
