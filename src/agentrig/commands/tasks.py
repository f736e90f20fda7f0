"""``agentrig tasks list|show|replay-gold`` and ``agentrig audit``: ``--bench KIND`` (default tau2)
picks the benchmark; every other argument goes to that benchmark's own command
(``Benchmark.tasks_app()`` / ``Benchmark.audit_command()``), which parses, runs and prints.

    agentrig tasks list --domain airline              # τ²
    agentrig tasks list --bench terminal --tasks DIR  # a benchmark's own options

``--help`` with ``--bench KIND`` shows that benchmark's command help, ``--bench`` among its options;
without it, this command's own help: ``--bench`` and where each benchmark's help is.
"""

from __future__ import annotations

import copy
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


def _has_command(kind: str, target: Callable[[Any], Any], path: list[str]) -> bool:
    found = target(get_benchmark(kind))
    if found is None or not path:
        return found is not None
    return isinstance(found, typer.Typer) and path[0] in typer.main.get_command(found).commands


def _generic_help(ctx: typer.Context, prog: str, kinds: list[str]) -> None:
    """``--help`` without ``--bench``: this command, its ``--bench`` option, and where each
    benchmark's own options are shown (they differ: τ²'s --domain, terminal's --tasks, …)."""
    width = 100
    text = (ctx.command.help or "").split("\n\n")[0]
    lines = [f"Usage: {prog} [--bench KIND] [OPTIONS]...", ""]
    lines += textwrap.wrap(text, width - 2, initial_indent="  ", subsequent_indent="  ") + ["", "Options:"]
    lines += textwrap.wrap(f"  --bench KIND  {BENCH_HELP}; playable: {', '.join(playable_kinds())}", width,
                           subsequent_indent=" " * 16)
    lines += ["  --help        Show this message and exit.", "",
              "The other options are the benchmark's own; each benchmark's help shows them:"]
    lines += [f"  {prog} --bench {kind} --help" + ("   (the default)" if kind == DEFAULT_KIND else "")
              for kind in kinds]
    sys.stdout.write("\n".join(lines) + "\n")


def _with_bench_option(ctx: typer.Context, command: Any, path: list[str]) -> None:
    """Put ``--bench KIND`` among the options of the benchmark's command that ``path`` names, so its
    ``--help`` lists it with the others (the dispatcher has already read it)."""
    leaf = command
    for name in path:
        leaf = getattr(leaf, "commands", {}).get(name)
        if leaf is None:  # the benchmark has no such command: its own message says so
            return
    option = copy.copy(next(p for p in ctx.command.params if p.name == "bench"))
    option.expose_value, option.metavar, option.show_default = False, "KIND", False
    option.help = f"{BENCH_HELP}; playable: {', '.join(playable_kinds())}"
    leaf.params.insert(0, option)


def _dispatch(ctx: typer.Context, kind: str, prog: str, target: Callable[[Any], Any], path: list[str],
              missing: str) -> None:
    args = list(ctx.args)
    if "--help" in args and getattr(ctx.get_parameter_source("bench"), "name", "") == "DEFAULT":
        _generic_help(ctx, prog, [k for k in playable_kinds() if _has_command(k, target, path)])
        raise typer.Exit(0)
    if not _has_command(kind, target, path):
        raise ConfigError(f"the {kind} benchmark has no `{prog}` command ({missing}).\n"
                          f"  fix: choose another benchmark with --bench (playable: {', '.join(playable_kinds())})")
    found = target(get_benchmark(kind))
    if not isinstance(found, typer.Typer):  # one function: a one-command app
        app = typer.Typer(pretty_exceptions_enable=False, add_completion=False, rich_markup_mode=None)
        app.command()(user_errors(found))
        found = app
    found.rich_markup_mode = None  # help texts are plain text, not Rich markup, as for every agentrig command
    command = classic_help(typer.main.get_command(found))
    if "--help" in args:
        _with_bench_option(ctx, command, path)
    try:
        command.main(args=[*path, *args], prog_name=prog if not path else prog.rsplit(" ", 1)[0],
                     standalone_mode=True, obj=_command_context())
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    raise typer.Exit(code)


def _load_experiment(path: Any) -> Any:
    from agentrig.run.experiment import load_experiment

    return load_experiment(path)


def _command_context() -> dict[str, Any]:
    """What a benchmark's command gets as ``ctx.obj`` (``Benchmark.audit_command``): the loader of an
    experiment file that ``agentrig run`` uses (path → (experiment, its absolute path); a bad file is
    one ConfigError), for a command that takes ``--config EXP.toml`` (the terminal audit's [sandbox])."""
    return {"load_experiment": _load_experiment}


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
