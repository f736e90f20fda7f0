"""Ctrl-C on a terminal run (issue 31, item 1): SIGINT to `agentrig run`'s process group — as a
terminal sends it, so the sandboxes' own processes in the group get it too — while the task's
layer is being built, while the agent's command runs, while the tests run, and right as a trial
is stored; fresh runs and resumed ones. Every time: exit 130 within the deadline, no trial made
after the signal stored, no invalid attempt (a sandbox killed by the same Ctrl-C is the
interruption's, never a stored "sandbox: the sandbox is not running").

The task sleeps in each phase, its sleeps named by a token the test finds in the process table;
the bash agent is the solution endpoint (its own process), the sandbox bwrap on the host's root.
"""

from __future__ import annotations

import os
import random
import shutil
from pathlib import Path

import pytest

from tests.interrupt_support import assert_clean_stop, interrupt, rows, when_running, when_stored
from tests.support import EndpointProcess

from .run_support import experiment, write_task
from .sandbox_support import needs_root_bwrap

pytestmark = needs_root_bwrap()

TIMES = 20


def _task(root: Path, token: str) -> Path:
    return write_task(
        root, "slow-phases",
        dockerfile=f"FROM ubuntu:24.04\nWORKDIR /app\nRUN sh -c 'sleep 1.5' {token}-build\n",
        solution=f"#!/bin/bash\nsh -c 'sleep 1' {token}-play\necho ok > /app/out.txt\n",
        test=("import subprocess\nfrom pathlib import Path\n\n"
              "def test_out():\n"
              f"    subprocess.run(['sh', '-c', 'sleep 1', '{token}-verify'], check=True)\n"
              "    assert Path('/app/out.txt').read_text().strip() == 'ok'\n"))


@pytest.mark.slow
def test_ctrl_c_stops_a_terminal_run_at_every_phase(tmp_path):
    token = f"agentrig-ctrlc-{os.getpid()}-{tmp_path.name}"
    tasks = tmp_path / "tasks"
    _task(tasks, token)
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    env.update({"CTRLC_KEY": "x", "COLUMNS": "200"})
    server = EndpointProcess("agentrig.bench.terminal.scripted.solution_endpoint", "--no-auth", "--tasks", str(tasks), env=env)
    try:
        channel = (f'[channel]\nbase_url = "{server.base_url}"\napi_key_env = "CTRLC_KEY"\nmodel = "solution"\n'
                   'max_attempts = 3\n[[arms]]\nname = "bash"\nagent = { kind = "bash" }\n')
        cache = tmp_path / "cache"
        rng = random.Random(31)
        phases = ["build", "play", "verify", "stored"]
        toml = None
        for i in range(TIMES):
            phase = phases[i % len(phases)]
            if i % 5 == 0:  # a fresh run: a run directory of its own; the others resume it
                toml = experiment(tmp_path, f"ctrlc{i}", channel, cache=cache, tasks=tasks, sandbox='root = "host"',
                                  run="trials = 40\nconcurrency = 4")
            assert toml is not None
            store = tmp_path / "runs" / toml.stem / "trials.sqlite"
            if phase == "build":  # the layer is built again (same key: the run stays comparable)
                shutil.rmtree(cache / "layers", ignore_errors=True)
                until = when_running(f"{token}-build")
            elif phase == "stored":
                until = when_stored(len(rows(store)) + 1)
            else:
                until = when_running(f"{token}-{phase}")
            result = interrupt(["run", toml], store, until, env=env, jitter_s=rng.uniform(0, 0.4),
                               workdir=tmp_path)
            assert_clean_stop(result, f"#{i} {toml.stem} {phase}")
    finally:
        server.stop()


def test_ctrl_c_while_another_run_builds_the_base_image_exits_at_once(tmp_path):
    """The run waits for the base image another process is building (its lock): Ctrl-C ends the
    wait — a thread blocked on the lock once kept the process alive after the signal."""
    import fcntl

    from agentrig.bench.terminal.images import resolve_base

    tasks = tmp_path / "tasks"
    write_task(tasks, "needs-base")  # FROM ubuntu:24.04, built from packages under root = "image"
    images = tmp_path / "images"
    images.mkdir()
    recipe = resolve_base("ubuntu:24.04")
    assert recipe is not None
    lock = images / f"{recipe.key()}.lock"
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    env.update({"CTRLC_KEY": "x", "AGENTRIG_IMAGES_DIR": str(images)})
    channel = ('[channel]\nbase_url = "http://127.0.0.1:9/v1"\napi_key_env = "CTRLC_KEY"\nmodel = "solution"\n'
               '[[arms]]\nname = "bash"\nagent = { kind = "bash" }\n')
    toml = experiment(tmp_path, "waits", channel, cache=tmp_path / "cache", tasks=tasks)
    fd = os.open(lock, os.O_CREAT | os.O_RDWR, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # "another process" builds the image
        result = interrupt(["run", toml], tmp_path / "runs" / "waits" / "trials.sqlite",
                           lambda v: v.holds_open(lock), env=env, workdir=tmp_path)
    finally:
        os.close(fd)
    assert_clean_stop(result, "waiting for the base image")
