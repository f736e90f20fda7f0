"""How a trial of an agent we did not write ends (issue 32): its limits at the proxy, the task's
agent timeout, a channel fault it cannot ride out, an agent that fails by itself, Ctrl-C.

The agent is a script run as `agent = { kind = "command" }` through `agentrig run` (a subprocess)
against the solution endpoint (its own process). Each arm gives it a mode: start a child in a
session of its own (`setsid`), make model calls until the proxy refuses one, and hang; hang at
once; start such a child and hang; fail by itself (exit 3, its key in its log); start the child and
exit 0 (the control). Every process the agent starts carries a marker in its command line, and the
task's only test lists the sandbox's processes: it passes (reward 1) when none carries the marker —
so a reward of 1 says the verifier ran and found no process of the agent left, and the control's
reward of 0 says the test sees one when it is there (an agent that ends by itself may leave a
server running for the tests, as the bash agent's commands may).

Limits end the trial at once (`limits_exceeded`, the agent/stop event naming the limit): the
limits' task has an agent timeout of an hour, so a trial that waited for it would not end within
the test's own timeout. The hang arms run a task whose agent timeout is 4 s (`agent_timeout`).
bwrap (cgroups) in the default suite; podman and docker slow-marked. Also: a fatal channel fault
(401, unknown model, an outage past `outage_wait_s`) stops the run; retries exhausted make the
trial invalid and replayed; Ctrl-C while agents run; an agent that cannot be installed; the agent's
own cgroup in a container (docker.py) on real cgroups; and (slow) mini-swe-agent, Codex and
Claude Code each past a limit and stuck in a long command at the agent timeout.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import urllib.request
from pathlib import Path

import pytest

from tests.interrupt_support import assert_clean_stop, command_lines, interrupt, when_running

from .run_support import experiment, records, write_task
from .sandbox_support import needs_root_bwrap
from .test_bash_runs import KEY, KEY_ENV, WRONG_KEY_ENV, SolutionServer, _env, assert_no_key

pytestmark = needs_root_bwrap()

AGENT = r'''
import json, os, subprocess, sys, time, urllib.error, urllib.request

mode, marker = sys.argv[1], sys.argv[2]


def call():
    body = json.dumps({"model": os.environ["AGENTRIG_MODEL"],
                       "messages": [{"role": "user", "content": "Say hello."}]}).encode()
    req = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions", data=body, headers={
        "Authorization": "Bearer " + os.environ["OPENAI_API_KEY"], "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=600) as reply:
            return reply.status, reply.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def child():  # a process in a session of its own (setsid), as `setsid sleep 1000 &` starts
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)", marker + "-child"],
                     start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL)


if mode == "calls":  # a child of its own, then call until refused, then hang
    child()
    while True:
        status, text = call()
        print("call", status, text[:300], flush=True)
        if status != 200:
            break
    time.sleep(3600)
elif mode == "hang":
    time.sleep(3600)
elif mode == "setsid":
    child()
    time.sleep(3600)
elif mode == "fail":
    print("working, with", os.environ["OPENAI_API_KEY"], flush=True)
    print("giving up: no idea how to do this", flush=True)
    sys.exit(3)
elif mode == "leave":
    child()
elif mode == "call":  # one call: done when answered, else it waits (the proxy's end kills it)
    status, text = call()
    print("call", status, text[:300], flush=True)
    if status != 200:
        child()
        time.sleep(3600)
'''

TEST_NO_AGENT_LEFT = '''
import os


def test_no_process_of_the_agent_is_left():
    left = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    line = f.read().replace(b"\\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if "MARKER" in line:
                left.append(line)
    assert not left, left
'''

BASE = "FROM ghcr.io/laude-institute/t-bench/python-3-13:20250620\nWORKDIR /app\n"


def _setup(tmp: Path, marker: str) -> tuple[Path, Path]:
    agent_dir = tmp / "agent"
    agent_dir.mkdir()
    (agent_dir / "agent.py").write_text(AGENT)
    tasks = tmp / "tasks"
    test = TEST_NO_AGENT_LEFT.replace("MARKER", marker)
    write_task(tasks, "ends-long", dockerfile=BASE, test=test, agent_timeout=3600)
    write_task(tasks, "ends-short", dockerfile=BASE, test=test, agent_timeout=4)
    return agent_dir, tasks


def _arm(name: str, mode: str, agent_dir: Path, marker: str, **limits: object) -> str:
    extra = "".join(f", {k} = {json.dumps(v)}" for k, v in limits.items())
    return (f'[[arms]]\nname = "{name}"\nagent = {{ kind = "command", run = "python3 {{tool}}/agent.py {mode} '
            f'{marker}", mount = "{agent_dir}"{extra} }}\n')


def _channel(base_url: str, key_env: str = KEY_ENV, model: str = "solution", more: str = "") -> str:
    return (f'[channel]\nbase_url = "{base_url}"\napi_key_env = "{key_env}"\nmodel = "{model}"\ntimeout_s = 30\n'
            f'backoff_base_s = 0.01\nbackoff_max_s = 0.05\n{more}')


def _run(toml: Path, timeout: float = 300, **env: str) -> subprocess.CompletedProcess:
    exe = str(Path(sys.executable).with_name("agentrig"))
    return subprocess.run([exe, "run", str(toml), "--json"], capture_output=True, text=True, timeout=timeout,
                          env={**_env(), **env})


def _stop_events(record) -> list[dict]:
    return [e.data for e in record.trajectory.events if (e.plugin, e.kind) == ("agent", "stop")]


def _verifier_says(record) -> str:
    return "".join(str(e.data.get("output", ""))[-1500:] for e in record.trajectory.events
                   if (e.plugin, e.kind) == ("verifier", "result"))


def _left_on_host(marker: str) -> list[str]:
    return [c for c in command_lines() if marker in c and "pytest" not in c]


def _ends(tmp_path: Path, sandbox: str) -> None:
    marker = f"agentrig-ends-{os.getpid()}-{tmp_path.name}"
    agent_dir, tasks = _setup(tmp_path, marker)
    server = SolutionServer("--tasks", str(tasks))
    cache = tmp_path / "cache"
    box = f'kind = "{sandbox}"\nnetwork = false'
    try:
        limits = _channel(server.base_url) + '[prices."solution"]\ninput = 1000.0\noutput = 1000.0\n'
        limits += (_arm("steps", "calls", agent_dir, marker, step_limit=2)
                   + _arm("tokens", "calls", agent_dir, marker, token_limit=1)
                   + _arm("cost", "calls", agent_dir, marker, cost_limit=0.000001)
                   + _arm("fails", "fail", agent_dir, marker)
                   + _arm("leaves", "leave", agent_dir, marker))
        toml = experiment(tmp_path, f"limits-{sandbox}", limits, cache=cache, tasks=tasks, sandbox=box,
                          benchmark='task_ids = ["ends-long"]', run="concurrency = 3")
        done = _run(toml)
        assert done.returncode == 0, done.stderr[-3000:]
        hangs = (_channel(server.base_url) + _arm("hangs", "hang", agent_dir, marker)
                 + _arm("setsid", "setsid", agent_dir, marker))
        toml2 = experiment(tmp_path, f"timeouts-{sandbox}", hangs, cache=cache, tasks=tasks, sandbox=box,
                           benchmark='task_ids = ["ends-short"]', run="concurrency = 2")
        done2 = _run(toml2)
        assert done2.returncode == 0, done2.stderr[-3000:]
    finally:
        server.stop()
    run_dir, run_dir2 = (Path(json.loads(d.stdout)["run_dir"]) for d in (done, done2))
    assert not records(run_dir, valid=False) and not records(run_dir2, valid=False)
    got = {r.key.arm: r for r in records(run_dir, valid=True) + records(run_dir2, valid=True)}
    assert sorted(got) == ["cost", "fails", "hangs", "leaves", "setsid", "steps", "tokens"]

    # the limits: ended at once by the proxy, the event naming the limit, the agent's tree gone
    for arm, calls, words in (("steps", 2, "step limit: 2 model calls"), ("tokens", 1, "token limit"),
                              ("cost", 1, "cost limit")):
        r = got[arm]
        assert r.verdict.termination == "limits_exceeded", (arm, r.verdict.termination, _stop_events(r))
        assert [e["termination"] for e in _stop_events(r)] == ["limits_exceeded"]
        assert words in _stop_events(r)[0]["detail"], (arm, _stop_events(r))
        assert len(r.trajectory.model_calls) == calls, arm  # the refused call never reached the model
        assert r.verdict.reward == 1.0, (arm, _verifier_says(r))  # the verifier ran; nothing was left
    # the task's agent timeout: a plain hang, and one with a child in its own session
    for arm in ("hangs", "setsid"):
        r = got[arm]
        assert r.verdict.termination == "agent_timeout", (arm, r.verdict.termination)
        assert r.verdict.reward == 1.0, (arm, _verifier_says(r))
    # an agent that fails by itself: valid, never_submitted, its exit and its log's tail recorded
    r = got["fails"]
    assert r.verdict.termination == "never_submitted" and r.verdict.reward == 1.0
    (exit_event,) = [e.data for e in r.trajectory.events if (e.plugin, e.kind) == ("agent", "exit")]
    assert exit_event["exit_code"] == 3 and "giving up: no idea how to do this" in exit_event["log_tail"]
    assert "working, with [trial token]" in exit_event["log_tail"] and "agentrig-" not in exit_event["log_tail"]
    # the control: a child left by an agent that ended by itself is seen by the tests
    r = got["leaves"]
    assert r.verdict.termination == "submitted" and r.verdict.reward == 0.0
    assert f"{marker}-child" in json.dumps(r.trajectory.model_dump(mode="json")["events"])
    assert not _left_on_host(marker)  # and nothing of any agent outlived its sandbox
    assert_no_key(run_dir)


def test_limits_timeouts_and_failures_end_a_command_agents_trial_on_bwrap(tmp_path):
    _ends(tmp_path, "bwrap")


@pytest.mark.slow
def test_limits_timeouts_and_failures_end_a_command_agents_trial_on_podman(tmp_path):
    """In a container the agent runs through nsutil, with no cgroup of the trial's: before its own
    cgroup (docker.py ``_own_cgroup``) a child in a session of its own outlived the kill."""
    from .podman_support import need_podman

    need_podman()
    _ends(tmp_path, "podman")


@pytest.mark.slow
def test_limits_timeouts_and_failures_end_a_command_agents_trial_on_docker(tmp_path, docker_daemon):
    from ...dockerd import need_docker

    need_docker(docker_daemon)
    _ends(tmp_path, "docker")


# ------------------------------------------------------------------ faults the channel cannot ride out


def _fault_run(tmp_path: Path, name: str, channel_of, faults: list[dict] | None = None,
               mode: str = "call") -> tuple[subprocess.CompletedProcess, str]:
    """One trial of the "call" agent against the solution endpoint (given ``faults`` to answer
    first), its channel ``channel_of(base_url)``: `agentrig run --json`'s outcome and the marker."""
    marker = f"agentrig-ends-{os.getpid()}-{tmp_path.name}"
    agent_dir, tasks = _setup(tmp_path, marker)
    server = SolutionServer("--tasks", str(tasks))
    try:
        if faults:
            control = server.base_url.rsplit("/v1", 1)[0] + "/_fake/faults"
            urllib.request.urlopen(urllib.request.Request(control, data=json.dumps(faults).encode(), method="POST"),
                                   timeout=10).read()
        toml = experiment(tmp_path, name, channel_of(server.base_url) + _arm("agent", mode, agent_dir, marker),
                          cache=tmp_path / "cache", tasks=tasks, sandbox='kind = "bwrap"\nnetwork = false',
                          benchmark='task_ids = ["ends-long"]', run="concurrency = 1")
        return _run(toml), marker
    finally:
        server.stop()


