"""``agentrig demo``: what agentrig does, offline and without a key, on any machine.

For now it shows the channel and the doctor against a local OpenAI-compatible server (agentrig's
own fake endpoint on 127.0.0.1): a healthy check, the usual mistakes diagnosed, and transient
faults retried and counted. The full demo run (built-in domain, k trials, report) follows.
"""

from __future__ import annotations

import asyncio
import secrets

from rich.console import Console
from rich.markup import escape

from .channel import Channel
from .channel.diagnose import diagnose
from .config import ChannelConfig, ChannelSettings
from .report_console import print_doctor
from .channel.diagnose import DoctorReport
from .testing.fake_endpoint import Fault, FakeEndpoint

KEY_ENV = "AGENTRIG_DEMO_KEY"


def _role(base_url: str, model: str = "fake-model"):
    return ChannelConfig(channel=ChannelSettings(base_url=base_url, api_key_env=KEY_ENV, model=model, timeout_s=5,
                                                 backoff_base_s=0.05)).resolve("agent", env={})


async def _demo(console: Console) -> int:
    key = "sk-demo-" + secrets.token_hex(12)
    env = {KEY_ENV: key}
    async with FakeEndpoint(api_key=key) as fake:
        console.rule("[bold]agentrig demo[/]")
        console.print(f"A local OpenAI-compatible server is running at {fake.base_url} (no network, no real key).\n")
        console.print("[bold]1. agentrig doctor on a healthy endpoint[/]")
        healthy = await diagnose(_role(fake.base_url), ["agent", "user"], env)
        print_doctor(DoctorReport(ok=healthy.ok, endpoints=[healthy]), console)

        console.print("\n[bold]2. The usual mistakes, diagnosed before a run[/]")
        cases = [
            ("a doubled /v1 in the base URL", _role(fake.base_url + "/v1"), env),
            ("a wrong key", _role(fake.base_url), {KEY_ENV: "sk-wrong-" + secrets.token_hex(12)}),
            ("a key with a trailing newline", _role(fake.base_url), {KEY_ENV: key + "\n"}),
            ("a model id the endpoint does not serve", _role(fake.base_url, "fake-model-large"), env),
        ]
        for label, rr, case_env in cases:
            rep = await diagnose(rr, ["agent"], case_env)
            bad = next(c for c in rep.checks if c.status == "fail")
            console.print(f"  [red]✗[/] {label}: [bold]{bad.code}[/] — {escape(bad.message)}", highlight=False)
            console.print(f"      [dim]fix:[/] {escape(bad.fix or '')}", highlight=False)

        console.print("\n[bold]3. Transient faults during a run are retried and counted, not blamed on the agent[/]")
        fake.push(Fault("rate_limit", retry_after_ms=200), Fault("server_error", status=503), "malformed")
        cfg = ChannelConfig(channel=ChannelSettings(base_url=fake.base_url, api_key_env=KEY_ENV, model="fake-model",
                                                    backoff_base_s=0.05))
        async with Channel(cfg, env=env) as ch:
            c = await ch.complete("agent", [{"role": "user", "content": "Say OK."}])
        causes = ", ".join(a.cause for a in c.attempts if a.cause)
        console.print(f"  answer {c.message.content!r} after {len(c.attempts)} attempts (retried: {causes}); "
                      f"{c.latency_s * 1000:.0f} ms in all")

    console.rule()
    console.print(
        "Also here now: the τ²-bench engine (airline, retail, telecom, mock) and a built-in domain, e.g.\n"
        "  agentrig tasks replay-gold --domain bikeshop     agentrig audit --domain bikeshop\n"
        "Coming next: resumable runs of k trials per task with a model-driven agent and user simulator,\n"
        "then pass^k, A/B comparison and the HTML report.\n\n"
        "Check a real endpoint now:\n"
        "  export OPENAI_API_KEY=...\n"
        "  agentrig doctor --base-url https://api.openai.com/v1 --model gpt-4.1-mini",
        highlight=False,
    )
    return 0


def run_demo(console: Console) -> int:
    return asyncio.run(_demo(console))
