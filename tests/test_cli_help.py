"""``--help`` of every command and sub-command shows its help texts as written: bracketed words
("[[arms]]", "[run] dir", "RUN_DIR[:ARM]") are text, not markup that vanishes. The command tree is
walked, and so are the commands of every playable benchmark behind ``--bench KIND`` (``agentrig tasks
…``, ``agentrig audit``), so commands added later are checked too."""

from __future__ import annotations

import re

import pytest
import typer
from typer.testing import CliRunner

from agentrig.benchmark import get_benchmark, playable_kinds
from agentrig.cli import app

WIDTH = 100
BRACKETED = re.compile(r"\[\[?[^\[\]]+\]\]?")  # "[run]", "[[arms]]", "[:ARM]"
TYPE_LABEL = re.compile(r"<list\[|<(?:str|int|float|bool|path|Path|datetime)>")  # typer's type labels


def _tree(command, path: tuple[str, ...] = ()):
    yield path, command
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        yield from _tree(sub, (*path, name))


def _source_texts(command) -> list[str]:
    texts = [command.help, command.short_help, command.epilog]
    texts += [getattr(p, "help", None) for p in command.params]
    return [t for t in texts if t]


def _flat(text: str) -> str:
    return " ".join(text.split())


def _as_command(found):
    if not isinstance(found, typer.Typer):  # one function: a one-command app, as the dispatcher makes it
        one = typer.Typer()
        one.command()(found)
        found = one
    return typer.main.get_command(found)


def _benchmark_cases() -> list[tuple[tuple[str, ...], object]]:
    """(the arguments before --help, the command whose help texts they show) of each playable
    benchmark's own commands, reached through ``--bench KIND``."""
    cases = []
    for kind in playable_kinds():
        bench = get_benchmark(kind)
        if (tasks := bench.tasks_app()) is not None:
            for path, command in _tree(_as_command(tasks)):
                if path:
                    cases.append((("tasks", *path, "--bench", kind), command))
        if (audit := bench.audit_command()) is not None:
            cases.append((("audit", "--bench", kind), _as_command(audit)))
    return cases


COMMANDS = list(_tree(typer.main.get_command(app)))


def _check_help(path: tuple[str, ...], command) -> None:
    res = CliRunner().invoke(app, [*path, "--help"], terminal_width=WIDTH, env={"COLUMNS": str(WIDTH)})
    assert res.exit_code == 0, res.output
    shown = _flat(res.output)
    assert shown.startswith("Usage: ") and "╭" not in res.output  # plain help: no Rich panel, no markup parsed
    for text in _source_texts(command):
        for word in BRACKETED.findall(text):
            assert _flat(word) in shown, f"`agentrig {' '.join(path)} --help` lost {word!r} of {text!r}"
    if command.help:  # the command's own description, whole (wrapping may break a line after a hyphen)
        assert re.sub(r"\s", "", command.help.split("\n\n")[0]) in re.sub(r"\s", "", shown)
    assert max(len(line) for line in res.output.splitlines()) <= WIDTH
    # conventional metavars: EXPERIMENT, RUN_DIRS..., --dir PATH — not typer's {experiment} or <list[Path]>
    usage = res.output.split("\n\n")[0]
    assert "{" not in usage and "}" not in usage, f"`agentrig {' '.join(path)} --help`: {usage!r}"
    leftover = TYPE_LABEL.findall(res.output)
    assert not leftover, f"`agentrig {' '.join(path)} --help` shows {leftover}"
    for param in command.params:
        if param.param_type_name == "argument":
            assert (param.metavar or param.name.upper()) in usage, (path, param.name, usage)


def test_the_tree_holds_every_command():
    paths = {" ".join(p) for p, _ in COMMANDS}
    assert {"", "run", "doctor", "analyze", "compare", "report", "export", "demo", "audit", "tasks", "tasks list",
            "tasks show", "tasks replay-gold", "data", "data pull"} <= paths
    # and the brackets this issue was about are among the checked texts
    run = dict(COMMANDS)[("run",)]
    assert {"[[arms]]", "[run]"} <= {w for t in _source_texts(run) for w in BRACKETED.findall(t)}


@pytest.mark.parametrize("path, command", COMMANDS, ids=[" ".join(p) or "agentrig" for p, _ in COMMANDS])
def test_help_keeps_bracketed_words(path, command):
    _check_help(path, command)


def test_each_benchmarks_own_commands_keep_bracketed_words():
    cases = _benchmark_cases()
    assert {"tasks list --bench tau2", "tasks show --bench tau2", "audit --bench tau2"} <= {" ".join(p) for p, _ in cases}
    for path, command in cases:
        _check_help(path, command)


def test_help_uses_conventional_metavars():
    def shown(*args: str) -> str:
        return CliRunner().invoke(app, [*args, "--help"], terminal_width=WIDTH, env={"COLUMNS": str(WIDTH)}).output

    run = shown("run")
    assert "agentrig run [OPTIONS] EXPERIMENT\n" in run and "--dir PATH" in run and "\n  EXPERIMENT " in run
    report = shown("report")
    assert "[OPTIONS] RUN_DIRS...\n" in report and "\n  RUN_DIRS... " in report and "--out PATH" in report
    assert "[OPTIONS] [KIND]\n" in shown("doctor") and "--timeout FLOAT" in shown("doctor")
    assert "--samples INTEGER" in shown("instability") and "--arm TEXT" in shown("instability")
    gold = shown("tasks", "replay-gold", "--bench", "tau2")
    assert "--task-id TEXT" in gold and "<list[" not in gold
