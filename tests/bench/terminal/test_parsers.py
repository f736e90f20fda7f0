"""The result parsers: pytest's short test summary (as Terminal-Bench reads it) and Harbor's reward file.

The pytest outputs are produced by running a real pytest on a small test file with each outcome.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agentrig.bench.terminal.tasks.parsers import ParseError, parse_pytest, parse_reward_dir, resolved

MIXED = '''
import pytest

def test_ok():
    pass

def test_bad():
    assert 1 == 2, "one is not two - really"

@pytest.mark.skip(reason="not here")
def test_skipped():
    pass

@pytest.mark.xfail(reason="known - bug")
def test_expected_failure():
    assert False

@pytest.mark.xfail(reason="fixed already")
def test_unexpected_pass():
    pass

@pytest.fixture
def broken():
    raise RuntimeError("fixture - broke")

def test_error(broken):
    pass

@pytest.mark.parametrize("value", ["a - b", "c"])
def test_param(value):
    assert value
'''


def _run_pytest(tmp_path: Path, source: str, *flags: str) -> str:
    test_file = tmp_path / "test_outputs.py"
    test_file.write_text(source)
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", str(test_file), *flags],
                          capture_output=True, text=True, cwd=tmp_path, timeout=60)
    return proc.stdout + proc.stderr


def test_each_pytest_outcome_read_from_the_rA_summary(tmp_path):
    out = _run_pytest(tmp_path, MIXED, "-rA")
    got = {t.name: t.outcome for t in parse_pytest(out) if t.outcome != "skipped"}
    assert got == {
        "test_ok": "passed",
        "test_bad": "failed",
        "test_expected_failure": "xfail",
        "test_unexpected_pass": "xpass",
        "test_error": "error",
        "test_param[a - b]": "passed",
        "test_param[c]": "passed",
    }
    # SKIPPED lines carry no '::' id in pytest's summary: the whole location is the name, and it passes
    skipped = [t for t in parse_pytest(out) if t.outcome == "skipped"]
    assert len(skipped) == 1 and skipped[0].passed
    passing = {t.name for t in parse_pytest(out) if t.passed}
    assert {"test_ok", "test_expected_failure", "test_param[c]"} <= passing
    assert not {"test_bad", "test_unexpected_pass", "test_error"} & passing
    assert resolved(parse_pytest(out)) is False


def test_all_passing_run_is_resolved(tmp_path):
    out = _run_pytest(tmp_path, "def test_a():\n    pass\n\ndef test_b():\n    pass\n", "-rA")
    tests = parse_pytest(out)
    assert [t.name for t in tests] == ["test_a", "test_b"]
    assert resolved(tests) is True


def test_an_xpass_alone_fails_the_task(tmp_path):
    src = "import pytest\n\n@pytest.mark.xfail\ndef test_x():\n    pass\n"
    tests = parse_pytest(_run_pytest(tmp_path, src, "-rA"))
    assert [(t.name, t.outcome) for t in tests] == [("test_x", "xpass")]
    assert resolved(tests) is False


def test_no_summary_is_a_parse_error(tmp_path):
    # without -rA pytest prints no summary when every test passes: Terminal-Bench cannot read it
    out = _run_pytest(tmp_path, "def test_a():\n    pass\n", "-v")
    assert "test_outputs.py::test_a PASSED" in out
    with pytest.raises(ParseError, match="short test summary info"):
        parse_pytest(out)
    with pytest.raises(ParseError):
        parse_pytest("bash: pytest: command not found\n")


def test_default_report_chars_still_list_failures(tmp_path):
    out = _run_pytest(tmp_path, "def test_a():\n    pass\n\ndef test_b():\n    assert 0\n")
    tests = parse_pytest(out)
    assert [(t.name, t.outcome) for t in tests] == [("test_b", "failed")]  # only what -rfE reports


def test_collection_error_fails(tmp_path):
    out = _run_pytest(tmp_path, "import no_such_module_here\n\ndef test_a():\n    pass\n", "-rA")
    tests = parse_pytest(out)
    assert tests and not resolved(tests)
    assert tests[0].outcome == "error"


def test_banner_case_and_lines_as_terminal_bench_reads_them():
    out = (
        "PASSED t.py::test_before_banner\n"  # before the banner: not read
        "==== Short Test Summary Info ====\n"
        "PASSED ../tests/test_outputs.py::test_one\n"
        "FAILED ../tests/test_outputs.py::TestGroup::test_two - AssertionError: a - b\n"
        "XFAIL ../tests/test_outputs.py::test_three - reason: flaky - known\n"
        "FAILED /tests/test_outputs.py::test_four - FileNotFoundError: [Errno 2] No such file\n"
        "some free text line\n"
        "PASSED\n"
        "======= 1 failed, 1 passed, 1 xfailed in 0.12s =======\n"
    )
    got = {t.name: t.outcome for t in parse_pytest(out)}
    assert got == {"test_one": "passed", "TestGroup::test_two": "failed", "test_three": "xfail",
                   "test_four": "failed"}


def test_same_name_twice_keeps_the_worse_outcome():
    # a test that passed but whose teardown errored appears twice with -rA
    out = ("=== short test summary info ===\n"
           "ERROR t.py::test_a - RuntimeError: teardown\n"
           "PASSED t.py::test_a\n")
    tests = parse_pytest(out)
    assert [(t.name, t.outcome) for t in tests] == [("test_a", "error")]
    assert resolved(tests) is False


# ---- Harbor reward files ---------------------------------------------------------------------


def test_reward_txt(tmp_path):
    (tmp_path / "reward.txt").write_text("1\n")
    r = parse_reward_dir(tmp_path)
    assert (r.reward, r.source, r.components) == (1.0, "reward.txt", {"reward": 1.0})
    (tmp_path / "reward.txt").write_text("0.25")
    assert parse_reward_dir(tmp_path).reward == 0.25


def test_reward_json_wins_and_keeps_numeric_components(tmp_path):
    (tmp_path / "reward.txt").write_text("0")
    (tmp_path / "reward.json").write_text(json.dumps({"reward": 0.5, "port": 1, "debug": 0, "note": "x", "ok": True}))
    r = parse_reward_dir(tmp_path)
    assert r.source == "reward.json" and r.reward == 0.5
    assert r.components == {"reward": 0.5, "port": 1.0, "debug": 0.0}


def test_reward_json_without_reward_key(tmp_path):
    (tmp_path / "reward.json").write_text(json.dumps({"score": 0.75}))
    assert parse_reward_dir(tmp_path).reward == 0.75  # a single number is the reward
    (tmp_path / "reward.json").write_text(json.dumps({"a": 1, "b": 0}))
    with pytest.raises(ParseError, match="no 'reward' field"):
        parse_reward_dir(tmp_path)
    (tmp_path / "reward.txt").write_text("1")
    assert parse_reward_dir(tmp_path).reward == 1.0  # reward.txt beside it gives the scalar


@pytest.mark.parametrize("content, match", [
    ("", "empty"),
    ("yes", "not a number"),
    ("1.5", "outside"),
    ("-0.1", "outside"),
    ("nan", "finite"),
])
def test_bad_reward_txt(tmp_path, content, match):
    (tmp_path / "reward.txt").write_text(content)
    with pytest.raises(ParseError, match=match):
        parse_reward_dir(tmp_path)


@pytest.mark.parametrize("content, match", [
    ("", "empty"),
    ("{not json", "not JSON"),
    ("[1]", "JSON object"),
    ('{"reward": "1"}', "not a number"),
    ('{"reward": 2}', "outside"),
])
def test_bad_reward_json(tmp_path, content, match):
    (tmp_path / "reward.json").write_text(content)
    with pytest.raises(ParseError, match=match):
        parse_reward_dir(tmp_path)


def test_missing_reward_file(tmp_path):
    with pytest.raises(ParseError, match="no reward file"):
        parse_reward_dir(tmp_path)
