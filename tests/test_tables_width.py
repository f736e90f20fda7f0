"""Every table of `run`, `analyze`, `compare`, `tasks` and `audit` is whole at 100 columns, when
piped, and on a narrow terminal: no cut header or figure (rich cuts with '…'), no figure folded
over two lines, no task id broken, no line wider than the console unless it holds one unbreakable
word (an id) longer than the console.

The outputs are real: the built-in offline demo played by `agentrig run`, constructed stores with
invalid trials, several domains, memory arms and telecom-long task ids, and the bundled tasks."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console
from rich.text import Text

from agentrig.commands.analyze import analyze_command
from agentrig.commands.compare import compare_command
from agentrig.tables import PIPE_WIDTH, FitTable, Stack

from .analysis.test_memory_figures import write_ablation_run
from .analysis.test_summary import hand_run, record, write_run

AGENTRIG = str(Path(sys.executable).with_name("agentrig"))
DEMO = Path(__file__).parents[1] / "src" / "agentrig" / "commands" / "demo.toml"
# a τ²-bench telecom task id (215 characters): wider than any console
LONG_ID = ("[mms_issue]airplane_mode_on|bad_network_preference|bad_wifi_calling|break_apn_mms_setting|"
           "break_app_storage_permission|data_mode_off|data_usage_exceeded|unseat_sim_card|"
           "user_abroad_roaming_disabled_off[PERSONA:Easy]")
WIDTHS = (80, 100, 120)


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env["NO_COLOR"] = "1"
    return env


def piped(*args: str, env: dict | None = None) -> str:
    """The command's stdout through a pipe (not a terminal), as a user's `| tee notes.txt` sees it."""
    p = subprocess.run([AGENTRIG, *args], capture_output=True, text=True, env=env or _env(), timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    return p.stdout


def rendered(width: int, fn, *args, **kw) -> str:
    buf = io.StringIO()
    fn(*args, **kw, out=Console(file=buf, width=width, color_system=None, highlight=False))
    return buf.getvalue()


def assert_whole(text: str, width: int, *, ids: tuple[str, ...] = (), allowed_ellipses: int = 0) -> None:
    """Nothing cut ('…' only where the content itself has it), no line wider than ``width`` unless
    it holds a word longer than ``width``, and every id on one line, unbroken."""
    assert text.count("…") == allowed_ellipses, "\n".join(ln for ln in text.splitlines() if "…" in ln)
    for line in text.splitlines():
        if len(line) > width:
            assert max(len(w) for w in line.split()) > width - 2, f"line wider than {width}: {line!r}"
    lines = text.splitlines()
    for i in ids:
        assert any(i in ln for ln in lines), f"task id broken or missing: {i[:40]}…"


def figure_strings(analysis: dict) -> list[str]:
    """The summary's figures as they must appear, whole: counts, estimates and their intervals."""
    out = []
    for arm in analysis["arms"].values():
        for f in [arm["overall"], *arm["domains"].values()]:
            out.append(f"{f['valid']}/{f['trials_planned']}")
            for key, digits in (("pass_1", 3), ("pass_n", 3), ("gap_pp", 1)):
                e = f[key]
                if e["value"] is not None:
                    out.append(f"{e['value']:.{digits}f}")
                if e["low"] is not None:
                    out.append(f"[{e['low']:.{digits}f}, {e['high']:.{digits}f}]")
            if f["mean_at_n"] is not None:
                out.append(f"{f['mean_at_n']:.3f}")
    return out


# ------------------------------------------------------------------------------------ the runs


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> tuple[Path, str]:
    """The offline demo (3 arms × 16 tasks × 4 trials) played by `agentrig run`, stdout piped."""
    run = tmp_path_factory.mktemp("demo") / "run"
    return run, piped("run", str(DEMO), "--dir", str(run))


@pytest.fixture(scope="module")
def hand(tmp_path_factory) -> Path:
    """Two domains, invalid trials, missing trials, retries by cause, an unpriced model."""
    return hand_run(tmp_path_factory.mktemp("hand") / "run")


@pytest.fixture(scope="module")
def memory(tmp_path_factory) -> Path:
    """A baseline arm and a memory arm: the memory tables and the A/B against the baseline."""
    return write_ablation_run(tmp_path_factory.mktemp("mem") / "run")


@pytest.fixture(scope="module")
def long_ids(tmp_path_factory) -> Path:
    """Four arms (with long names) on tasks with telecom-long ids and mixed outcomes."""
    arms = ("baseline-gpt-4.1", "candidate-prompt-v2", "memory-selective", "memory-always-on")
    tasks = [LONG_ID, LONG_ID.replace("Easy", "Hard"), "short_task"]
    recs = [record(arm, "telecom", t, i, ok=(i + j + k) % 3 != 0, chain=("a",) * (1 + (i + k) % 2))
            for j, arm in enumerate(arms) for k, t in enumerate(tasks) for i in range(4)]
    return write_run(tmp_path_factory.mktemp("long") / "run", recs, {"telecom": tasks}, arms=arms)


