"""``agentrig demo``: a complete run on any machine, without a key, a network or data files.

1. The offline run: the built-in bikeshop domain, three reference agents (gold, flaky-gold, noop)
   and the scripted user, 4 trials per task, stored in a run directory and summarised
   (pass^1, pass^4 and the consistency gap). The experiment is ``commands/demo.toml`` (also shipped as
   ``examples/demo.toml``).
2. The same tasks through the channel: an LLM agent, an LLM user simulator and an NL judge on a
   local OpenAI-compatible endpoint that scripts the gold conversation (τ²'s scripted endpoint,
   reached through the seam), with 15% of the requests failing (429, 500, malformed bodies) —
   every fault retried and counted, no trial lost to it.
3./4. Terminal tasks (``commands/demo_terminal.py``): built-in tasks in the bwrap sandbox with the reference
   agents, then the LLM bash agent in both tool modes through the channel on a local endpoint that
   scripts each task's solution, with faults; its own HTML report.
5. The usual mistakes with a real endpoint, diagnosed before a run (``agentrig doctor``).

It ends by telling how to run a real model.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import shutil
import sys
from importlib import resources
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from agentrig.benchmark import get_benchmark
from agentrig.channel.doctor.diagnose import diagnose
from agentrig.config import ChannelConfig, ChannelSettings
from agentrig.commands.run import run_command
from agentrig.store.owner import claim, make_dir
from agentrig.testing.fake_endpoint import FakeEndpoint, ThreadedFakeEndpoint

KEY_ENV = "AGENTRIG_DEMO_KEY"
DEMO_NAMES = ("demo", "demo-llm", "demo-terminal", "demo-terminal-llm")

LLM_EXPERIMENT = """\
# Written by `agentrig demo`: an LLM agent, an LLM user and an NL judge, all through the channel,
# on a local endpoint that scripts the gold conversation and fails 15% of the requests.
name = "demo-llm"

[benchmark]
domains = ["bikeshop"]

[run]
trials = 2
seed = 2026
concurrency = 8

[user]
kind = "llm"
guidelines = "builtin"

[channel]
base_url = "{base_url}"
api_key_env = "{key_env}"
model = "gold"
max_attempts = 8
backoff_base_s = 0.02
backoff_max_s = 0.2

