"""AppWorld on data in the shape of its real downloads (issue 31, item 4).

- the synthetic tasks are written by AppWorld's own code the way real ones are: ``assert answers
  match.`` in every task, ``assert model changes match <models>.``, a generator-form
  ``solution.py`` beside a compiled solution with imports and helpers, test labels from
  ``TestTracker.prepare_test_data``, a task over two apps;
- an ``oracle`` arm on a split that ships no solutions (AppWorld's test sets) is refused before the
  run: exit 1, naming the arm, the split and the fix; nothing is stored;
- ``doctor`` reads every task of the data and names each unreadable file;
- the workers of a runner killed by SIGKILL die with it (even in the middle of a long request), and
  the next process that starts workers removes the scratch directory the killed one left.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

AGENTRIG = str(Path(sys.executable).with_name("agentrig"))


def _gt(root: Path, task_id: str) -> Path:
    return root / "data" / "tasks" / task_id / "ground_truth"


def test_synthetic_tasks_have_the_real_shape(synthetic_root):
    from agentrig.bench.appworld.synthetic import load

    tasks = load(synthetic_root)["tasks"]
    apps = set()
    for task_id in tasks:
        gt = _gt(synthetic_root, task_id)
        specs = json.loads((gt.parent / "specs.json").read_text())
        assert {"instruction", "supervisor", "datetime", "db_version", "canary_string"} <= set(specs)
        test_data = json.loads((gt / "test_data.json").read_text())
        names = [t["requirement"] for t in test_data]
        assert "assert answers match." in names, task_id
        assert any(n.startswith(("assert model changes match", "assert no model changes")) for n in names), names
        # AppWorld's labels (prepare_test_data: the solution's passes less the no-op's, then the no-op's)
        labels = [t["label"] for t in test_data]
        assert labels == sorted(labels, key=["no_op_fail", "no_op_pass"].index) and "no_op_fail" in labels
        assert dict(zip(names, labels))["assert answers match."] == "no_op_fail"
        solution, compiled = (gt / "solution.py").read_text(), (gt / "compiled_solution.py").read_text()
        assert solution != compiled and solution.startswith("# Canary String:")
        tree = {n.name: n for n in ast.parse(solution).body if isinstance(n, ast.FunctionDef)}
        assert set(tree) == {"solution", "_solution"}
        assert any(isinstance(n, ast.Yield) for n in ast.walk(tree["_solution"]))  # generator form
        helpers = [n.name for n in ast.parse(compiled).body if isinstance(n, ast.FunctionDef)]
        assert "solution" in helpers and len(helpers) > 1  # helpers beside solution()
        assert any(isinstance(n, ast.ImportFrom) for n in ast.parse(compiled).body)
        metadata = json.loads((gt / "metadata.json").read_text())
        assert metadata["mode"] == "full" and metadata["num_api_calls"] > 0
        required = json.loads((gt / "required_apps.json").read_text())
        assert metadata["num_apps"] == len(required)
        apps |= set(required)
    assert {"simple_note", "phone"} <= apps
    assert max(json.loads((_gt(synthetic_root, t) / "metadata.json").read_text())["num_apps"] for t in tasks) == 2


def _copy(synthetic_root: Path, dest: Path) -> Path:
    shutil.copytree(synthetic_root / "data", dest / "data", symlinks=True)
    shutil.copy(synthetic_root / "synthetic.json", dest / "synthetic.json")
    return dest


def test_an_oracle_arm_on_a_split_without_solutions_is_refused(tmp_path, synthetic_root, appworld_python):
    from agentrig.bench.appworld.synthetic import ship_as_test_set

    root = _copy(synthetic_root, tmp_path / "aw")
    assert ship_as_test_set(appworld_python, root, "test_normal") == ["5a1c0de_2", "8d4f3ab_1"]
    assert not (_gt(root, "8d4f3ab_1") / "compiled_solution.py").exists()
    exp = tmp_path / "oracle-test.toml"
    exp.write_text(textwrap.dedent(f"""\
        name = "oracle-test"
        [benchmark]
        kind = "appworld"
        data = "{root}"
        dataset = "test_normal"
        python = "{appworld_python}"
        [run]
        trials = 2
        [[arms]]
        name = "noop"
        agent = {{ kind = "noop" }}
        [[arms]]
        name = "gold"
        agent = {{ kind = "oracle" }}
        """))
    done = subprocess.run([AGENTRIG, "run", str(exp)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, (done.stdout[-2000:], done.stderr[-2000:])
    said = done.stderr
    assert "arm 'gold'" in said and "'test_normal'" in said and "fix:" in said and "dataset = \"dev\"" in said, said
    assert "5a1c0de_2" in said and "Traceback" not in said
    assert not (tmp_path / "runs" / "oracle-test" / "trials.sqlite").exists()
    # the same experiment on a split that ships solutions is accepted
    exp.write_text(exp.read_text().replace('dataset = "test_normal"', 'dataset = "train"'))
    from agentrig.run.experiment import load

    assert [a.name for a in load(exp).arms] == ["noop", "gold"]


def _doctor(root: Path, python: Path) -> tuple[int, dict]:
    done = subprocess.run([AGENTRIG, "appworld", "doctor", "--data", str(root), "--python", str(python), "--json"],
                          capture_output=True, text=True, timeout=300)
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    return done.returncode, {c["check"]: c for c in json.loads(done.stdout)["checks"]}


def test_doctor_reads_every_task_and_names_the_corrupt_file(tmp_path, synthetic_root, appworld_python):
    root = _copy(synthetic_root, tmp_path / "aw")
    code, checks = _doctor(root, appworld_python)
    assert code == 0 and checks["tasks"]["ok"] and checks["world"]["ok"], checks
    later = root / "data" / "tasks" / "7c3e2fa_1" / "specs.json"  # not the first task of any dataset
    later.write_text('{"instruction": "Delete the note", ')
    code, checks = _doctor(root, appworld_python)
    assert code == 1 and not checks["tasks"]["ok"], checks
    assert str(later) in checks["tasks"]["detail"] and "appworld download data" in checks["tasks"]["fix"]
    assert checks["tasks"]["bad"] == ["7c3e2fa_1"]
    first = root / "data" / "tasks" / "5a1c0de_1" / "specs.json"  # the first task: the world opens another
    first.write_text(json.dumps({"instruction": "x", "datetime": "2023-05-18T12:00:00"}))
    code, checks = _doctor(root, appworld_python)
    assert code == 1 and checks["tasks"]["bad"] == ["5a1c0de_1", "7c3e2fa_1"], checks
    assert f"{first} lacks supervisor, db_version" in checks["tasks"]["detail"]
    assert checks["world"]["ok"] and "5a1c0de_1" not in checks["world"]["detail"], checks


RUNNER = """
import json, sys, time
from pathlib import Path
from agentrig.bench.appworld import pool

