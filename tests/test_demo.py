"""`agentrig demo` (what `make demo` runs): a complete offline run, then the channel path."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from agentrig.commands.demo import demo_experiment
from agentrig.store.store import Store

ROOT = Path(__file__).resolve().parents[1]
# the code under test: a worktree's src on PYTHONPATH wins over the venv's editable install
ENV = {"PATH": "/usr/bin:/bin"} | ({"PYTHONPATH": os.environ["PYTHONPATH"]} if os.environ.get("PYTHONPATH") else {})


def test_examples_demo_is_the_packaged_demo():
    assert (ROOT / "examples" / "demo.toml").read_text(encoding="utf-8") == demo_experiment()


def test_demo_runs_offline_and_stores_both_runs(tmp_path):
    from agentrig.bench.terminal.images import images_dir

    agentrig = Path(sys.executable).with_name("agentrig")
    # a fresh home (caches, layers), the machine's base roots: on a bare machine the first demo
    # builds them (a minute or two each with mmdebstrap), as a user's first `make demo` does
    env = ENV | {"HOME": str(tmp_path), "AGENTRIG_IMAGES_DIR": str(images_dir())}
    for _ in range(2):  # a second demo starts over instead of refusing or resuming
        done = subprocess.run([str(agentrig), "demo", "--dir", str(tmp_path)], capture_output=True, text=True,
                              timeout=900, env=env)
        assert done.returncode == 0, done.stderr + done.stdout
    out, _, terminal = done.stdout.partition("3. Terminal tasks")
    rows = {m.group(1): m.group(0).split() for m in re.finditer(r"^(gold|flaky-gold|noop|llm) .*$", out, re.M)}
    assert rows["gold"][1:6] == ["64/64", "0", "1.000", "1.000", "1.000"]
    assert rows["noop"][1] == "64/64" and float(rows["noop"][4]) < 0.5
    flaky = rows["flaky-gold"]
    assert float(flaky[5]) < float(flaky[4]) < 1.0  # pass^4 < pass^1 < 1
    llm = rows["llm"]
    assert llm[1:4] == ["32/32", "0", "1.000"] and int(llm[-1]) > 0  # faults retried, none spoiled a trial
    assert "agentrig run examples/airline.toml" in terminal
    with Store.open(tmp_path / "demo" / "trials.sqlite", create=False) as store:
        assert store.counts()["rows"] == 192
    with Store.open(tmp_path / "demo-llm" / "trials.sqlite", create=False) as store:
        calls = store.model_call_rows()
        assert {c["role"] for c in calls} >= {"agent", "user", "judge"}
        assert sum(c["retries"] for c in calls) > 0
    # the report's A/B: the arms differ only as the experiment declares (a caption, no banner); the LLM run
    # is another setup (user simulator, judge), so its arm is not paired with the offline run's
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert 'class="banner bad"' not in html and html.count('class="differs"') == 2
    assert "demo-llm:llm is not compared with demo:gold" in html
    check_terminal_section(terminal, tmp_path)


def check_terminal_section(out: str, base: Path):
    """Section 3/4: reference agents on built-in terminal tasks, then the bash agent through the channel."""
    from agentrig.bench.terminal.demo import choose_sandbox
    from agentrig.commands.demo_terminal import LLM_TRIALS, TASK_IDS, TRIALS

    kind, _why = choose_sandbox()
    if kind is None:  # no working bwrap and no root: the section says so instead of running
        assert "skipped: the bwrap sandbox does not work here" in out and "agentrig doctor --sandbox bwrap" in out
        return
    n = len(TASK_IDS) * TRIALS
    rows = {m.group(1): m.group(0).split()
            for m in re.finditer(r"^(oracle|flaky-oracle|noop|bash-native|bash-text) .*$", out, re.M)}
    assert rows["oracle"][1:7] == [f"{n}/{n}", "0", "1.000", "1.000", "1.000", "0.0"]
    assert rows["noop"][1:6] == [f"{n}/{n}", "0", "0.000", "0.000", "0.000"]
    flaky = rows["flaky-oracle"]
    assert flaky[1] == f"{n}/{n}" and float(flaky[5]) < float(flaky[4]) < 1.0  # pass^2 < pass^1 < 1
    m = len(TASK_IDS) * LLM_TRIALS
    for arm in ("bash-native", "bash-text"):  # every trial valid and solved, through 20% faults
        assert rows[arm][1:5] == [f"{m}/{m}", "0", "1.000", "1.000"], rows[arm]
    assert int(rows["bash-native"][-1]) + int(rows["bash-text"][-1]) > 0  # faults were retried and counted
    assert (base / "report-terminal.html").is_file() and "report-terminal.html" in out
    html = (base / "report-terminal.html").read_text(encoding="utf-8")
    # each run's arms against its own first arm: the two tool modes of the bash agent, neutrally; no arm
    # of the LLM run against the reference run's oracle (another run, another seed)
    assert 'class="banner bad"' not in html
    assert "<h3>demo-terminal-llm:bash-text vs demo-terminal-llm:bash-native</h3>" in html
    assert "<h3>demo-terminal:noop vs demo-terminal:oracle</h3>" in html
    assert "demo-terminal-llm:bash-native vs" not in html and "vs demo-terminal:oracle</h3>" in html
    assert not re.search(r"<h3>demo-terminal-llm:[\w-]+ vs demo-terminal:", html)
    with Store.open(base / "demo-terminal" / "trials.sqlite", create=False) as store:
        assert store.counts()["rows"] == 3 * n
    with Store.open(base / "demo-terminal-llm" / "trials.sqlite", create=False) as store:
        calls = store.model_call_rows()
        assert {c["role"] for c in calls} == {"agent"} and sum(c["retries"] for c in calls) > 0
        for arm, observation in (("bash-native", "tool"), ("bash-text", "user")):  # each tool mode's shape
            for rec in store.records(arm=arm):
                roles = [m.role for m in rec.trajectory.messages]
                assert roles[2] == "assistant" and roles[3] == observation and rec.verdict.reward == 1.0


def test_terminal_section_says_why_it_skips_without_a_sandbox(tmp_path, monkeypatch):
    """No working bwrap and no root: one clear sentence, no run, exit code 0."""
    import io

    from rich.console import Console

    from agentrig.bench.terminal import demo as terminal_demo
    from agentrig.commands import demo_terminal

    monkeypatch.setattr(terminal_demo, "choose_sandbox", lambda: (None, "root: not running as root"))
    buf = io.StringIO()
    code, dirs = demo_terminal.run_terminal_section(Console(file=buf, width=200), tmp_path, lambda p: None,
                                                    "AGENTRIG_DEMO_KEY", "sk-x")
    out = buf.getvalue()
    assert (code, dirs) == (0, []) and not any(tmp_path.iterdir())
    assert "skipped: the bwrap sandbox does not work here" in out and "(root: not running as root)" in out
    assert "agentrig doctor --sandbox bwrap" in out


def test_the_demo_s_hints_name_a_command_that_runs(monkeypatch, tmp_path):
    # after `make demo`, agentrig is .venv/bin/agentrig, not on PATH: the closing hints must say so
    from agentrig.commands.demo import command_name

    monkeypatch.setenv("PATH", str(tmp_path))  # nothing named agentrig there
    cmd = command_name()
    assert cmd != "agentrig" and Path(cmd).name == "agentrig" and Path(cmd).exists()