[[arms]]
name = "llm"
agent = {{ kind = "llm" }}
"""


def demo_experiment() -> str:
    return resources.files("agentrig.commands").joinpath("demo.toml").read_text(encoding="utf-8")


def _fresh(run_dir: Path) -> None:
    """Remove a previous demo run (only one this command wrote), so the demo starts over."""
    cfg = run_dir / "config.json"
    if not run_dir.exists():
        return
    try:
        name = json.loads(cfg.read_text(encoding="utf-8"))["experiment"]["name"]
    except (OSError, ValueError, KeyError, TypeError):
        name = None
    if name not in DEMO_NAMES:
        raise SystemExit(f"{run_dir} exists and is not a demo run; pass another --dir")
    with claim(run_dir, "agentrig demo"):  # never from under a demo playing there now (store/owner.py)
        shutil.rmtree(run_dir)


def _role(base_url: str, model: str = "fake-model"):
    return ChannelConfig(channel=ChannelSettings(base_url=base_url, api_key_env=KEY_ENV, model=model, timeout_s=5,
                                                 backoff_base_s=0.05)).resolve("agent", env={})


async def _mistakes(console: Console) -> None:
    key = "sk-demo-" + secrets.token_hex(12)
    env = {KEY_ENV: key}
    async with FakeEndpoint(api_key=key) as fake:
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


def command_name() -> str:
    """How to call agentrig from here: ``agentrig`` when it is on PATH, else the venv's script (after
    ``make demo`` it is ``.venv/bin/agentrig``, not on PATH)."""
    if shutil.which("agentrig"):
        return "agentrig"
    script = Path(sys.argv[0]).resolve() if sys.argv and sys.argv[0] else None
    if script is None or script.name != "agentrig":
        script = Path(sys.executable).with_name("agentrig")
    try:
        return os.path.relpath(script)
    except ValueError:
        return str(script)


def run_demo(console: Console, base_dir: Path | None = None) -> int:
    if not console.is_terminal:  # a log or a pipe: wide enough for the summary tables, no hard wraps
        console = Console(width=110, soft_wrap=True, highlight=False)
    base = make_dir(Path(base_dir or "runs").resolve(), what="directory",  # a file there: one message (store/owner.py)
                    fix="give another --dir, or move that file away")
    console.rule("[bold]agentrig demo[/]")
    from agentrig.commands.demo_terminal import start_probe

    probe = start_probe()  # the terminal section's sandbox check, while sections 1 and 2 play
    console.print("[bold]1. An offline run[/]: the built-in bikeshop domain (16 tasks), three reference agents "
                  "and a scripted user, 4 trials per task.\n"
                  "   gold never fails; flaky-gold drops a state-changing action with probability 0.3; "
                  "noop never acts.", highlight=False)
    exp_file = base / "demo.toml"
    exp_file.write_text(demo_experiment(), encoding="utf-8")
    run_dir = base / "demo"
    _fresh(run_dir)
    code = run_command(exp_file, run_dir=run_dir, out=console)
    if code:
        return code
    console.print("   pass^4 is the share of tasks an arm gets right in all 4 trials: flaky-gold looks fine once "
                  "(pass^1) and much worse every time (pass^4);\n   the gap between its mean success and pass^4 "
                  "is what a single run hides.\n", highlight=False)

    console.print("[bold]2. The same tasks through the channel[/]: an LLM agent, an LLM user simulator and an NL judge "
                  "on a local OpenAI-compatible endpoint\n   that scripts the gold conversation and answers 15% of the "
                  "requests with 429, 500 or a malformed body.", highlight=False)
    key = "sk-demo-" + secrets.token_hex(16)
    os.environ[KEY_ENV] = key
    gold = get_benchmark("tau2").scripted_endpoint(api_key=key, fault_rate=0.15,  # the gold endpoint
                                                   fault_kinds=("rate_limit", "server_error", "malformed"), seed=2026)
    with ThreadedFakeEndpoint(endpoint=gold) as served:
        llm_file = base / "demo-llm.toml"
        llm_file.write_text(LLM_EXPERIMENT.format(base_url=served.base_url, key_env=KEY_ENV), encoding="utf-8")
        llm_dir = base / "demo-llm"
        _fresh(llm_dir)
        code = run_command(llm_file, run_dir=llm_dir, out=console)
    if code:
        return code
    console.print("   Every fault was retried by the channel and counted (retries column); none became an agent "
                  "failure.\n", highlight=False)

    from agentrig.report import write_report

    report = write_report([run_dir, llm_dir], base / "report.html")
    console.print(f"[bold]The HTML report[/] of both runs (pass^k curves, outcome grid, failures, A/B, trajectories):\n"
                  f"   {report}\n", highlight=False)

    from agentrig.commands.demo_terminal import run_terminal_section

    code, terminal_dirs = run_terminal_section(console, base, _fresh, KEY_ENV, key, probe=probe)
    if code:
        return code
    if terminal_dirs:
        terminal_report = write_report(terminal_dirs, base / "report-terminal.html")
        console.print(f"[bold]The HTML report[/] of the terminal runs (commands and outputs in the trajectory viewer):\n"
                      f"   {terminal_report}\n", highlight=False)

    console.print("[bold]5. The usual mistakes with a real endpoint, diagnosed before a run[/] (agentrig doctor)")
    asyncio.run(_mistakes(console))

    console.rule()
    cmd = command_name()
    console.print(
        f"The runs are stored in {base} (trajectories, model calls, verdicts). Look closer with\n"
        f"  {cmd} analyze {run_dir}                      # pass^k with CIs, forks, failure classes\n"
        f"  {cmd} compare {run_dir}:gold {run_dir}:flaky-gold   # paired A/B\n"
        f"  {cmd} export {run_dir} --format tau2 --arm flaky-gold\n\n"
        "Run a real model on τ²-bench:\n"
        "  export OPENAI_API_KEY=...                        # or any OpenAI-compatible endpoint: see docs/channel.md\n"
        f"  {cmd} data pull tau2 --dest ~/tau2-data && export AGENTRIG_TAU2_DATA=~/tau2-data\n"
        f"  {cmd} doctor --config examples/airline.toml    # key, URL, model, tool calling\n"
        f"  {cmd} run examples/airline.toml --smoke        # one task per arm, every role exercised\n"
        f"  {cmd} run examples/airline.toml                # Ctrl-C stops cleanly; the same command resumes\n"
        "A bash agent on terminal tasks (built-in, Terminal-Bench or Harbor): see docs/terminal.md",
        highlight=False,
    )
    return 0
