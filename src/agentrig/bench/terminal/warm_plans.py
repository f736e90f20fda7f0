"""Which test scripts the warm verifier may play: one plain pytest run, and for Harbor the reward
file written from its status (``RewardPlan``).

``stage_tests`` (``staging.py``) asks, after the offline rewrite: is the whole script one pytest
run — TB1's ``run-tests.sh`` whose only command left is the pytest line (plus the template's
``$PWD`` check) — then ``plain_pytest`` gives pytest's arguments; is it a Harbor ``test.sh`` that
runs one such pytest and then writes the reward file from its exit status and nothing else —
then ``harbor_reward`` gives the plan. Any doubt answers None: the cold command runs the script.
"""

from __future__ import annotations

import os
import re
from typing import Literal

from pydantic import BaseModel, Field

from . import testscripts


class RewardPlan(BaseModel):
    """A Harbor ``test.sh`` (as rewritten) that runs one plain pytest and then writes the reward
    file from pytest's exit status and nothing else: what the warm verifier needs to play it."""

    script: str  # the script's path in the sandbox (for the message of a failed write)
    pytest_args: list[str]
    cd: str | None = None  # the directory the script changes to before pytest
    path: str  # the reward file the script writes
    passed: str  # what it writes there when pytest exits 0 (echo's output)
    failed: str | None  # … otherwise; None: `set -e` stops the script at the failed pytest first
    errexit: bool = False  # `set -e` is on when the reward is written (a failed write ends the script)
    exit: Literal["last", "zero", "pytest"] = "last"  # the script's status: its last command's, `exit 0`, `exit $status`
    programs: list[str] = Field(default_factory=list)  # programs the script runs besides bash and pytest


_PWD_CHECK = ('if [ "$PWD" = "/" ]; then', "exit 1", "fi")
_SET = re.compile(r"set\s+(-e|-eu|-ue|-euo\s+pipefail|-eo\s+pipefail|-o\s+pipefail)")
_PLAIN_ARG = re.compile(r"[A-Za-z0-9_./:=,+@%-]+")


def _commands(text: str) -> list[str]:
    return [ln for ln in (raw.strip() for raw in testscripts._logical_lines(text))
            if ln and not ln.startswith("#") and not ln.startswith(": # agentrig offline verifier")]


def _flatten(text: str, scripts: dict[str, str], tests: str, level: int = 0) -> list[tuple[str, int]] | None:
    """The script's commands with ``source $TEST_DIR/x.sh`` inlined and a last ``bash
    $TEST_DIR/y.sh`` inlined one shell level down: (command, level); None if neither fits."""
    lines = _commands(text)
    out: list[tuple[str, int]] = []
    for n, line in enumerate(lines):
        m = re.fullmatch(r"(source|\.|bash)\s+(?:\$\{?TEST_DIR\}?|" + re.escape(tests) + r")/([\w.-]+\.sh)", line)
        if m is None:
            out.append((line, level))
            continue
        if m.group(2) not in scripts or level > 3 or (m.group(1) == "bash" and n != len(lines) - 1):
            return None
        inner = _flatten(scripts[m.group(2)], scripts, tests, level + (m.group(1) == "bash"))
        if inner is None:
            return None
        out += inner
    return out


def plain_pytest(text: str, scripts: dict[str, str], pytest_cmd: str, tests: str) -> tuple[list[str], bool, int] | None:
    """(pytest's arguments after the flags, whether the $PWD check is there, SHLVL) when the
    rewritten run-tests.sh (and what it sources or runs last) runs nothing but one pytest line."""
    flat = _flatten(text, scripts, tests)
    if flat is None:
        return None
    lines = [line for line, _ in flat]
    args: list[str] | None = None
    check, shlvl, i = False, 1, 0
    while i < len(lines):
        line = lines[i]
        if line == _PWD_CHECK[0] and lines[i + 2:i + 4] == list(_PWD_CHECK[1:]) \
                and re.fullmatch(r'echo "[^"$`\\]*"', lines[i + 1]) and not check and args is None:
            check, i = True, i + 4
            continue
        if _SET.fullmatch(line) and args is None:
            i += 1
            continue
        if not line.startswith(pytest_cmd + " ") or args is not None:
            return None
        rest = line[len(pytest_cmd) + 1:].replace("${TEST_DIR}", tests).replace("$TEST_DIR", tests).split()
        if not rest or not all(_PLAIN_ARG.fullmatch(w) for w in rest):
            return None
        args, shlvl, i = rest, 1 + flat[i][1], i + 1
    return (args, check, shlvl) if args else None


_STATUS_TEST = re.compile(r'if \[\[? "?\$\{?(?P<var>\?|[A-Za-z_]\w*)\}?"? (?P<op>-eq|-ne|==?|!=) "?0"? \]\]?; then')
_ECHO = re.compile(r"""echo (?P<q>["']?)(?P<value>[0-9.]+)(?P=q) ?> ?(?P<r>["']?)(?P<path>[\w./-]+)(?P=r)""")
_NO_UV = re.compile(r"if ! command -v [\w.-]+(?: ?&> ?/dev/null| ?> ?/dev/null(?: 2>&1)?| 2>&1)?; then")


