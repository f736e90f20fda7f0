"""`agentrig analyze` of a terminal run at 80 columns (issue 23.11f): no line wider than 80, nothing
cut, and no figure lost — the reward components (one per test of every task) stay one line each:
grouped under their task when the whole names do not fit, one column per arm.

The run is a store built here in the shape a terminal run stores (components named TASK::TEST,
three arms, two trials per task), analysed by the real command through a pipe as COLUMNS=80."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from agentrig.store.store import Store
from agentrig.types import RewardInfo

from .test_summary import record, write_run

AGENTRIG = str(Path(sys.executable).with_name("agentrig"))
ARMS = ("oracle", "flaky-oracle", "noop")
TESTS = {  # long test names as real Terminal-Bench tasks have them
    "log-error-summary": ["test_errors_by_service_includes_rotated_file", "test_first_error"],
    "clean-temp-files": ["test_nothing_else_deleted_or_added", "test_already_empty_directory_kept"],
    "script-permissions": ["test_script_is_executable_by_owner", "test_token_mode_is_600"],
    "harbor-backup-archive": ["reward"],
}


def terminal_run(path: Path) -> Path:
    recs = []
    for a, arm in enumerate(ARMS):
        for task, tests in TESTS.items():
            for trial in range(2):
                ok = a == 0 or (a == 1 and trial == 1)
                r = record(arm, "terminal", task, trial, ok=ok)
                comps = {f"{task}::{t}": (1.0 if ok or i == 1 else 0.0) for i, t in enumerate(tests)}
                r.verdict.reward_info = RewardInfo(reward=float(ok), reward_basis=list(comps), components=comps)
                r.verdict.termination = "submitted"
                recs.append(r)
    run = write_run(path, recs, {"terminal": list(TESTS)}, arms=ARMS, n=2)
    config = json.loads((run / "config.json").read_text())
    config["experiment"]["benchmark"] = {"kind": "terminal"}  # its components are the tasks' tests
    (run / "config.json").write_text(json.dumps(config))
    with Store.open(run / "trials.sqlite", create=False) as store:
        store.set_meta("config", config)
    return run


def analyze(run: Path, columns: int) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env.update(COLUMNS=str(columns), NO_COLOR="1")
    p = subprocess.run([AGENTRIG, "analyze", str(run)], capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    return p.stdout


def test_a_terminal_run_fits_80_columns_and_keeps_every_component(tmp_path):
    run = terminal_run(tmp_path / "run")
    text = analyze(run, 80)
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= 80, [line for line in lines if len(line) > 80]
    assert "…" not in text
    section = text[text.index("reward components"):text.index("terminations")]
    for task, tests in TESTS.items():
        assert f"{task}::" in section
        for test in tests:  # one line per component: the test's name and every arm's figure on it
            row = next(line for line in section.splitlines() if line.startswith(f"  {test} "))
            assert len(re.findall(r"\d+% \d+/2", row)) == len(ARMS), row
    assert "in basis (trials whose reward uses it) = trials for every component" in " ".join(section.split())
    # wide enough, each component keeps its whole name on its row
    wide = analyze(run, 160)
    assert "log-error-summary::test_errors_by_service_includes_rotated_file " in wide
    assert re.search(r"harbor-backup-archive::reward\s+100% 2/2\s+50% 1/2\s+0% 0/2", wide)