@pytest.mark.parametrize("wrong", ["key", pytest.param("model", marks=pytest.mark.slow), "down"])
def test_a_fatal_channel_fault_stops_the_run_with_the_doctors_diagnosis(tmp_path, wrong):
    """The endpoint refuses the key (401), does not know the model (404), or, having answered,
    stays down past ``outage_wait_s``: the proxy answers the agent 502 and ends its trial; the run
    stops as for the bash agent — exit 1, the diagnosis and its fix, nothing stored, no traceback —
    and no process of the agent is left."""
    if wrong == "key":
        done, marker = _fault_run(tmp_path, "wrong", lambda url: _channel(url, key_env=WRONG_KEY_ENV))
        code = "AUTH_REJECTED"
    elif wrong == "model":
        done, marker = _fault_run(tmp_path, "wrong", lambda url: _channel(url, model="no-such-model"))
        code = "MODEL_NOT_FOUND"
    else:  # the first call answered, then every connection cut
        done, marker = _fault_run(tmp_path, "down", lambda url: _channel(url, more="outage_wait_s = 1\n"),
                                  faults=[{"kind": "delay", "delay_s": 0}] + [{"kind": "disconnect"}] * 200,
                                  mode="calls")
        code = "ENDPOINT_DOWN"
    assert done.returncode == 1, done.stderr[-3000:]
    doc = json.loads(done.stdout)
    assert doc["status"] == "fatal" and doc["error"]["code"] == code and doc["error"]["role"] == "agent", doc
    assert doc["error"]["fix"] and doc["stored"] == 0
    assert code in done.stderr and "fix:" in done.stderr and "Traceback" not in done.stderr, done.stderr[-3000:]
    assert not _left_on_host(marker)
    assert KEY not in done.stdout + done.stderr


