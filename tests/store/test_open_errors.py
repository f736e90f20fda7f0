"""Opening a run never damages it (issue 23, items 3 and 4): a run directory that is a file is one
clear error (no traceback); an empty ``trials.sqlite`` (a copy that failed) is an error naming the
file — `analyze` lays no schema into it and `report` leaves the last readable report as it was."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "schema1-demo"
AGENTRIG = str(Path(sys.executable).with_name("agentrig"))


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([AGENTRIG, *args], cwd=cwd, capture_output=True, text=True, timeout=300, env=dict(os.environ))


def test_a_run_directory_that_is_a_file_is_one_clear_error(tmp_path):
    shutil.copy(FIXTURE / "demo.toml", tmp_path / "demo.toml")
    (tmp_path / "taken").write_text("not a directory\n")
    res = _cli("run", "demo.toml", "--dir", str(tmp_path / "taken"), cwd=tmp_path)
    assert res.returncode == 1
    assert "taken: is a file, not a run directory" in res.stderr and "Traceback" not in res.stderr + res.stdout
    assert (tmp_path / "taken").read_text() == "not a directory\n"


def test_an_empty_store_is_an_error_and_stays_as_it_was(tmp_path):
    run = tmp_path / "demo"
    run.mkdir()
    shutil.copy(FIXTURE / "config.json", run / "config.json")
    (run / "trials.sqlite").write_bytes(b"")
    (run / "report.html").write_text("<html>the last readable report</html>")
    for args in (("analyze", str(run)), ("report", str(run))):
        res = _cli(*args, cwd=tmp_path)
        assert res.returncode == 1, args
        assert "trials.sqlite: is empty (0 bytes)" in res.stderr and "Traceback" not in res.stderr
    assert (run / "trials.sqlite").stat().st_size == 0  # no schema was laid into it
    assert (run / "report.html").read_text() == "<html>the last readable report</html>"
    shutil.copy(FIXTURE / "demo.toml", tmp_path / "demo.toml")
    res = _cli("run", "demo.toml", "--dir", str(run), cwd=tmp_path)  # resuming it is refused the same way
    assert res.returncode == 1 and "is empty (0 bytes)" in res.stderr
    assert (run / "trials.sqlite").stat().st_size == 0


def test_the_empty_store_of_a_run_killed_before_it_began_is_started_anew(tmp_path):
    # SQLite creates the file before the schema is laid out: a kill in between leaves 0 bytes and no
    # config snapshot; the same command again must resume (here: start) the run, not refuse it
    shutil.copy(FIXTURE / "demo.toml", tmp_path / "demo.toml")
    run = tmp_path / "fresh"
    run.mkdir()
    (run / "trials.sqlite").write_bytes(b"")
    res = _cli("run", "demo.toml", "--dir", str(run), cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "0 already stored, 192 to play" in res.stderr
