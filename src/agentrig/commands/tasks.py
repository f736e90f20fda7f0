"""``agentrig tasks list|show|replay-gold`` and ``agentrig audit``: ``--bench KIND`` (default tau2)
picks the benchmark; every other argument goes to that benchmark's own command
(``Benchmark.tasks_app()`` / ``Benchmark.audit_command()``), which parses, runs and prints.

    agentrig tasks list --domain airline              # τ²
    agentrig tasks list --bench terminal --tasks DIR  # a benchmark's own options

``--help`` shows the benchmark's command help, then the ``--bench`` option.
"""

from __future__ import annotations

import sys
import textwrap
from typing import Any, Callable

import typer

from agentrig.cli_errors import user_errors
from agentrig.commands.help_style import classic_help
from agentrig.errors import ConfigError

from agentrig.benchmark import DEFAULT_KIND, get_benchmark, playable_kinds

_PASS = {"allow_extra_args": True, "ignore_unknown_options": True, "help_option_names": []}
BENCH_HELP = "the benchmark whose command to run (default tau2)"

tasks_app = typer.Typer(help="Browse a benchmark's tasks (--bench KIND; default tau2).", no_args_is_help=True,
                        pretty_exceptions_enable=False, add_completion=False)


def _bench_option() -> Any:
    return typer.Option(DEFAULT_KIND, "--bench", help=BENCH_HELP)


def _dispatch(ctx: typer.Context, kind: str, prog: str, target: Callable[[Any], Any], path: list[str],
              missing: str) -> None:
    bench = get_benchmark(kind)
    found = target(bench)
    if found is None:
        raise ConfigError(f"the {kind} benchmark has no `{prog}` command ({missing}).\n"
                          f"  fix: choose another benchmark with --bench (playable: {', '.join(playable_kinds())})")
    if not isinstance(found, typer.Typer):  # one function: a one-command app
        app = typer.Typer(pretty_exceptions_enable=False, add_completion=False, rich_markup_mode=None)
        app.command()(user_errors(found))
        found = app
    found.rich_markup_mode = None  # help texts are plain text, not Rich markup, as for every agentrig command
    command = classic_help(typer.main.get_command(found))
    args = list(ctx.args)
    asked_help = "--help" in args
    try:
        command.main(args=[*path, *args], prog_name=prog if not path else prog.rsplit(" ", 1)[0],
                     standalone_mode=True)
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    if asked_help and code == 0:
        here = ctx.command
        text = (here.help or "").split("\n\n")[0]
        lines = textwrap.wrap(text, 96) + [""] + textwrap.wrap(
            f"  --bench KIND  {BENCH_HELP}; playable: {', '.join(playable_kinds())}", 96, subsequent_indent=" " * 16)
        sys.stdout.write("\n" + "\n".join(lines) + "\n")
    raise typer.Exit(code)


def _tasks_command(name: str, doc: str) -> None:
    def command(ctx: typer.Context, bench: str = _bench_option()) -> None:
        _dispatch(ctx, bench, f"agentrig tasks {name}", lambda b: b.tasks_app(), [name],
                  "it lists no tasks this way")

    command.__doc__ = doc
    tasks_app.command(name, context_settings=_PASS, add_help_option=False)(user_errors(command))


_tasks_command("list", "List a benchmark's tasks (τ²: of one domain, with --domain).")
_tasks_command("show", "Show one task of a benchmark in full.")
_tasks_command("replay-gold", "τ²: replay each task's gold actions and check that they earn the full reward.")


@user_errors
def audit_command(ctx: typer.Context, bench: str = _bench_option()) -> None:
    """Leniency audit of a benchmark's tasks (τ²: gold vs a do-nothing agent per task)."""
    _dispatch(ctx, bench, "agentrig audit", lambda b: b.audit_command(), [], "it has no audit")


AUDIT_SETTINGS = _PASS