def test_retries_exhausted_make_the_trial_invalid_and_it_is_replayed(tmp_path):
    """A call whose attempts all fail (two 500s, max_attempts = 2): the proxy answers the agent 503
    and ends the trial, stored invalid (channel_error), not failed; its replay is valid."""
    done, marker = _fault_run(tmp_path, "exhausted", lambda url: _channel(url, more="max_attempts = 2\n"),
                              faults=[{"kind": "server_error", "status": 500}] * 2)
    assert done.returncode == 0, done.stderr[-3000:]
    run_dir = Path(json.loads(done.stdout)["run_dir"])
    (spoiled,) = records(run_dir, valid=False)
    assert spoiled.verdict.termination == "channel_error", spoiled.verdict
    assert spoiled.verdict.invalid_cause.startswith("SERVER_ERROR: "), spoiled.verdict.invalid_cause
    calls = spoiled.trajectory.model_calls
    assert len(calls) == 1 and calls[0].error == "SERVER_ERROR" and len(calls[0].attempts) == 2, calls
    (replayed,) = records(run_dir, valid=True)
    assert replayed.verdict.termination == "submitted" and replayed.verdict.reward == 1.0
    assert not _left_on_host(marker)
    assert_no_key(run_dir)


# ------------------------------------------------------------------ Ctrl-C


