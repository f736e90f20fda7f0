"""Reading a verifier's result: pytest's short test summary (Terminal-Bench 1) and Harbor's reward file.

Terminal-Bench 1 (parser ``pytest``) reads the text the tests printed, cuts it at pytest's
``short test summary info`` banner and reads one result per line after it. We follow its rules:

- no banner at all -> a parse error (TB raises; the trial's failure mode is ``parse_error``). Note
  that pytest prints the banner only when something is to be reported: always with ``-rA`` (the
  template's flag), but with the default ``-rfE`` only when a test failed. The per-test lines of
  ``-v`` (``t.py::test_a PASSED [50%]``) before the banner are not read, as in TB;
- a line counts when its first word (a trailing ``:`` removed) is an outcome: PASSED, XFAIL and
  SKIPPED pass; FAILED, XPASS and ERROR fail; other lines (the ``=== 1 failed in 0.1s ===``
  footer, free text) are ignored;
- the test's name is the part of its node id after the first ``::`` (the whole id when it has
  none, e.g. a collection error on a file);
- resolved = every read test passed (as in TB, a banner followed by no readable line resolves).

Two deliberate differences, both only ever turning a pass into a fail: the `` - message`` tail
is cut from every outcome (TB cuts it from FAILED lines only, so an XFAIL/ERROR test's name kept
its message), and when two lines give the same name the worse outcome is kept (TB keeps the last,
so a teardown ERROR listed before the test's PASSED line could be hidden).

Harbor: the test script writes ``/logs/verifier/reward.json`` (an object of numbers, the main
one under ``"reward"``) or ``reward.txt`` (one number); JSON wins when both exist, an empty or
unreadable file is an error, and agentrig requires the reward to lie in [0, 1].
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from agentrig.errors import Signal

PytestOutcome = Literal["passed", "failed", "skipped", "xfail", "xpass", "error"]
PASSING: frozenset[str] = frozenset({"passed", "xfail", "skipped"})
_OUTCOMES = {"PASSED": "passed", "FAILED": "failed", "SKIPPED": "skipped",
             "XFAIL": "xfail", "XPASS": "xpass", "ERROR": "error"}
_BANNER = re.compile(r"=+\s*short test summary info\s*=+", re.IGNORECASE)


class ParseError(Signal, ValueError):
    """The verifier's output or reward file could not be read (failure mode ``parse_error``)."""


class TestResult(BaseModel):
    __test__ = False  # not a pytest test class

    name: str
    outcome: PytestOutcome

    @property
    def passed(self) -> bool:
        return self.outcome in PASSING


def _node_name(rest: str) -> str:
    """The test name from ``<nodeid>[ - message]``: the id cut at its message, then after ``::``."""
    rest = rest.strip()
    dash, bracket = rest.find(" - "), rest.find("[")
    # a parametrized id ("t.py::test_x[a - b]") may hold " - " inside its brackets; a "[" after
    # the first " - " belongs to the message ("... - FileNotFoundError: [Errno 2] ...")
    if bracket != -1 and (dash == -1 or bracket < dash) and "::" in rest[:bracket]:
        close = rest.find("]", bracket)
        nodeid = rest[: close + 1] if close != -1 else rest
    else:
        nodeid = rest.split(" - ", 1)[0]
    nodeid = nodeid.strip()
    return nodeid.split("::", 1)[1] if "::" in nodeid else nodeid


def parse_pytest(output: str) -> list[TestResult]:
    """The tests read from pytest's short test summary; raises ParseError when it has none."""
    parts = _BANNER.split(output, maxsplit=1)
    if len(parts) < 2:
        raise ParseError("no 'short test summary info' section in the test output "
                         "(pytest crashed or was not run, or ran without -rA and every test passed)")
    found: dict[str, TestResult] = {}
    for line in parts[1].splitlines():
        words = line.split(maxsplit=1)
        if len(words) < 2:
            continue
        outcome = _OUTCOMES.get(words[0].strip().rstrip(":"))
        if outcome is None:
            continue
        name = _node_name(words[1])
        if not name:
            continue
        result = TestResult(name=name, outcome=outcome)  # type: ignore[arg-type]
        prior = found.get(name)
        if prior is None or (prior.passed and not result.passed):
            found[name] = result
    return list(found.values())


def resolved(tests: list[TestResult]) -> bool:
    """Terminal-Bench's rule: every test read passed."""
    return all(t.passed for t in tests)


class HarborReward(BaseModel):
    reward: float
    components: dict[str, float]  # every numeric field of reward.json (or {"reward": x})
    source: Literal["reward.json", "reward.txt"]


def _number(value: object, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ParseError(f"{where}: {value!r} is not a number")
    number = float(value)
    if math.isnan(number) or math.isinf(number):
        raise ParseError(f"{where}: {value!r} is not a finite number")
    return number


def _read_txt(path: Path) -> float:
    text = path.read_text(errors="replace").strip()
    if not text:
        raise ParseError(f"{path.name} is empty")
    try:
        number = float(text)
    except ValueError:
        raise ParseError(f"{path.name} holds {text[:80]!r}, not a number") from None
    return _number(number, path.name)


def parse_reward_dir(verifier_dir: Path) -> HarborReward:
    """Harbor's reward from ``reward.json`` (preferred) or ``reward.txt`` in `verifier_dir`."""
    js, txt = verifier_dir / "reward.json", verifier_dir / "reward.txt"
    if js.is_file():
        raw = js.read_text(errors="replace").strip()
        if not raw:
            raise ParseError("reward.json is empty")
        try:
            data = json.loads(raw)
        except ValueError as exc:
            raise ParseError(f"reward.json is not JSON ({exc})") from None
        if not isinstance(data, dict):
            raise ParseError("reward.json must be a JSON object such as {\"reward\": 1.0}")
        numbers = {k: float(v) for k, v in data.items()
                   if isinstance(v, (int, float)) and not isinstance(v, bool)
                   and math.isfinite(float(v))}
        if "reward" in data:
            reward = _number(data["reward"], "reward.json field 'reward'")
        elif txt.is_file():
            reward = _read_txt(txt)
        elif len(numbers) == 1:
            reward = next(iter(numbers.values()))
        else:
            raise ParseError("reward.json has no 'reward' field (and no reward.txt beside it)")
        result = HarborReward(reward=reward, components=numbers or {"reward": reward}, source="reward.json")
    elif txt.is_file():
        reward = _read_txt(txt)
        result = HarborReward(reward=reward, components={"reward": reward}, source="reward.txt")
    else:
        raise ParseError("the tests wrote no reward file (/logs/verifier/reward.txt or reward.json)")
    if not 0.0 <= result.reward <= 1.0:
        raise ParseError(f"{result.source}: reward {result.reward:g} is outside [0, 1]")
    return result