# ------------------------------------------------------------------------------------- analyze


@pytest.mark.parametrize("width", WIDTHS)
def test_analyze_is_whole_at_any_width(demo, hand, memory, long_ids, width):
    for run in (demo[0], hand, memory, long_ids):
        text = rendered(width, analyze_command, run, arm=None, as_json=False)
        ids = (LONG_ID,) if run == long_ids else ()
        assert_whole(text, width, ids=ids)
        analysis = json.loads(rendered(width, analyze_command, run, arm=None, as_json=True))
        for s in figure_strings(analysis):
            assert s in text, (run, s)
        for header in ("valid", "invalid", "pass^1", "[95% CI]", "mixed", "excl."):
            assert header in text


def test_analyze_summary_at_100_columns_is_one_table(demo):
    """At 100 columns the summary stays a table: a header line with every column, then the arms."""
    text = rendered(100, analyze_command, demo[0], arm=None, as_json=False)
    lines = text.splitlines()
    head = next(i for i, ln in enumerate(lines) if ln.startswith("summary"))
    header = " ".join(lines[head + 1:head + 3])
    for word in ("arm", "valid", "invalid", "pass^1", "pass^4", "gap pp", "Mean@4", "mixed", "excl.", "k=4"):
        assert word in header
    assert lines[head + 3].startswith("─")
    assert lines[head + 4].split()[:3] == ["gold", "64/64", "0"]


def test_analyze_piped(demo, hand, memory):
    for run in (demo[0], hand, memory):
        text = piped("analyze", str(run))
        assert_whole(text, PIPE_WIDTH)
        assert "pass^1" in text and "[95% CI]" in text
        if run == demo[0]:  # piped, the console is PIPE_WIDTH wide (not rich's 80): the summary is one table
            assert 80 < max(len(ln) for ln in text.splitlines()) <= PIPE_WIDTH
            assert text.count("excl.") == 1
    env = {**_env(), "COLUMNS": "132"}
    wide = piped("analyze", str(demo[0]), env=env)
    assert "pass^1 [95% CI]" in wide and max(len(ln) for ln in wide.splitlines()) > PIPE_WIDTH  # $COLUMNS honoured
    assert_whole(wide, 132)


# --------------------------------------------------------------------------------- run, compare


def test_run_summary_piped(demo):
    _, text = demo
    assert_whole(text, PIPE_WIDTH)
    lines = text.splitlines()
    assert lines[0].split() == ["arm", "valid", "invalid", "reward", "pass^1", "pass^4", "gap", "pp", "tokens",
                                "retries"]
    assert lines[2].split()[:2] == ["gold", "64/64"] and lines[3].split()[:2] == ["flaky-gold", "64/64"]


@pytest.mark.parametrize("width", WIDTHS)
def test_compare_is_whole(demo, memory, long_ids, width):
    cases = [(f"{demo[0]}:gold", f"{demo[0]}:flaky-gold"), (f"{memory}:base", f"{memory}:mem"),
             (f"{long_ids}:baseline-gpt-4.1", f"{long_ids}:candidate-prompt-v2")]
    for a, b in cases:
        text = rendered(width, compare_command, a, b, as_json=False, fail_if_worse=False, allow_mismatch=True)
        assert_whole(text, width, ids=(LONG_ID,) if a.startswith(str(long_ids)) and LONG_ID in text else ())
        for header in ("tasks", "Δ (B − A)", "95% CI"):
            assert header in text


def test_compare_piped(demo):
    text = piped("compare", f"{demo[0]}:gold", f"{demo[0]}:noop")
    assert_whole(text, PIPE_WIDTH)
    assert "Δ (B − A)" in text and "95% CI" in text


# ---------------------------------------------------------------------------------- tasks, audit


def test_tasks_piped():
    tasks = json.loads(piped("tasks", "list", "--domain", "bikeshop", "--json"))["tasks"]
    ids = [t["id"] for t in tasks]
    text = piped("tasks", "list", "--domain", "bikeshop")
    cut_summaries = sum(t["summary"].endswith("…") for t in tasks)  # Task.summary shortens long prose itself
    assert_whole(text, PIPE_WIDTH, ids=tuple(ids), allowed_ellipses=cut_summaries)
    for header in ("id", "summary", "gold", "reward basis"):
        assert header in text
    show = piped("tasks", "show", ids[0], "--domain", "bikeshop")
    assert_whole(show, PIPE_WIDTH, ids=(ids[0],))
    replay = piped("tasks", "replay-gold", "--domain", "bikeshop")
    assert_whole(replay, PIPE_WIDTH, ids=tuple(ids))
    assert "env assertions" in replay
    audit = piped("audit", "--domain", "bikeshop")
    assert_whole(audit, PIPE_WIDTH, ids=tuple(ids))
    assert "do-nothing" in audit


