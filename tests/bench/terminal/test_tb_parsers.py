"""Terminal-Bench 1's parsers beside pytest (``tb_parsers``): swebench, sweperf, mlebench, swelancer.

Each is read on outputs shaped as the adapters' test scripts print them (written here: a bash
trace, the repository's pytest run, then the grader's verdict between its markers), and judged as
Terminal-Bench 0.2.18's parser judges them; a parser_name none of TB's parsers has is the task's
``unsupported`` verdict, never a load error.
"""

from __future__ import annotations

import textwrap

import pytest

from agentrig.bench.terminal.availability import task_support
from agentrig.bench.terminal.tasks.parsers import ParseError, resolved
from agentrig.bench.terminal.core.base import SANDBOX_KINDS
from agentrig.bench.terminal.tasks.taskfile import load_task
from agentrig.bench.terminal.tasks.tb_parsers import PARSER_NAMES, read, unsupported_parser

from .run_support import write_task

# what the SWE-bench adapter's run-tests.sh prints: the setup's bash trace, the repository's
# tests (pytest -rA, as SWE-bench's harness runs them), then its grader's verdict on that log
SWEBENCH_TESTS = textwrap.dedent("""\
    + cd /testbed
    + set +x
    + python -m pip install -e '.[test]' --verbose
    Successfully installed astropy-5.0.dev0
    + git checkout d16bfe05 astropy/modeling/tests/test_separable.py
    Updated 1 path from 6a1c2f9
    + git apply --check /tmp/test_patch.diff
    + git apply /tmp/test_patch.diff
    ============================= test session starts ==============================
    collected 15 items

    astropy/modeling/tests/test_separable.py ..........F....                  [100%]

    =========================== short test summary info ============================
    PASSED astropy/modeling/tests/test_separable.py::test_coord_matrix
    {line}
    ========================= {summary} in 0.41s =========================
    Updated 1 path from 6a1c2f9
    """)


def swebench_output(verdict: str, *, failing: bool = False) -> str:
    line = ("FAILED astropy/modeling/tests/test_separable.py::test_separable[compound_model6-result6] - assert False"
            if failing else "PASSED astropy/modeling/tests/test_separable.py::test_separable[compound_model6-result6]")
    tests = SWEBENCH_TESTS.format(line=line, summary="1 failed, 14 passed" if failing else "15 passed")
    return tests + f"SWEBench results starts here\n{verdict}\nSWEBench results ends here\n"


def test_the_parser_names_are_terminal_benchs_five():
    assert PARSER_NAMES == ("pytest", "swebench", "swelancer", "mlebench", "sweperf")


def test_swebench_passes_when_its_grader_says_passed():
    reading = read("swebench", swebench_output("PASSED"))
    assert [(t.name, t.outcome) for t in reading.tests] == [("tests", "passed")]
    assert resolved(reading.tests) and reading.detail is None


def test_swebench_reads_the_graders_verdict_not_the_test_lines():
    # every test line passed, but the grader (FAIL_TO_PASS/PASS_TO_PASS) says FAILED: failed
    reading = read("swebench", swebench_output("FAILED"))
    assert [(t.name, t.outcome) for t in reading.tests] == [("tests", "failed")]
    assert not resolved(reading.tests) and "reads 'FAILED'" in reading.detail
    # a failing test line does not fail a task the grader resolved (the test is not among its lists)
    assert resolved(read("swebench", swebench_output("PASSED", failing=True)).tests)


def test_swebench_without_its_markers_is_a_parse_error():
    # the repository could not be fetched: the grader never ran (TB raises: parse_error)
    out = ("+ cd /testbed\nfatal: unable to access 'https://github.com/astropy/astropy/': "
           "Could not resolve host: github.com\n")
    with pytest.raises(ParseError, match="SWEBench results starts here"):
        read("swebench", out)
    with pytest.raises(ParseError, match="SWEBench results ends here"):
        read("swebench", out + "SWEBench results starts here\n")  # cut off after the start line
    with pytest.raises(ParseError):
        read("swebench", swebench_output("PASSED").replace("SWEB", "SweB"))  # the markers are case-sensitive


@pytest.mark.parametrize("tail, why", [
    ("SWEBench results starts here\n  PASSED  \n\nSWEBench results ends here\n", None),  # stripped
    ("SWEBench results starts here\nPASSED\nextra\nSWEBench results ends here\n", "reads"),
    ("SWEBench results starts here\npassed\nSWEBench results ends here\n", "reads"),  # the word as printed
    # an end marker only before the start (TB's pane holds the prompt after it): failed
    ("SWEBench results ends here\nSWEBench results starts here\nPASSED\n", "no end marker after it"),
    # first start to last end: two verdicts make one block that is not the word
    ("SWEBench results starts here\nPASSED\nSWEBench results ends here\n"
     "SWEBench results starts here\nPASSED\nSWEBench results ends here\n", "reads"),
])
def test_swebench_reads_the_block_from_the_first_start_to_the_last_end(tail, why):
    reading = read("swebench", SWEBENCH_TESTS.format(line="", summary="15 passed") + tail)
    assert resolved(reading.tests) is (why is None)
    assert (reading.detail is None) if why is None else (why in reading.detail)