worker = pool.Worker._start(Path(sys.argv[1]), Path(sys.argv[2]))
opened = json.dumps({"id": 1, "op": "open", "task_id": "5a1c0de_1", "exec_timeout_s": 900}) + "\\n"
assert json.loads(worker._roundtrip(opened.encode(), 300, "open"))["ok"]
worker.proc.stdin.write((json.dumps({"id": 2, "op": "execute", "code": "while True:\\n    pass"}) + "\\n").encode())
worker.proc.stdin.flush()
print(json.dumps({"worker": worker.pid, "scratch": str(pool._scratch_parent())}), flush=True)
time.sleep(900)
"""


def _gone(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except OSError:
        return True


def test_workers_die_with_a_killed_runner_and_the_next_reaps_its_scratch(tmp_path, synthetic_root, appworld_python):
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    runner = subprocess.Popen([sys.executable, "-c", RUNNER, str(appworld_python), str(synthetic_root)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        line = runner.stdout.readline()
        assert line, runner.stderr.read()[-2000:]
        started = json.loads(line)
        worker, scratch = started["worker"], Path(started["scratch"])
        assert scratch.parent == tmp_path and (scratch / "owner").is_file() and not _gone(worker)
        time.sleep(0.5)  # the worker is inside its endless execution (AppWorld's own limit: 900 s)
        runner.send_signal(signal.SIGKILL)
        runner.wait(timeout=30)
        deadline = time.monotonic() + 60  # far below the execution's 900 s: it must not wait for it
        while not _gone(worker) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _gone(worker), "the worker outlived its runner"
    finally:
        if runner.poll() is None:
            runner.kill()
        if not _gone(worker):
            os.kill(worker, signal.SIGKILL)
    assert scratch.is_dir()  # a SIGKILLed runner cannot clean up …
    alive = tmp_path / "agentrig-appworld-alive"  # … a live owner's directory and an unowned one stay
    alive.mkdir()
    (alive / "owner").write_text(f"{os.getpid()}@" + Path("/proc/sys/kernel/random/boot_id").read_text().strip())
    unowned = tmp_path / "agentrig-appworld-unowned"
    unowned.mkdir()
    nxt = subprocess.run([sys.executable, "-c", "from agentrig.bench.appworld import pool\n"
                          "print(pool._scratch_parent())\npool.close_pools()"],
                         capture_output=True, text=True, env=env, timeout=120)
    assert nxt.returncode == 0, nxt.stderr[-2000:]
    assert not scratch.exists() and alive.is_dir() and unowned.is_dir()
    assert not Path(nxt.stdout.strip()).exists()  # and the next one removes its own when done
