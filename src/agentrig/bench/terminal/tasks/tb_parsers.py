"""Terminal-Bench 1's result parsers by name (a task.yaml's ``parser_name``), and the four beside pytest.

Terminal-Bench 0.2.18 ships five parsers (``parsers/parser_factory.py``): ``pytest`` (``parsers.py``
here), ``swebench``, ``sweperf``, ``mlebench`` and ``swelancer``. Each reads the text the tests
printed and yields named results that pass or fail; TB calls the task resolved when every one
passed, and records ``parse_error`` when the parser raises. ``read(parser_name, output)`` gives the
same results here (``Reading``: the tests, and a line saying what decided them).

The three marker parsers read one verdict word the adapter's test script prints between two marker
lines, and yield one result named ``tests``:

- ``swebench``: ``SWEBench results starts here`` … ``SWEBench results ends here``; the text between
  them, stripped, must be exactly ``PASSED`` (the adapter's grader prints ``PASSED`` or ``FAILED``
  after grading the test log as SWE-bench's harness does). Either marker absent from the output ->
  a parse error (TB raises: the tests could not run, e.g. the repository could not be fetched).
- ``sweperf``: the same with ``SWE-Perf results starts here`` / ``SWE-Perf results ends here``.
- ``mlebench``: ``MLEBench results starts here`` / ``MLEBench results ends here``, pass word
  ``ALL TESTS PASSED``; TB does not raise when a marker is missing, so neither do we: the task
  fails.

For all three the block is TB's: after the first start marker, up to the last end marker.

``swelancer`` yields one result named ``swelancer_task``, read from the whole output without
regard to case: ``swe lancer success`` anywhere passes; else ``swe lancer failure`` anywhere fails;
else the words ``user_tool`` and ``completed`` both present pass; else it fails. It never raises.

Where we differ from TB: TB reads its tmux pane, which holds the command line it typed before the
output and a fresh prompt after it (and, with ``run_tests_in_same_shell``, the agent's session
above); agentrig reads the verifier process's own output (stdout and stderr). A block that only
TB's pane would have spoiled — a start marker with no end marker after it, or (mlebench) an output
that is the pass word alone with no markers — is therefore read as TB's pane would have it: failed.
Apart from an agent's session (whose own output we do not let judge its work), the text the pane
adds holds none of the marker or indicator phrases, so every other verdict is TB's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from pydantic import BaseModel, Field

from .parsers import ParseError, TestResult, parse_pytest

__all__ = ["PARSER_NAMES", "Reading", "read", "unsupported_parser"]


class Reading(BaseModel):
    """What a parser read: the named results, whether it found the text it looks for (``found``:
    the pytest banner, the markers, an indicator), and what decided a marker parser's verdict."""

    tests: list[TestResult] = Field(default_factory=list)
    found: bool = True
    detail: str | None = None


def _result(name: str, passed: bool) -> TestResult:
    return TestResult(name=name, outcome="passed" if passed else "failed")


def _marked(output: str, start: str, end: str, word: str, *, required: bool, label: str) -> Reading:
    """TB's marker rule: the text after the first `start`, up to the last `end` after it, stripped,
    must be exactly `word`. `required`: a missing marker is a parse error (else the task fails)."""
    missing = [m for m in (start, end) if m not in output]
    if missing:
        if required:
            raise ParseError(f"no {label} results in the test output: the line {missing[0]!r} is missing "
                             "(the tests did not run to their end, or the grader could not run)")
        return Reading(tests=[_result("tests", False)], found=False,
                       detail=f"no {label} results in the test output (the line {missing[0]!r} is missing)")
    after = output.split(start, 1)[1]
    if end not in after:
        return Reading(tests=[_result("tests", False)],
                       detail=f"the {label} start marker has no end marker after it")
    block = after.rsplit(end, 1)[0].strip()
    ok = block == word
    shown = block if len(block) <= 80 else block[:77] + "..."
    return Reading(tests=[_result("tests", ok)],
                   detail=None if ok else f"the {label} result reads {shown!r} ({word!r} passes)")


def _swebench(output: str) -> Reading:
    return _marked(output, "SWEBench results starts here", "SWEBench results ends here", "PASSED",
                   required=True, label="SWE-bench")


def _sweperf(output: str) -> Reading:
    return _marked(output, "SWE-Perf results starts here", "SWE-Perf results ends here", "PASSED",
                   required=True, label="SWE-Perf")


def _mlebench(output: str) -> Reading:
    return _marked(output, "MLEBench results starts here", "MLEBench results ends here", "ALL TESTS PASSED",
                   required=False, label="MLE-bench")


def _swelancer(output: str) -> Reading:
    text = output.lower()
    if "swe lancer success" in text:
        ok, found, why = True, True, None
    elif "swe lancer failure" in text:
        ok, found, why = False, True, "the tests printed 'SWE Lancer failure'"
    elif "user_tool" in text and "completed" in text:
        ok, found, why = True, True, None
    else:
        ok, found = False, False
        why = "the output says neither 'SWE Lancer success' nor 'SWE Lancer failure', nor that user_tool completed"
    return Reading(tests=[_result("swelancer_task", ok)], found=found, detail=why)


def _pytest(output: str) -> Reading:
    return Reading(tests=parse_pytest(output))


_PARSERS: dict[str, Callable[[str], Reading]] = {
    "pytest": _pytest, "swebench": _swebench, "swelancer": _swelancer, "mlebench": _mlebench, "sweperf": _sweperf,
}
PARSER_NAMES: tuple[str, ...] = tuple(_PARSERS)  # Terminal-Bench 0.2.18's list, in its order


def read(parser_name: str, output: str) -> Reading:
    """The results `parser_name` reads in `output`; raises ParseError where TB's parser raises."""
    parser = _PARSERS.get(parser_name)
    if parser is None:
        raise ParseError(f"parser_name {parser_name!r} is not one of Terminal-Bench's parsers ({', '.join(PARSER_NAMES)})")
    return parser(output)


def unsupported_parser(task: Any) -> str | None:
    """The ``unsupported`` reason of a Terminal-Bench 1 task whose ``parser_name`` is none of
    Terminal-Bench's parsers — naming the file, the field and the fix — else None."""
    if getattr(task, "format", None) != "tb1" or task.parser_name in _PARSERS:
        return None
    return (f"unsupported: {Path(task.path) / 'task.yaml'}: parser_name: {task.parser_name!r} is not a parser "
            f"Terminal-Bench ships, so no verdict can be read from its tests' output; fix: set parser_name to "
            f"the one its tests print for: {', '.join(PARSER_NAMES)}")
