"""The terminal section of ``agentrig demo``: built-in terminal tasks in a sandbox, then a bash agent.

1. The reference agents (oracle, flaky-oracle, noop) on a few built-in terminal tasks, 3 trials
   each, in the bwrap sandbox: pass^1, pass^2 and the consistency gap, as for τ² tasks.
2. The LLM bash agent through the channel, in both tool modes (``native``: a ``bash`` tool call;
   ``text``: one fenced action block per reply), on a local endpoint that scripts each task's
   solution (the terminal benchmark's scripted endpoint) and fails 20% of the requests (500s and
   malformed bodies): every fault is retried and counted, every trial stays valid.

The benchmark decides where the section plays (``demo_setup`` through the seam; its part is
``bench/terminal/demo.py``): the bwrap sandbox when it works here, else the ``local`` sandbox (as
root, with its warning that nothing is isolated), else the section is skipped with a sentence
saying why. This module only prints and plays. The sizes below keep the section a few seconds long
(docs/performance.md): two tasks whose tests are cheap to run (a TB1 pytest task, which the warm
verifier plays, and a Harbor task graded by a shell script), and the benchmark's probe
(``start_probe``) runs in a thread while the τ² sections play, starting the warm verifier when
bwrap works.
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Callable

from rich.console import Console

from agentrig.benchmark import DemoSetup, get_benchmark

KIND = "terminal"

DEMO_TERMINAL_NAMES = ("demo-terminal", "demo-terminal-llm")
TASK_IDS = ("stale-lock", "harbor-backup-archive")  # a Terminal-Bench 1 task and a Harbor task
TRIALS = 2
LLM_TRIALS = 2  # as many as the reference run: the report pairs the two runs in a controlled A/B

_TASKS = "task_ids = [" + ", ".join(f'"{t}"' for t in TASK_IDS) + "]"

REFERENCE_EXPERIMENT = f"""\
# Written by `agentrig demo`: the reference agents on built-in terminal tasks.
name = "demo-terminal"

[benchmark]
kind = "terminal"
{_TASKS}

[sandbox]
kind = "{{sandbox}}"
root = "{{root}}"

[run]
trials = {TRIALS}
seed = 5  # flaky-oracle drops the Harbor solution in one of its 2 trials: pass^2 < pass^1 < 1
concurrency = 4

[[arms]]
name = "oracle"
agent = {{{{ kind = "oracle" }}}}

[[arms]]
name = "flaky-oracle"
agent = {{{{ kind = "flaky-oracle", drop_p = 0.4 }}}}

[[arms]]
name = "noop"
agent = {{{{ kind = "noop" }}}}
"""

LLM_EXPERIMENT = f"""\
# Written by `agentrig demo`: the LLM bash agent through the channel, in both tool modes, on a
# local endpoint that scripts each task's solution and fails 20% of the requests (500, malformed).
name = "demo-terminal-llm"

[benchmark]
kind = "terminal"
{_TASKS}

[sandbox]
kind = "{{sandbox}}"
root = "{{root}}"

[run]
trials = {LLM_TRIALS}
seed = 2026
concurrency = 4

[channel]
base_url = "{{base_url}}"
api_key_env = "{{key_env}}"
model = "solution"
max_attempts = 8
backoff_base_s = 0.02
backoff_max_s = 0.2

[[arms]]
name = "bash-native"
agent = {{{{ kind = "bash", tool_mode = "native" }}}}

[[arms]]
name = "bash-text"
agent = {{{{ kind = "bash", tool_mode = "text" }}}}
"""


def _setup() -> DemoSetup:
    return get_benchmark(KIND).demo_setup()


def start_probe() -> Future:
    """The benchmark's ``demo_setup`` in a thread, started before the τ² sections (its bwrap start and
    the warm verifier's start then overlap them); ``run_terminal_section(probe=...)`` takes the answer."""
    pool = ThreadPoolExecutor(1, thread_name_prefix="agentrig-demo-probe")
    try:
        return pool.submit(_setup)
    finally:
        pool.shutdown(wait=False)


def run_terminal_section(console: Console, base: Path, fresh: Callable[[Path], None], key_env: str,
                         key: str, probe: Future | None = None) -> tuple[int, list[Path]]:
    """Play both terminal runs; (exit code, the run directories played)."""
    from agentrig.commands.run import run_command
    from agentrig.testing.fake_endpoint import ThreadedFakeEndpoint

    setup = probe.result() if probe is not None else _setup()
    console.print(f"[bold]3. Terminal tasks[/]: {len(TASK_IDS)} built-in tasks (an instruction, a shell, hidden tests), "
                  f"the reference agents, {TRIALS} trials per task.\n"
                  "   oracle plays the task's solution; flaky-oracle skips a solution step with probability 0.4; "
                  "noop submits at once.", highlight=False)
    if setup.skip is not None:
        console.print(f"   [yellow]skipped[/]: {setup.skip}\n", highlight=False)
        return 0, []
    for warning in setup.warnings:
        console.print(f"   [yellow]{warning}[/]", highlight=False)
    kind = setup.values["sandbox"]
    ref_file = base / "demo-terminal.toml"
    ref_file.write_text(REFERENCE_EXPERIMENT.format(**setup.values), encoding="utf-8")
    ref_dir = base / "demo-terminal"
    fresh(ref_dir)
    code = run_command(ref_file, run_dir=ref_dir, out=console)
    if code:
        return code, []
    console.print(f"   Each trial ran in its own {kind} sandbox; the tests were copied in only after the agent "
                  "phase.\n", highlight=False)

    console.print("[bold]4. The LLM bash agent through the channel[/], in both tool modes (a bash tool call; one "
                  "fenced action block per reply),\n   on a local endpoint that scripts each task's solution "
                  "and answers 20% of the requests with a 500 or a malformed body.", highlight=False)
    # no 429 here: its Retry-After (1 s, honoured; section 2 shows it) would be most of this section's time
    endpoint = get_benchmark(KIND).scripted_endpoint(api_key=key, fault_rate=0.2, seed=2026,
                                                     fault_kinds=("server_error", "malformed"))
    with ThreadedFakeEndpoint(endpoint=endpoint) as served:
        llm_file = base / "demo-terminal-llm.toml"
        llm_file.write_text(LLM_EXPERIMENT.format(**setup.values, base_url=served.base_url, key_env=key_env),
                            encoding="utf-8")
        llm_dir = base / "demo-terminal-llm"
        fresh(llm_dir)
        code = run_command(llm_file, run_dir=llm_dir, out=console)
    if code:
        return code, [ref_dir]
    console.print("   Every fault was retried and counted (retries column); every trial is valid and solved.\n",
                  highlight=False)
    return 0, [ref_dir, llm_dir]
