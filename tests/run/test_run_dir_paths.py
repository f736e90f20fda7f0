"""Where a run directory cannot be (issue 31, item 3), and who may use one while a run holds it.

Every command that takes a run directory — to play into it (`run`, `run --smoke`, `run --estimate`,
`demo`) or to read it (`report`, `analyze`, `export`, `usage`, `instability`, `compare`) — answers a
path that is a file, lies under a file or does not exist with one message naming the path and the
fix, exit 1, never a traceback. A directory another process holds refuses the writers (a smoke
check in its `smoke/`, `instability`) and never the readers. The real CLI as subprocesses."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

AGENTRIG = str(Path(sys.executable).with_name("agentrig"))

REFERENCE = """
name = "ref"
[benchmark]
domains = ["bikeshop"]
task_ids = ["rent_city_bike", "refuse_cancel_active_rental"]
[run]
trials = 1
[user]
kind = "scripted"
[judge]
nl_assertions = "never"
[[arms]]
name = "gold"
agent = { kind = "gold" }
"""


def _cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    return subprocess.run([AGENTRIG, *args], capture_output=True, text=True, timeout=300, cwd=cwd,
                          env={**env, "COLUMNS": "200"})


def _flat(text: str) -> str:
    return " ".join(text.split())


@pytest.fixture
def exp(tmp_path) -> Path:
    path = tmp_path / "exp.toml"
    path.write_text(textwrap.dedent(REFERENCE), encoding="utf-8")
    return path


@pytest.fixture
def a_file(tmp_path) -> Path:
    path = tmp_path / "notes.txt"
    path.write_text("not a run directory\n", encoding="utf-8")
    return path


PLAYING = {
    "run": lambda exp, f: ["run", str(exp), "--dir", str(f)],
    "run-under-a-file": lambda exp, f: ["run", str(exp), "--dir", str(f / "sub")],
    "smoke": lambda exp, f: ["run", str(exp), "--smoke", "--dir", str(f)],
    "smoke-under-a-file": lambda exp, f: ["run", str(exp), "--smoke", "--dir", str(f / "sub")],
    "estimate": lambda exp, f: ["run", str(exp), "--estimate", "--dir", str(f)],
    "estimate-under-a-file": lambda exp, f: ["run", str(exp), "--estimate", "--dir", str(f / "sub")],
    "demo": lambda exp, f: ["demo", "--dir", str(f)],
    "demo-under-a-file": lambda exp, f: ["demo", "--dir", str(f / "sub")],
}


@pytest.mark.parametrize("case", list(PLAYING))
def test_a_file_where_a_run_directory_goes_is_one_message(case, exp, a_file):
    res = _cli(*PLAYING[case](exp, a_file))
    text = _flat(res.stderr)
    assert res.returncode == 1, res.stderr[-3000:]
    assert "Traceback" not in res.stderr and "Error:" not in res.stderr.replace("error:", ""), res.stderr[-3000:]
    if case.endswith("under-a-file"):
        assert f"{a_file}: is a file, not a directory (the " in text and f"{a_file / 'sub'} would be in it)" in text, text
    else:
        assert f"{a_file}: is a file, not a {'directory' if case == 'demo' else 'run directory'}" in text, text
    assert "fix: give another --dir" in text and "or move that file away" in text, text
    assert a_file.read_text(encoding="utf-8") == "not a run directory\n"  # left as it was


READING = {
    "report": lambda d: ["report", str(d)],
    "analyze": lambda d: ["analyze", str(d)],
    "export": lambda d: ["export", str(d), "--format", "jsonl"],
    "usage": lambda d: ["usage", str(d)],
    "instability": lambda d: ["instability", str(d)],
    "compare": lambda d: ["compare", f"{d}:gold", f"{d}:gold"],
}


@pytest.mark.parametrize("case", list(READING))
def test_a_reader_given_a_file_or_a_missing_directory_says_which(case, a_file, tmp_path):
    res = _cli(*READING[case](a_file))
    text = _flat(res.stderr)
    assert res.returncode == 1 and "Traceback" not in res.stderr, res.stderr[-3000:]
    assert f"{a_file}: is a file, not a run directory" in text, text
    missing = tmp_path / "no-such-run"
    res = _cli(*READING[case](missing))
    text = _flat(res.stderr)
    assert res.returncode == 1 and "Traceback" not in res.stderr, res.stderr[-3000:]
    assert f"{missing}: not a run directory (no such directory)" in text, text
    assert not missing.exists()


def test_the_store_file_given_as_the_run_directory_names_its_directory(exp, tmp_path):
    assert _cli("run", str(exp)).returncode == 0
    run_dir = tmp_path / "runs" / "ref"
    res = _cli("analyze", str(run_dir / "trials.sqlite"))
    assert res.returncode == 1 and "Traceback" not in res.stderr
    assert f"give its directory: {run_dir}" in _flat(res.stderr)


def test_a_held_directory_refuses_the_writers_and_serves_the_readers(exp, tmp_path):
    from agentrig.store.owner import claim

    assert _cli("run", str(exp)).returncode == 0
    run_dir = tmp_path / "runs" / "ref"
    with claim(run_dir, "a test holding the run"):  # this process is the holder
        for args in (["run", str(exp)], ["instability", str(run_dir)]):
            res = _cli(*args)
            text = _flat(res.stderr)
            assert res.returncode == 1 and "Traceback" not in res.stderr, res.stderr[-3000:]
            assert f"{run_dir}: in use by" in text and f"pid {os.getpid()} on {socket.gethostname()}" in text, text
        for args in (["report", str(run_dir)], ["analyze", str(run_dir)], ["usage", str(run_dir)],
                     ["export", str(run_dir), "--format", "jsonl"], ["run", str(exp), "--estimate"]):
            res = _cli(*args)
            assert res.returncode == 0, (args, res.stderr[-3000:])
        # the smoke check plays into a run directory of its own: it may run beside the full run
        assert _cli("run", str(exp), "--smoke").returncode == 0
    with claim(run_dir / "smoke", "a test holding the smoke check"):  # … but one at a time
        res = _cli("run", str(exp), "--smoke")
        text = _flat(res.stderr)
        assert res.returncode == 1 and "Traceback" not in res.stderr, res.stderr[-3000:]
        assert f"{run_dir / 'smoke'}: in use by" in text and f"pid {os.getpid()}" in text, text
    assert _cli("run", str(exp), "--json").returncode == 0  # released: the run is the dir's again
