"""The terminal benchmark through `agentrig run` on small tasks written by the tests (bwrap sandbox).

- a sandbox that fails to start gives invalid trials ("sandbox: …") that are replayed and then
  stored valid (the [sandbox] bwrap_path is a wrapper that makes bwrap fail its first two starts);
- tasks the sandbox cannot run (a Dockerfile outside the subset: needs_container) and tasks whose
  own build fails (broken_task) are excluded before the run, with the reason, and never played;
- the verifier runs after an agent timeout (work done before the clock ran out still passes), and
  a step limit ends the agent phase with limits_exceeded;
- bad settings are one clear message and exit code 1.
"""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

import pytest

from agentrig.bench.terminal.tasks.taskfile import builtin_tasks_dir

from .run_support import agentrig, experiment, records, run_json, write_task
from .sandbox_support import needs_root_bwrap

pytestmark = needs_root_bwrap()

ORACLE = """
[[arms]]
name = "oracle"
agent = { kind = "oracle" }
"""


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("terminal-cache")


def _builtin(root: Path, *ids: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for task_id in ids:
        shutil.copytree(builtin_tasks_dir() / task_id, root / task_id)
    return root


def test_a_sandbox_that_fails_to_start_gives_invalid_trials_that_are_replayed(tmp_path, cache):
    from agentrig.bench.terminal.sandbox.bwrap import bwrap_binary

    counter = tmp_path / "starts"
    wrapper = tmp_path / "flaky-bwrap"
    wrapper.write_text(textwrap.dedent(f"""\
        #!/bin/sh
        # builds pass through; the first two trial sandboxes fail to start, as a broken machine would
        case "$*" in *agentrig-build-context*) exec {bwrap_binary()} "$@";; esac
        n=$(($(cat {counter} 2>/dev/null || echo 0) + 1)); echo $n > {counter}
        if [ "$n" -le 2 ]; then echo "bwrap: cannot start (test fault $n)" >&2; exit 1; fi
        exec {bwrap_binary()} "$@"
        """))
    wrapper.chmod(0o755)
    tasks = _builtin(tmp_path / "tasks", "write-marker", "word-frequency")
    path = experiment(tmp_path, "faults", ORACLE, cache=cache, tasks=tasks, sandbox=f'bwrap_path = "{wrapper}"',
                      run="trials = 2\nconcurrency = 1")
    doc = run_json(path)
    recs = records(doc["run_dir"])
    invalid = [r for r in recs if not r.verdict.valid]
    assert len(invalid) == 2
    for r in invalid:
        assert r.verdict.termination == "sandbox_error"
        assert r.verdict.invalid_cause.startswith("sandbox: ") and "test fault" in r.verdict.invalid_cause
    valid = [r for r in recs if r.verdict.valid]
    assert sorted((r.key.task_id, r.key.trial) for r in valid) == sorted(
        (t, k) for t in ("write-marker", "word-frequency") for k in range(2))
    assert all(r.verdict.reward == 1.0 for r in valid)
    replayed = {(r.key.task_id, r.key.trial) for r in invalid}
    assert all(max(v.attempt for v in valid if (v.key.task_id, v.key.trial) == key) >= 1 for key in replayed)
    assert doc["arms"]["oracle"]["valid"] == 4 and doc["arms"]["oracle"]["invalid"] == 0


def test_tasks_the_sandbox_cannot_run_are_excluded_never_failed(tmp_path, cache):
    tasks = _builtin(tmp_path / "tasks", "write-marker")
    write_task(tasks, "node-app", dockerfile="FROM node:20-alpine\nWORKDIR /app\n")
    # on Debian's own image (no stand-in: a build failing on a substituted base is base_substituted)
    write_task(tasks, "bad-build", dockerfile="FROM debian:bookworm-slim\nWORKDIR /app\nRUN echo building; exit 3\n")
    path = experiment(tmp_path, "excluded", ORACLE, cache=cache, tasks=tasks)
    proc = agentrig("run", path)
    assert proc.returncode == 0, proc.stderr
    assert "excluded: terminal/node-app: needs_container" in proc.stderr
    assert "excluded: terminal/bad-build: broken_task" in proc.stderr and "exited 3" in proc.stderr
    assert "1 task(s)" in proc.stderr
    doc = run_json(path)
    assert set(doc["excluded"]) == {"terminal/node-app", "terminal/bad-build"}
    assert {r.key.task_id for r in records(doc["run_dir"])} == {"write-marker"}
    config = json.loads((Path(doc["run_dir"]) / "config.json").read_text())
    assert config["excluded"]["terminal/node-app"].startswith("needs_container")
    listing = agentrig("tasks", "list", "--bench", "terminal", "--tasks", tasks, "--json")
    assert listing.returncode == 0, listing.stderr
    rows = {r["id"]: r["sandboxes"] for r in json.loads(listing.stdout)["tasks"]}
    assert rows["node-app"]["bwrap"]["ok"] is False and "node:20-alpine" in rows["node-app"]["bwrap"]["reason"]
    assert rows["node-app"]["docker"]["ok"] is True
    assert rows["write-marker"]["bwrap"]["ok"] is True


def test_smoke_and_estimate_build_only_the_image_of_the_task_they_play(tmp_path, cache, monkeypatch):
    # issue 31 item 8: the smoke check plays write-marker (TB's ubuntu-24-04 base); the experiment
    # also selects tasks on TB's python-3-13 and on debian:bookworm-slim — whose images it must not build
    from agentrig.bench.terminal.images import ensure_base_root, list_roots, resolve_base

    from .test_images import _need_mmdebstrap

    _need_mmdebstrap()
    played = resolve_base("ghcr.io/laude-institute/t-bench/ubuntu-24-04:20250624")
    shared = ensure_base_root(played)  # cached across sessions in images_dir()
    images = tmp_path / "images"
    images.mkdir()
    (images / played.key()).symlink_to(shared.parent)  # this run's images dir holds the played base only
    monkeypatch.setenv("AGENTRIG_IMAGES_DIR", str(images))
    tasks = _builtin(tmp_path / "tasks", "write-marker", "csv-region-totals")
    write_task(tasks, "on-debian", dockerfile="FROM debian:bookworm-slim\nWORKDIR /app\n")
    path = experiment(tmp_path, "smoke-builds", ORACLE, cache=cache, tasks=tasks)
    for flag in ("--smoke", "--estimate"):
        proc = agentrig("run", path, flag, "--json")
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
        doc = json.loads(proc.stdout)
        if flag == "--smoke":
            assert doc["ok"] and [a["task"] for a in doc["arms"]] == ["terminal/write-marker"]
        else:
            assert doc["source"] == "smoke" and doc["arms"][0]["planned"] == 3
        assert "building base image" not in proc.stderr
        assert [m["key"] for m in list_roots(images)] == [played.key()]
        assert sorted(p.name for p in images.iterdir() if p.is_dir()) == [played.key()]


def test_the_verifier_runs_after_an_agent_timeout(tmp_path, cache):
    tasks = tmp_path / "tasks"
    write_task(tasks, "done-then-hangs", solution="#!/bin/bash\necho ok > /app/out.txt\nsleep 60\n", agent_timeout=2)
    write_task(tasks, "hangs-first", solution="#!/bin/bash\nsleep 60\necho ok > /app/out.txt\n", agent_timeout=2)
    path = experiment(tmp_path, "timeouts", ORACLE, cache=cache, tasks=tasks)
    doc = run_json(path)
    recs = {r.key.task_id: r for r in records(doc["run_dir"])}
    done, hung = recs["done-then-hangs"].verdict, recs["hangs-first"].verdict
    assert done.termination == hung.termination == "agent_timeout"
    assert done.reward == 1.0 and done.reward_info.components == {"done-then-hangs::test_out": 1.0}
    assert hung.reward == 0.0 and hung.reward_info.notes["failure_mode"] == "agent_timeout"
    assert hung.reward_info.components == {"hangs-first::test_out": 0.0}  # the tests ran
    proc = agentrig("analyze", doc["run_dir"], "--json")
    assert proc.returncode == 0 and "agent_timeout" in proc.stdout


def test_a_step_limit_ends_the_agent_phase(tmp_path, cache):
    tasks = tmp_path / "tasks"
    steps = "".join(f"- command: echo line{i} >> /app/out.txt\n" for i in range(3))
    write_task(tasks, "three-steps", solution=None, solution_yaml=steps,
               test="from pathlib import Path\n\ndef test_out():\n"
                    "    assert Path('/app/out.txt').read_text().split() == ['line0', 'line1', 'line2']\n")
    path = experiment(tmp_path, "steps", ORACLE, cache=cache, tasks=tasks, run="max_steps = 2")
    doc = run_json(path)
    [rec] = records(doc["run_dir"])
    assert rec.verdict.valid and rec.verdict.termination == "limits_exceeded" and rec.verdict.reward == 0.0
    assert rec.verdict.reward_info.notes["failure_mode"] == "limits_exceeded"
    assert sum(e.kind == "command" for e in rec.trajectory.events) == 2


def test_bad_settings_are_one_clear_message(tmp_path, cache):
    path = experiment(tmp_path, "bad", ORACLE, cache=cache, sandbox='bwrap_path = "/nonexistent/bwrap"')
    proc = agentrig("run", path)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "bwrap" in proc.stderr and "fix:" in proc.stderr
    path = experiment(tmp_path, "bad2", ORACLE, cache=cache, sandbox='kind = "vm"')
    proc = agentrig("run", path)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr and "sandbox.kind" in proc.stderr
    path = experiment(tmp_path, "bad5", ORACLE, cache=cache, sandbox='kind = "podman"')
    if shutil.which("podman") is None:  # no client here: one clear message before anything is played
        proc = agentrig("run", path)
        assert proc.returncode == 1 and "no podman client" in proc.stderr and "doctor --sandbox" in proc.stderr
    arms = '[[arms]]\nname = "gold"\nagent = { kind = "gold" }\n'
    proc = agentrig("run", experiment(tmp_path, "bad3", arms, cache=cache))
    assert proc.returncode == 1 and "cannot play terminal tasks" in proc.stderr and "oracle" in proc.stderr
    arms = '[[arms]]\nname = "bash"\nagent = { kind = "bash" }\n'
    proc = agentrig("run", experiment(tmp_path, "bad4", arms, cache=cache))
    assert proc.returncode == 1 and "agent role has no model" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize("shell", ["stateless", "persistent"])
def test_the_oracle_types_solution_yaml_as_terminal_bench_does(tmp_path, cache, shell):
    tasks = tmp_path / "tasks"
    steps = textwrap.dedent("""\
        - command: "echo ok"
          append_enter: false
        - command: " > /app/out.txt"
        - command: "sleep 1; echo bg > /app/bg.txt"
          block: false
          min_timeout_sec: 3
        - command: "cat /app/bg.txt"
        """)
    test = ("from pathlib import Path\n\ndef test_out():\n    assert Path('/app/out.txt').read_text().strip() == 'ok'\n\n"
            "def test_background():\n    assert Path('/app/bg.txt').read_text().strip() == 'bg'\n")
    write_task(tasks, "typed", solution=None, solution_yaml=steps, test=test)
    path = experiment(tmp_path, "typed", ORACLE, cache=cache, tasks=tasks, sandbox=f'shell = "{shell}"')
    doc = run_json(path)
    [rec] = records(doc["run_dir"])
    assert rec.verdict.reward == 1.0, rec.verdict.reward_info.notes
    commands = [e.data["command"] for e in rec.trajectory.events if e.kind == "command"]
    assert commands[0] == "echo ok > /app/out.txt"  # keys without Enter joined the next entry
    assert commands[1] == "sleep 1; echo bg > /app/bg.txt" and commands[2] == "cat /app/bg.txt"
    outputs = [m.content for m in rec.trajectory.messages if m.role == "tool"]
    assert "bg" in outputs[2]  # the non-blocking command ended while the oracle waited min_timeout_sec


def test_block_false_entries_are_typed_ahead_into_one_shell_as_terminal_bench_plays_them(tmp_path, cache):
    # Terminal-Bench sends a `block: false` entry to its tmux session and moves on after
    # min_timeout_sec: later entries run after it in the same shell (a variable it set is seen),
    # in order, while the oracle does not wait; what still runs when the oracle submits (after
    # letting them run as long as TB's test setup would) goes on into the tests (here a server
    # started in the foreground, which the tests query)
    tasks = tmp_path / "tasks"
    steps = textwrap.dedent("""\
        - command: HASH="$(echo abc | tr a-c x-z)"
          block: false
          min_timeout_sec: 0.01
        - command: sleep 2; echo first >> /app/order.txt
          block: false
          min_timeout_sec: 0.1
        - command: echo "$HASH second" >> /app/order.txt
          block: false
          min_timeout_sec: 0.1
        - command: python3 -m http.server 8765 --directory /app
          block: false
          min_timeout_sec: 1
        """)
    test = textwrap.dedent("""\
        import time, urllib.request
        from pathlib import Path

        def eventually(check):  # what the typed-ahead entries do may still be running as the tests start
            for _ in range(100):
                try:
                    if check():
                        return True
                except OSError:
                    pass
                time.sleep(0.1)
            return False

        def test_order():
            order = Path('/app/order.txt')
            assert eventually(lambda: order.read_text().split('\\n')[:2] == ['first', 'xyz second'])

        def test_server_still_running():
            assert eventually(lambda: b'order.txt' in urllib.request.urlopen('http://127.0.0.1:8765/', timeout=5).read())
        """)
    write_task(tasks, "typed-ahead", solution=None, solution_yaml=steps, test=test,  # a server needs the python image
               dockerfile="FROM ghcr.io/laude-institute/t-bench/python-3-13:20250620\nWORKDIR /app\n")
    path = experiment(tmp_path, "ahead", ORACLE, cache=cache, tasks=tasks, sandbox='shell = "stateless"')
    doc = run_json(path)
    [rec] = records(doc["run_dir"])
    assert rec.verdict.reward == 1.0, rec.verdict.reward_info.notes
    events = [e.data for e in rec.trajectory.events if e.kind == "command"]
    assert all(e["timed_out"] is False for e in events)
    outputs = [m.content for m in rec.trajectory.messages if m.role == "tool"]
    assert "still running after 0.1 s" in outputs[1]  # the oracle moved on; `sleep 2` went on
    [waited] = [e.data for e in rec.trajectory.events if e.kind == "typed_ahead"]
    assert waited["ended"] is False  # the server never ends: the oracle submitted after its grace


def test_a_sandbox_that_never_starts_leaves_the_trial_invalid_never_failed(tmp_path, cache):
    from agentrig.bench.terminal.sandbox.bwrap import bwrap_binary

    dead = "#!/bin/sh\necho 'bwrap: no space left on device (test)' >&2\nexit 1\n"
    tasks = _builtin(tmp_path / "tasks", "write-marker")
    wrapper = tmp_path / "dead-bwrap"
    wrapper.write_text(dead)
    wrapper.chmod(0o755)
    # before the run, the build check cannot build the task's layer: one clear error, nothing played
    path = experiment(tmp_path, "dead0", ORACLE, cache=tmp_path / "fresh-cache", tasks=tasks,
                      sandbox=f'bwrap_path = "{wrapper}"')
    proc = agentrig("run", path)
    assert proc.returncode == 1 and "could not build" in proc.stderr and "doctor --sandbox" in proc.stderr
    assert "Traceback" not in proc.stderr and not (tmp_path / "runs" / "dead0" / "trials.sqlite").exists()
    # the layers build, then no trial sandbox starts
    wrapper.write_text(f'#!/bin/sh\ncase "$*" in *agentrig-build-context*) exec {bwrap_binary()} "$@";; esac\n'
                       + dead.split("\n", 1)[1])
    path = experiment(tmp_path, "dead", ORACLE, cache=cache, tasks=tasks, sandbox=f'bwrap_path = "{wrapper}"',
                      run="max_invalid_retries = 2")
    doc = run_json(path, code=3)  # the arm has no valid trial: not a success (exit 3)
    recs = records(doc["run_dir"])
    assert len(recs) == 3 and not any(r.verdict.valid for r in recs)  # the first play and two replays
    assert all("no space left on device (test)" in r.verdict.invalid_cause for r in recs)
    arm = doc["arms"]["oracle"]
    assert arm["valid"] == 0 and arm["invalid"] == 1 and arm["mean_reward"] is None