def _ctrl_c(tmp_path: Path, sandbox: str) -> None:
    marker = f"agentrig-ends-{os.getpid()}-{tmp_path.name}"
    agent_dir, tasks = _setup(tmp_path, marker)
    server = SolutionServer("--tasks", str(tasks))
    try:
        arms = (_channel(server.base_url) + _arm("setsid", "setsid", agent_dir, marker)
                + _arm("calls", "calls", agent_dir, marker, step_limit=1000))
        toml = experiment(tmp_path, f"ctrlc-{sandbox}", arms, cache=tmp_path / "cache", tasks=tasks,
                          sandbox=f'kind = "{sandbox}"\nnetwork = false', benchmark='task_ids = ["ends-long"]',
                          run="trials = 2\nconcurrency = 4")
        store = tmp_path / "runs" / toml.stem / "trials.sqlite"
        # both arms' agents run: one hangs beside its setsid child, one calls its proxy in a loop
        until = when_running(f"{marker}-child")
        result = interrupt(["run", toml], store, lambda v: until(v) and v.running("agent.py calls"), env=_env(),
                           workdir=tmp_path)
    finally:
        server.stop()
    assert_clean_stop(result, f"Ctrl-C on {sandbox}")
    assert not result.after, "a trial was stored"
    assert not _left_on_host(marker), _left_on_host(marker)


def test_ctrl_c_while_a_command_agent_runs_stops_it_on_bwrap(tmp_path):
    """SIGINT to `agentrig run`'s process group while two agents run (one hanging beside a child in
    its own session, one calling its proxy in a loop): exit 130 in time, nothing stored, no process
    of either agent left."""
    _ctrl_c(tmp_path, "bwrap")


@pytest.mark.slow
def test_ctrl_c_while_a_command_agent_runs_stops_it_on_podman(tmp_path):
    import asyncio

    from agentrig.bench.terminal.sandbox.engine import engine_cli, reap_orphans

    from .podman_support import need_podman

    need_podman()
    try:
        _ctrl_c(tmp_path, "podman")
    finally:  # a container whose removal the harness's kill of the run's group cut short (exited)
        asyncio.run(reap_orphans(engine_cli("podman")))


# ------------------------------------------------------------------ an agent that cannot be installed