def test_telecom_ids_are_never_broken(tau2_root):
    data = ("--domain", "telecom", "--data", str(tau2_root))
    tasks = json.loads(piped("tasks", "list", *data, "--json"))["tasks"]
    assert max(len(t["id"]) for t in tasks) > PIPE_WIDTH
    text = piped("tasks", "list", *data)
    cut_summaries = sum(t["summary"].endswith("…") for t in tasks)  # Task.summary shortens long prose itself
    assert_whole(text, PIPE_WIDTH, ids=tuple(t["id"] for t in tasks), allowed_ellipses=cut_summaries)


# ------------------------------------------------------------------------------ FitTable itself


def _table() -> FitTable:
    t = FitTable("figures", key=1)
    t.add_column("task")
    for arm in ("first-arm", "second-arm", "third-arm"):
        t.add_column(Stack(f"{arm} pass^k", "[95% CI]"), "right", group=arm)
        t.add_column("tasks", "right", group=arm)
    t.add_column("notes", wrap=True)
    t.add_row("short", *[Stack("0.844", "[0.750, 0.922]"), "16"] * 3, "a few words of prose here")
    return t


def _print(t: FitTable, width: int) -> str:
    buf = io.StringIO()
    t.print(Console(file=buf, width=width, color_system=None))
    return buf.getvalue()


def test_layouts_from_one_line_to_records():
    one_line = _print(_table(), 200)
    assert "0.844 [0.750, 0.922]" in one_line and "first-arm pass^k [95% CI]" in one_line
    stacked = _print(_table(), 100)  # the intervals go below their figures; prose wraps at spaces
    assert "0.844 [0.750" not in stacked and stacked.count("[0.750, 0.922]") == 3
    split = _print(_table(), 50)  # one table per arm, each with the key column
    assert split.count("task ") >= 3 and split.count("[0.750, 0.922]") == 3
    for text, width in ((one_line, 200), (stacked, 100), (split, 50)):
        assert_whole(text, width)
    t = FitTable("ids")
    t.add_column("task")
    t.add_column("outcome", "right")
    t.add_row(Text(LONG_ID), "✓✗")  # a str cell is markup, like rich's: "[mms_issue]" would be a tag
    t.add_row("", "✗✗")  # an empty key repeats the row above
    records = _print(t, 100)
    assert records.splitlines()[1] == LONG_ID and records.count(LONG_ID) == 2 and "outcome: ✗✗" in records
    assert_whole(records, 100, ids=(LONG_ID,))


def test_wrapped_columns_never_break_a_word():
    t = FitTable(None)
    t.add_column("id")
    t.add_column("examples", wrap=True)
    t.add_row("x", ", ".join(f"task_number_{i}#0" for i in range(12)))
    text = _print(t, 60)
    assert all(f"task_number_{i}#0" in text for i in range(12))
    assert max(len(ln) for ln in text.splitlines()) <= 60


@pytest.mark.parametrize("columns", (60, 80))
def test_task_ids_are_whole_through_a_pipe_at_narrow_widths(tau2_root, columns):
    """`agentrig tasks list | …` with COLUMNS=60/80: every id on one line, never wrapped or cut —
    τ²'s telecom ids (longer than the line: printed whole) and the terminal built-ins."""
    env = {**_env(), "COLUMNS": str(columns)}
    data = ("--domain", "telecom", "--data", str(tau2_root))
    tasks = json.loads(piped("tasks", "list", *data, "--json", env=env))["tasks"]
    assert max(len(t["id"]) for t in tasks) > columns
    text = piped("tasks", "list", *data, env=env)
    cut_summaries = sum(t["summary"].endswith("…") for t in tasks)
    assert_whole(text, columns, ids=tuple(t["id"] for t in tasks), allowed_ellipses=cut_summaries)
    terminal = json.loads(piped("tasks", "list", "--bench", "terminal", "--json", env=env))["tasks"]
    ids = tuple(t["id"] for t in terminal)
    assert len(ids) >= 10
    text = piped("tasks", "list", "--bench", "terminal", env=env)
    assert_whole(text, columns, ids=ids)
    rows = [ln for ln in text.splitlines() if ln.startswith("│ ")]
    for i in ids:  # in the table (or its split tables), the id cell holds the whole id
        assert any(ln.split("│")[1].strip() == i for ln in rows), i