def test_sweperf_reads_its_own_markers():
    perf = ("Running benchmark: test_groupby_sum (20 repeats)\nbaseline 1.842 s, patched 1.203 s, speedup 1.53x\n"
            "improvement is significant (p=0.003)\n")
    ok = read("sweperf", perf + "SWE-Perf results starts here\nPASSED\nSWE-Perf results ends here\n")
    assert [(t.name, t.outcome) for t in ok.tests] == [("tests", "passed")]
    slow = read("sweperf", perf + "SWE-Perf results starts here\nFAILED\nSWE-Perf results ends here\n")
    assert not resolved(slow.tests)
    with pytest.raises(ParseError, match="SWE-Perf"):  # SWE-bench's markers are not SWE-Perf's
        read("sweperf", perf + "SWEBench results starts here\nPASSED\nSWEBench results ends here\n")


def test_mlebench_passes_only_on_all_tests_passed_and_never_raises():
    grading = ('{"competition_id": "spaceship-titanic", "score": 0.80137, "gold_threshold": 0.82066, '
               '"valid_submission": true, "above_median": true}\n')
    ok = read("mlebench", grading + "MLEBench results starts here\nALL TESTS PASSED\nMLEBench results ends here\n")
    assert [(t.name, t.outcome) for t in ok.tests] == [("tests", "passed")] and ok.found
    bad = read("mlebench", grading + "MLEBench results starts here\nSOME TESTS FAILED\nMLEBench results ends here\n")
    assert not resolved(bad.tests) and "SOME TESTS FAILED" in bad.detail
    # no markers: TB does not raise, and its pane (the command line, the prompt) never equals the word
    for out in ("ALL TESTS PASSED\n", grading + "submission.csv not found\n"):
        none = read("mlebench", out)
        assert not resolved(none.tests) and not none.found and "missing" in none.detail


@pytest.mark.parametrize("output, passed", [
    ("Running e2e test for issue 15193\n1 passed in 63.20s\nSWE Lancer success\n", True),
    ("test_expensify_0000 ... FAIL\nswe lancer FAILURE: the expected page never loaded\n", False),
    # success wins over failure, as TB checks it first; the words in any case
    ("swe lancer failure on the first try\nretrying\nSWE LANCER SUCCESS\n", True),
    # a manager task: the user tool ran to its end
    ("Starting user_tool for the selected proposal...\nuser_tool run Completed: proposal 2 chosen\n", True),
    ("npm ERR! could not resolve dependency\n", False),
    ("user_tool started\n", False),
])
def test_swelancer_reads_its_indicators_anywhere(output, passed):
    reading = read("swelancer", output)
    assert [(t.name, t.outcome) for t in reading.tests] == [("swelancer_task", "passed" if passed else "failed")]


def test_pytest_by_name_is_the_pytest_parser():
    out = ("=========================== short test summary info ============================\n"
           "PASSED tests/test_outputs.py::test_a\nFAILED tests/test_outputs.py::test_b - assert 1 == 2\n")
    assert [(t.name, t.outcome) for t in read("pytest", out).tests] == [("test_a", "passed"), ("test_b", "failed")]
    with pytest.raises(ParseError, match="short test summary"):
        read("pytest", "bash: pytest: command not found\n")


def test_a_parser_terminal_bench_lacks_loads_and_is_unsupported_on_every_sandbox(tmp_path):
    d = write_task(tmp_path, "junit-task")
    (d / "task.yaml").write_text((d / "task.yaml").read_text().replace("parser_name: pytest", "parser_name: junit"))
    task = load_task(d)  # no load error: the verdict is the task's
    assert task.parser_name == "junit"
    reason = unsupported_parser(task)
    assert reason.startswith(f"unsupported: {d / 'task.yaml'}: parser_name: 'junit' is not a parser")
    assert "fix: set parser_name to" in reason and "swebench" in reason
    for kind in SANDBOX_KINDS:
        found = task_support(task, kind)
        assert not found.ok and found.exclusion == "unsupported" and found.reason == reason, kind
    for name in PARSER_NAMES:  # every parser of TB's loads and is supported
        (d / "task.yaml").write_text(f"instruction: x\nparser_name: {name}\n")
        assert unsupported_parser(load_task(d)) is None and task_support(load_task(d), "docker").ok


async def test_the_verifier_never_plays_the_tests_of_a_task_no_parser_can_read(tmp_path):
    from agentrig.bench.terminal.verifier import EXCLUDED_MODES, verify

    d = write_task(tmp_path, "junit-task")
    (d / "task.yaml").write_text("instruction: x\nparser_name: junit\n")

    class NoSandbox:  # a played test would call it: the verdict must come before any command
        def __getattr__(self, name):
            raise AssertionError(f"the verifier used the sandbox ({name}) for a task it cannot judge")

    result = await verify(NoSandbox(), load_task(d))
    assert result.excluded and result.failure_mode == "unsupported" and "unsupported" in EXCLUDED_MODES
    assert result.reward == 0.0 and "parser_name: 'junit'" in result.detail
