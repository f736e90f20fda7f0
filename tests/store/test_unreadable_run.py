"""Issue 23.3/23.4: a run directory that is a file, and an empty store, are one-line errors naming
the file; opening an existing run never lays out a schema in it, and `report` keeps the last report."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

AGENTRIG = str(Path(sys.executable).with_name("agentrig"))
DEMO = Path(__file__).resolve().parents[2] / "src" / "agentrig" / "commands" / "demo.toml"


def agentrig(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([AGENTRIG, *args], capture_output=True, text=True, cwd=cwd, timeout=300,
                          env={**os.environ, "COLUMNS": "200"})


def test_run_dir_that_is_a_file(tmp_path):
    exp = tmp_path / "demo.toml"
    exp.write_text(DEMO.read_text().replace("trials = 4", "trials = 1"))
    target = tmp_path / "afile"
    target.write_text("not a directory\n")
    p = agentrig("run", str(exp), "--dir", str(target), cwd=tmp_path)
    assert p.returncode == 1, p.stdout + p.stderr
    assert "Traceback" not in p.stderr and str(target) in p.stderr and "is a file" in p.stderr


def test_empty_store_is_an_error_and_is_left_alone(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "trials.sqlite").write_bytes(b"")
    (run_dir / "config.json").write_text("{}")
    (run_dir / "report.html").write_text("<html>the last readable report</html>")
    for verb in (["analyze", str(run_dir)], ["report", str(run_dir)]):
        p = agentrig(*verb, cwd=tmp_path)
        assert p.returncode == 1, (verb, p.stdout, p.stderr)
        assert "Traceback" not in p.stderr and "trials.sqlite" in p.stderr and "empty" in p.stderr
    assert (run_dir / "trials.sqlite").stat().st_size == 0  # no schema written into it
    assert (run_dir / "report.html").read_text() == "<html>the last readable report</html>"
    exp = tmp_path / "demo.toml"
    exp.write_text(DEMO.read_text().replace("trials = 4", "trials = 1"))
    p = agentrig("run", str(exp), "--dir", str(run_dir), cwd=tmp_path)
    assert p.returncode == 1 and "empty" in p.stderr and "Traceback" not in p.stderr
    assert (run_dir / "trials.sqlite").stat().st_size == 0
