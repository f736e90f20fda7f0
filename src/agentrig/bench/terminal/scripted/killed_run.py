"""A terminal run played the hard way: channel faults, the runner SIGKILLed mid-run, then resumed.

``killed_and_resumed`` is the acceptance protocol of the container sandbox (issue 24): it starts the
solution endpoint (``solution_endpoint``, its own process) answering a share of requests with
faults (429, 500, malformed bodies), runs ``agentrig run`` on an experiment with an ``oracle`` arm
and a ``bash`` arm (native tool calls, the endpoint as its model), kills the runner with SIGKILL
once some trials are stored (in a container sandbox: while one of its containers is up), runs the same command again, and reports what the store holds and
what the container engine holds: every planned trial valid exactly once, rewards and
terminations, the channel's retries, and the containers, task images and volumes of either
runner left behind (the engine's ``agentrig.owner`` label). Used by
``tests/bench/terminal/test_podman_runs.py`` (the built-in tasks) and
``perf/terminal_podman_acceptance.py`` (real Terminal-Bench tasks).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path
from typing import Any

from agentrig.testing.store_watch import valid_count

KEY_ENV = "AGENTRIG_KILLED_RUN_KEY"
KEY = "sk-killedrun-Vb7Qe2Lx9Tm4Rc8Wz"
FAULT_KINDS = "rate_limit,server_error,malformed"


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    return {**env, KEY_ENV: KEY, "PYTHONUNBUFFERED": "1", "COLUMNS": "200"}


def _agentrig() -> str:
    return str(Path(sys.executable).with_name("agentrig"))


def experiment(workdir: Path, base_url: str, *, tasks: Path | None, task_ids: list[str] | None, sandbox: str,
               build_network: str | bool, trials: int, concurrency: int) -> Path:
    """The experiment file: an oracle arm and a bash arm (native) whose model is the endpoint."""
    bench = [f'tasks = "{tasks}"'] if tasks else []
    if task_ids:
        bench.append(f"task_ids = {json.dumps(task_ids)}")
    network = json.dumps(build_network) if isinstance(build_network, str) else str(build_network).lower()
    text = textwrap.dedent(f"""\
        name = "killed-run"
        [benchmark]
        kind = "terminal"
        {chr(10).join(bench)}
        [sandbox]
        kind = "{sandbox}"
        build_network = {network}
        cache_dir = "{workdir / 'cache'}"
        [run]
        dir = "{workdir / 'runs' / 'killed-run'}"
        seed = 7
        trials = {trials}
        concurrency = {concurrency}
        [channel]
        base_url = "{base_url}"
        api_key_env = "{KEY_ENV}"
        model = "solution"
        timeout_s = 60
        max_attempts = 12
        backoff_base_s = 0.01
        backoff_max_s = 0.1
        [[arms]]
        name = "oracle"
        agent = {{ kind = "oracle" }}
        [[arms]]
        name = "bash"
        agent = {{ kind = "bash", tool_mode = "native" }}
        """)
    path = workdir / "killed-run.toml"
    path.write_text(text)
    return path


def owned(engine: str, pid: int, *, running: bool = False) -> dict[str, list[str]]:
    """The containers (``running``: only those running) and task images the runner `pid` made that
    the engine still holds."""
    from ..sandbox.engine import OWNER_LABEL, engine_cli, labelled

    cli = engine_cli(engine)
    containers = labelled(cli, "containers", OWNER_LABEL, running=running)
    images = labelled(cli, "images", OWNER_LABEL)
    return {"containers": sorted({name for _, name, owner in containers if owner.startswith(f"{pid}@")}),
            "images": sorted({ident for ident, _, owner in images if owner.startswith(f"{pid}@")})}


def _removing(pid: int) -> bool:
    """A child of the runner `pid` is removing or stopping a container (a trial's teardown)."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            if ppid != pid:
                continue
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except (OSError, ValueError, IndexError):
            continue
        if any(a in (b"rm", b"stop", b"kill") for a in argv[1:4]):
            return True
    return False


def volumes(engine: str) -> set[str]:
    from ..sandbox.engine import engine_cli

    done = subprocess.run([*engine_cli(engine), "volume", "ls", "-q"], capture_output=True, text=True, timeout=120)
    return set(done.stdout.split())


def killed_and_resumed(workdir: Path, *, tasks: Path | None = None, task_ids: list[str] | None = None,
                       sandbox: str = "podman", build_network: str | bool = "host-settings", trials: int = 1,
                       concurrency: int = 2, fault_rate: float = 0.2, delay_ms: int = 250, kill_after: int = 3,
                       seed: int = 12, timeout_s: float = 3600) -> dict[str, Any]:
    """Play the protocol (see the module's docstring) in `workdir`; return what was found."""
    from agentrig.store.store import Store

    workdir.mkdir(parents=True, exist_ok=True)
    volumes_before = volumes(sandbox) if sandbox in ("podman", "docker") else set()
    endpoint_args = ["--api-key-env", KEY_ENV, "--fault-rate", str(fault_rate), "--fault-kinds", FAULT_KINDS,
                     "--seed", str(seed), "--delay-ms", str(delay_ms), *(["--tasks", str(tasks)] if tasks else [])]
    endpoint = subprocess.Popen([sys.executable, "-m", "agentrig.bench.terminal.scripted.solution_endpoint",
                                 *endpoint_args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env())
    report: dict[str, Any] = {"sandbox": sandbox, "fault_rate": fault_rate, "trials": trials}
    try:
        base_url = (endpoint.stdout.readline() if endpoint.stdout else "").strip()
        if not base_url.startswith("http://"):
            raise RuntimeError(f"the solution endpoint did not start: {endpoint.stderr.read() if endpoint.stderr else ''}")
        toml = experiment(workdir, base_url, tasks=tasks, task_ids=task_ids, sandbox=sandbox,
                          build_network=build_network, trials=trials, concurrency=concurrency)
        db = workdir / "runs" / "killed-run" / "trials.sqlite"
        started = time.monotonic()
        first_err = workdir / "first-run.stderr"
        with open(first_err, "w") as err:
            runner = subprocess.Popen([_agentrig(), "run", str(toml), "--json"], stdout=subprocess.DEVNULL,
                                      stderr=err, env=_env())
            deadline = time.monotonic() + timeout_s
            while valid_count(db) < kill_after and runner.poll() is None and time.monotonic() < deadline:
                time.sleep(0.1)
            if sandbox in ("podman", "docker"):  # kill while a trial's container is up: the next run must reap it
                # the runner frozen (SIGSTOP: it starts nothing more) with a container of its own up
                # and no teardown of one under way — a container's `rm -f` goes on after the kill
                # and would leave nothing to reap — then killed
                until = time.monotonic() + 120
                while runner.poll() is None and time.monotonic() < until:
                    if owned(sandbox, runner.pid, running=True)["containers"]:
                        runner.send_signal(signal.SIGSTOP)
                        settle = time.monotonic() + 60
                        while _removing(runner.pid) and time.monotonic() < settle:
                            time.sleep(0.05)
                        if owned(sandbox, runner.pid)["containers"]:
                            break
                        runner.send_signal(signal.SIGCONT)
                    time.sleep(0.1)
            report["killed"] = runner.poll() is None
            report["valid_at_kill"] = valid_count(db)
            if runner.poll() is None:
                runner.send_signal(signal.SIGKILL)
            runner.wait()
        report["first_run"] = {"pid": runner.pid, "returncode": runner.returncode,
                               "stderr_tail": first_err.read_text(errors="replace")[-1500:]}
        if sandbox in ("podman", "docker"):
            report["left_at_kill"] = owned(sandbox, runner.pid)
        second = subprocess.Popen([_agentrig(), "run", str(toml), "--json"], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, env=_env())
        out, err_text = second.communicate(timeout=timeout_s)
        again = subprocess.CompletedProcess(second.args, second.returncode, out, err_text)
        report["elapsed_s"] = round(time.monotonic() - started, 1)
        try:
            doc = json.loads(again.stdout)
        except ValueError:
            doc = {}
        report["second_run"] = {"returncode": again.returncode, "status": doc.get("status"), "played": doc.get("played"),
                                "excluded": doc.get("excluded"), "stderr_tail": again.stderr[-1500:]}
        if sandbox in ("podman", "docker"):
            report["left_after"] = {"first_runner": owned(sandbox, runner.pid),
                                    "second_runner": owned(sandbox, second.pid),
                                    "new_volumes": sorted(volumes(sandbox) - volumes_before)}
        with Store.open(db, create=False) as store:
            valid = list(store.records(valid=True))
            invalid = list(store.records(valid=False))
            calls = store.model_call_rows()
        counted = Counter((r.key.arm, r.key.task_id, r.key.trial) for r in valid)
        report["stored_valid"] = len(valid)
        report["invalid_attempts"] = len(invalid)
        report["invalid_causes"] = Counter((r.verdict.invalid_cause or "?").split(":", 1)[0] for r in invalid)
        report["valid_more_than_once"] = sorted(f"{a}/{t}#{i}" for (a, t, i), n in counted.items() if n > 1)
        report["keys"] = sorted(f"{a}/{t}#{i}" for a, t, i in counted)
        report["outcomes"] = {f"{r.key.arm}/{r.key.task_id}#{r.key.trial}": {"reward": r.verdict.reward,
                                                                            "termination": r.verdict.termination}
                              for r in valid}
        report["retries"] = sum(c["retries"] for c in calls)
        report["retry_causes"] = Counter(c for row in calls for c in (row["retry_causes"] or "").split(",") if c)
    finally:
        endpoint.send_signal(signal.SIGTERM)
        try:
            endpoint.wait(timeout=10)
        except subprocess.TimeoutExpired:
            endpoint.kill()
            endpoint.wait()
    return report



def problems(report: dict[str, Any], planned: set[str], *, solved_except: set[str] = frozenset()) -> list[str]:
    """What keeps `report` from the acceptance: a planned trial missing or stored valid twice, the
    kill not landing mid-run, a resumed run that did not finish, an unsolved trial (tasks in
    `solved_except` may end otherwise, e.g. broken on a substituted base), anything left in the engine."""
    out = []
    if not report.get("killed"):
        out.append("the first run ended before the kill")
    if report["second_run"]["returncode"] != 0 or report["second_run"]["status"] != "done":
        out.append(f"the resumed run did not finish: exit {report['second_run']['returncode']}, "
                   f"{report['second_run']['stderr_tail'][-300:]}")
    keys = set(report["keys"])
    if keys != planned:
        out.append(f"planned but not stored valid: {sorted(planned - keys)}; stored but not planned: {sorted(keys - planned)}")
    if report["valid_more_than_once"]:
        out.append(f"stored valid more than once: {report['valid_more_than_once']}")
    unsolved = {k: v for k, v in report["outcomes"].items()
                if (v["reward"] != 1.0 or v["termination"] != "submitted") and k.split("/", 1)[1].split("#")[0] not in solved_except}
    if unsolved:
        out.append(f"unsolved: {unsolved}")
    for who, left in (report.get("left_after") or {}).items():
        if who == "new_volumes":
            if left:
                out.append(f"volumes left: {left}")
        elif left and (left["containers"] or left["images"]):
            out.append(f"left by the {who.replace('_', ' ')}: {left}")
    return out