def test_an_agent_that_cannot_be_installed_is_a_clear_error_before_the_run(tmp_path):
    """Codex not in the (empty) tool-root cache and npm's registry unreachable: exit 1 before any
    trial, naming the arm, the agent and the fix; no run directory, no traceback."""
    channel = _channel("http://127.0.0.1:9/v1")
    toml = experiment(tmp_path, "uninstallable", channel + '[[arms]]\nname = "mine"\nagent = { kind = "codex" }\n',
                      cache=tmp_path / "cache", benchmark='task_ids = ["write-marker"]')
    done = _run(toml, AGENTRIG_AGENTS_DIR=str(tmp_path / "agents"), npm_config_registry="http://127.0.0.1:9/",
                npm_config_fetch_retries="0")
    assert done.returncode == 1, done.stderr[-3000:]
    error = json.loads(done.stdout)["error"]
    assert error.startswith("arm 'mine': agent 'codex' could not be installed: npm install @openai/codex@"), error
    assert "(fix: " in error and "agentrig agents install codex" in error
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "runs" / "uninstallable").exists()


# ------------------------------------------------------------------ mini-swe-agent, Codex, Claude Code

INSTALLED_LIMITS = {"mini-swe-agent": ("step_limit", 1, "step limit"), "codex": ("token_limit", 1, "token limit"),
                    "claude-code": ("cost_limit", 0.000001, "cost limit")}


def _stuck_tasks(tmp: Path, marker: str, stuck_s: int) -> Path:
    """ends-done: one command, then the agent's finish; ends-stuck: a command that runs for 1000 s
    (the agent is stuck in it until its ``stuck_s`` run out; mini's own 30 s command timeout is lifted).
    The instruction carries the marker, so the agent's own process does (its command line holds
    the instruction), and so does the command."""
    tasks = tmp / "tasks"
    test = TEST_NO_AGENT_LEFT.replace("MARKER", marker)
    for task_id, solution, timeout in (("ends-done", "echo ok > /app/out.txt\n", 600),
                                       ("ends-stuck", f"sh -c 'sleep 1000; true' {marker}-long\n", stuck_s)):
        d = write_task(tasks, task_id, dockerfile=BASE, solution="#!/bin/bash\n" + solution, test=test,
                       agent_timeout=timeout)
        yaml = (d / "task.yaml").read_text().replace("Write ok to /app/out.txt.", f"Do the task {marker}.")
        (d / "task.yaml").write_text(yaml)
    return tasks


