"""Helpers for the terminal run tests: `agentrig` as a subprocess, experiment files, small task dirs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from agentrig.bench.terminal.tasks.taskfile import builtin_tasks_dir, load_tasks
from agentrig.store.store import Store

AGENTRIG = str(Path(sys.executable).with_name("agentrig"))
BUILTIN_TASKS, _ = load_tasks(builtin_tasks_dir())
LENIENT = {t.id for t in BUILTIN_TASKS if "lenient-by-design" in t.tags}


def agentrig(*args: str, cwd: Path | None = None, timeout: float = 900,
             env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """`agentrig ARGS` in this process's environment (or `env`), 200 columns wide."""
    env = {**(os.environ if env is None else env), "COLUMNS": "200"}
    return subprocess.run([AGENTRIG, *map(str, args)], capture_output=True, text=True, cwd=cwd, env=env,
                          timeout=timeout)


def run_json(path: Path, *extra: str, code: int = 0) -> dict:
    """`agentrig run --json`'s document; ``code``: the exit code expected (3: an arm ended with no
    valid trial, docs/experiments.md)."""
    proc = agentrig("run", path, "--json", *extra)
    assert proc.returncode == code, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def experiment(tmp: Path, name: str, arms: str, *, cache: Path, tasks: Path | None = None, sandbox: str = "",
               run: str = "", benchmark: str = "") -> Path:
    """An experiment file of kind terminal (arms: TOML [[arms]] tables)."""
    tasks_line = f'tasks = "{tasks}"' if tasks else ""
    if "concurrency" not in run:
        run += "\nconcurrency = 4"
    text = textwrap.dedent(f"""
        name = "{name}"
        [benchmark]
        kind = "terminal"
        {tasks_line}
        {benchmark}
        [sandbox]
        cache_dir = "{cache}"
        {sandbox}
        [run]
        seed = 300
        dir = "{tmp / 'runs' / name}"
        {run}
    """) + textwrap.dedent(arms)
    path = tmp / f"{name}.toml"
    path.write_text(text)
    return path


def solution_run(tmp: Path, name: str, key_env: str, env: dict[str, str], *, more_arms: str = "", run: str,
                 benchmark: str) -> Path:
    """The run directory of `agentrig run` (in `env`, which holds the fake key `key_env` names)
    against the solution endpoint: the bash agent in both tool modes, `more_arms`, the no-op agent."""
    from tests.support import EndpointProcess

    server = EndpointProcess("agentrig.bench.terminal.scripted.solution_endpoint", "--api-key-env", key_env, env=env)
    try:
        arms = "".join(f'\n[[arms]]\nname = "bash-{m}"\nagent = {{ kind = "bash", tool_mode = "{m}" }}\n'
                       for m in ("native", "text"))
        arms += more_arms + '\n[[arms]]\nname = "noop"\nagent = { kind = "noop" }\n'
        channel = (f'\n[channel]\nbase_url = "{server.base_url}"\napi_key_env = "{key_env}"\nmodel = "solution"\n'
                   "timeout_s = 30\n")
        toml = experiment(tmp, name, channel + arms, cache=tmp / "cache", run=run, benchmark=benchmark)
        done = agentrig("run", toml, "--json", env=env)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    finally:
        server.stop()
    return Path(json.loads(done.stdout)["run_dir"])


def records(run_dir: str | Path, arm: str | None = None, valid: bool | None = None) -> list:
    store = Store.open(Path(run_dir) / "trials.sqlite")
    try:
        return list(store.records(arm=arm, valid=valid))
    finally:
        store.close()


def write_task(root: Path, task_id: str, *, dockerfile: str = "FROM ubuntu:24.04\nWORKDIR /app\n",
               solution: str | None = "#!/bin/bash\necho ok > /app/out.txt\n", solution_yaml: str | None = None,
               test: str = "from pathlib import Path\n\ndef test_out():\n    assert Path('/app/out.txt').read_text().strip() == 'ok'\n",
               agent_timeout: float = 60, test_timeout: float = 30, files: dict[str, str] | None = None) -> Path:
    """A small Terminal-Bench 1 task directory."""
    d = root / task_id
    (d / "tests").mkdir(parents=True, exist_ok=True)
    (d / "task.yaml").write_text(textwrap.dedent(f"""\
        instruction: |-
          Write ok to /app/out.txt.
        difficulty: easy
        category: test
        parser_name: pytest
        max_agent_timeout_sec: {agent_timeout}
        max_test_timeout_sec: {test_timeout}
        """))
    (d / "Dockerfile").write_text(dockerfile)
    if solution is not None:
        (d / "solution.sh").write_text(solution)
    if solution_yaml is not None:
        (d / "solution.yaml").write_text(solution_yaml)
    (d / "tests" / "test_outputs.py").write_text(test)
    for name, text in (files or {}).items():
        (d / name).write_text(text)
    return d