def _errexit(line: str, errexit: bool) -> bool | None:
    """`set` with -e/+e/-u/-o pipefail …: whether errexit is on after it; None if not such a line."""
    words = line.split()
    if words[:1] != ["set"] or len(words) < 2:
        return None
    option: str | None = None
    for word in words[1:]:
        if option is not None:
            if word not in ("pipefail", "errexit", "nounset"):
                return None
            errexit = option == "-" if word == "errexit" else errexit
            option = None
        elif re.fullmatch(r"[-+](?:[eu]+o?|o)", word):
            errexit = word[0] == "-" if "e" in word else errexit
            option = word[0] if word.endswith("o") else None
        else:
            return None
    return None if option is not None else errexit


def _harbor_prelude(lines: list[str], pytest_cmd: str, logs: str) -> tuple | None:
    """Walk the set-up lines up to the pytest line: (its arguments, whether it is `if PYTEST;
    then`, its index, errexit there, the $PWD check, the `cd` target, the programs run); None
    when a line is not one the warm verifier can play or skip."""
    errexit, check, cd, programs, i = False, False, None, {"mkdir"}, 0  # the cold command itself runs mkdir
    while i < len(lines):
        line, after = lines[i], lines[i + 1:i + 4]
        if (state := _errexit(line, errexit)) is not None:
            errexit, i = state, i + 1
        elif re.fullmatch(rf'mkdir -p "?{re.escape(logs)}/?"?', line):
            i += 1
        elif re.fullmatch(rf'rm -f "?{re.escape(logs)}/[\w.-]+"?', line):
            programs.add("rm")  # the directory is empty until pytest runs: nothing to remove
            i += 1
        elif line == _PWD_CHECK[0] and after[1:] == list(_PWD_CHECK[1:]) and not check and cd is None \
                and re.fullmatch(r'echo "[^"$`\\]*"', after[0]):
            check, i = True, i + 4
        elif _NO_UV.fullmatch(line) and after[:1] == ["fi"]:  # its body became `:` lines
            i += 2
        elif (m := re.fullmatch(r'cd "?(/[\w./-]*?)/?"?(?: \|\| exit(?: \d+)?)?', line)) and cd is None \
                and os.path.normpath(m.group(1) or "/") == (m.group(1) or "/"):
            cd, i = m.group(1) or "/", i + 1  # a failed cd: the warm child exits COLD and the script runs
        else:
            if_form = line.startswith("if ") and line.endswith("; then")
            call = line[3:-6] if if_form else line
            if not call.startswith(pytest_cmd + " "):
                return None
            args = call[len(pytest_cmd) + 1:].split()
            if not args or not all(_PLAIN_ARG.fullmatch(w) for w in args):
                return None
            return args, if_form, i, errexit, check, cd, programs
    return None


def harbor_reward(text: str, pytest_cmd: str, tests: str, logs: str) -> tuple[RewardPlan, bool] | None:
    """The rewritten Harbor ``test.sh`` as (a plan, whether it has the template's ``$PWD`` check)
    when it is: set-up lines the warm verifier can play or skip (``set``, ``mkdir -p``/``rm -f``
    in the reward directory, the ``$PWD`` check, an emptied ``if ! command -v uv``, one ``cd``),
    one plain pytest line, the reward file written from its status (``$?``, ``status=$?`` or
    ``if pytest; then``), then nothing or ``exit 0`` / ``exit $status``. Else None: cold."""
    lines = [ln.replace("${TEST_DIR}", tests).replace("$TEST_DIR", tests) for ln in _commands(text)]
    prelude = _harbor_prelude(lines, pytest_cmd, logs)
    if prelude is None:
        return None
    args, if_form, i, errexit, check, cd, programs = prelude
    i, var, stops, then_passes = i + 1, "?", False, True
    if not if_form:  # PYTEST, then [status=$?] and `if [ $status -eq 0 ]; then`
        if i < len(lines) and (m := re.fullmatch(r"([A-Za-z_]\w*)=\$\?", lines[i])):
            var, i = m.group(1), i + 1
        stops = errexit  # set -e: a failed pytest ends the script there, before any write
        while var != "?" and i < len(lines) and (state := _errexit(lines[i], errexit)) is not None:
            errexit, i = state, i + 1
        m = _STATUS_TEST.fullmatch(lines[i]) if i < len(lines) else None
        if m is None or m.group("var") != var:
            return None
        then_passes, i = m.group("op") in ("-eq", "=", "=="), i + 1
    block = lines[i:i + 4]
    writes = [_ECHO.fullmatch(block[n]) if len(block) > n else None for n in (0, 2)]
    if len(block) < 4 or block[1] != "else" or block[3] != "fi" or None in writes \
            or {w.group("path") for w in writes} != {f"{logs}/reward.txt"}:
        return None
    exits = {(): "last", ("exit 0",): "zero", ("exit $?",): "last"}
    if var != "?":
        exits.update({(f"exit ${var}",): "pytest", (f'exit "${var}"',): "pytest", (f"exit ${{{var}}}",): "pytest"})
    end = exits.get(tuple(lines[i + 4:]))
    if end is None:
        return None
    passed, failed = writes if then_passes else writes[::-1]
    plan = RewardPlan(script=f"{tests}/test.sh", pytest_args=args, cd=cd, path=f"{logs}/reward.txt",
                      passed=passed.group("value") + "\n", failed=None if stops else failed.group("value") + "\n",
                      errexit=errexit, exit=end, programs=sorted(programs))
    return plan, check


# ---- the plan: which command, which scripts --------------------------------------------------