def _installed_ends(tmp_path: Path, kind: str, sandbox: str) -> None:
    marker = f"agentrig-ends-{os.getpid()}-{tmp_path.name}"
    # mini-swe-agent takes ~35 s to start (litellm's import) on a loaded 2-core machine
    tasks = _stuck_tasks(tmp_path, marker, 150 if kind == "mini-swe-agent" else 45)
    field, value, words = INSTALLED_LIMITS[kind]
    server = SolutionServer("--tasks", str(tasks))
    box = f'kind = "{sandbox}"\nnetwork = false'
    try:
        channel = _channel(server.base_url) + '[prices."solution"]\ninput = 1000.0\noutput = 1000.0\n'
        limited = channel + f'[[arms]]\nname = "limited"\nagent = {{ kind = "{kind}", {field} = {value} }}\n'
        toml = experiment(tmp_path, "limited", limited, cache=tmp_path / "cache", tasks=tasks, sandbox=box,
                          benchmark='task_ids = ["ends-done"]')
        done = _run(toml, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        lifted = ', config = { "environment.timeout" = 3600 }' if kind == "mini-swe-agent" else ""
        stuck = channel + f'[[arms]]\nname = "stuck"\nagent = {{ kind = "{kind}"{lifted} }}\n'
        toml2 = experiment(tmp_path, "stuck", stuck, cache=tmp_path / "cache", tasks=tasks, sandbox=box,
                           benchmark='task_ids = ["ends-stuck"]')
        done2 = _run(toml2, timeout=600)
        assert done2.returncode == 0, done2.stderr[-3000:]
    finally:
        server.stop()
    (limited_rec,) = records(Path(json.loads(done.stdout)["run_dir"]), valid=True)
    assert limited_rec.verdict.termination == "limits_exceeded", (limited_rec.verdict, _stop_events(limited_rec))
    assert words in _stop_events(limited_rec)[0]["detail"], _stop_events(limited_rec)
    assert limited_rec.verdict.reward == 1.0, _verifier_says(limited_rec)  # nothing of the agent was left
    (stuck_rec,) = records(Path(json.loads(done2.stdout)["run_dir"]), valid=True)
    assert stuck_rec.verdict.termination == "agent_timeout", stuck_rec.verdict
    commands = json.dumps([m.model_dump(mode="json") for m in stuck_rec.trajectory.messages])
    assert f"{marker}-long" in commands  # it was stuck in the long command
    assert stuck_rec.verdict.reward == 1.0, _verifier_says(stuck_rec)
    assert not _left_on_host(marker)


@pytest.mark.slow
@pytest.mark.parametrize("kind, sandbox", [("mini-swe-agent", "bwrap"), ("codex", "podman"), ("claude-code", "docker")])
def test_an_installed_agents_limit_and_timeout_end_its_trial(tmp_path, kind, sandbox, request):
    """mini-swe-agent past step_limit, Codex past token_limit, Claude Code past cost_limit:
    limits_exceeded, the verifier finding nothing of the agent left; each stuck in a 1000 s command
    at its agent timeout: agent_timeout, the command and the agent gone before the verifier. Each
    agent on one sandbox, each sandbox once (the suite's time; every pair was run by hand and passed
    — the command agent covers the limits and the timeout on all three sandboxes above)."""
    if sandbox == "podman":
        from .podman_support import need_podman

        need_podman()
    elif sandbox == "docker":
        from ...dockerd import need_docker

        need_docker(request.getfixturevalue("docker_daemon"))
    _installed_ends(tmp_path, kind, sandbox)


# ------------------------------------------------------------------ an agent's own cgroup in a container


async def test_an_agents_own_cgroup_is_killed_whole_and_what_it_leaves_is_released(tmp_path):
    """docker.py's cgroup for an agent in a container, on real cgroups: a trial's cgroups stand for
    the container's. A process that joined it (as nsutil does) and its child in a session of its
    own are killed together; what an agent leaves after exiting by itself is moved to the parent
    (the container's cgroup) and the agent's cgroup removed."""
    import asyncio

    from agentrig.bench.terminal.sandbox import cgroup
    from agentrig.bench.terminal.sandbox.docker import _own_cgroup, _release_cgroup

    if (why := cgroup.available()) is not None:
        pytest.skip(why)
    box = cgroup.TrialCgroups.create(f"owncg-test-{os.getpid()}", memory_mb=None, pids=64, cpus=None)
    assert box is not None
    marker = f"agentrig-owncg-{os.getpid()}"

    def start(script: str, group: Path) -> subprocess.Popen:
        join = str(group / "cgroup.procs")
        return subprocess.Popen(["sh", "-c", script, marker], start_new_session=True,
                                preexec_fn=lambda: Path(join).write_text(str(os.getpid())))

    try:
        files = [str(box.dirs[c] / "cgroup.procs") for c in cgroup.CONTROLLERS if c in box.dirs]
        group = _own_cgroup(files, "agentrig-agent-1")
        assert group == box.dirs["pids"] / "agentrig-agent-1" and str(group / "cgroup.procs") in files
        agent = start(f"setsid sh -c 'sleep 1000; true' {marker}-child & sleep 1000", group)
        for _ in range(1000):  # sh (or its sleep), the setsid child and its sleep
            if len(cgroup._procs(group)) >= 3:
                break
            await asyncio.sleep(0.02)
        await cgroup.kill_cgroup(group)
        assert agent.wait(timeout=10) == -9
        assert cgroup._procs(group) == [] and not _left_on_host(marker)
        _release_cgroup(group)
        assert not group.exists()

        group = _own_cgroup([str(box.dirs["pids"] / "cgroup.procs")], "agentrig-agent-2")
        assert group is not None
        agent = start(f"setsid sh -c 'sleep 1000; true' {marker}-child & exit 0", group)
        assert agent.wait(timeout=10) == 0
        for _ in range(1000):
            if _left_on_host(f"{marker}-child"):
                break
            await asyncio.sleep(0.02)
        left = cgroup._procs(group)
        assert left
        _release_cgroup(group)
        assert not group.exists() and set(left) <= set(cgroup._procs(box.dirs["pids"]))
    finally:
        await box.close()
    assert not _left_on_host(marker)
