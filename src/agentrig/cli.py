"""The ``agentrig`` command: thin — parse, call, print (rich for people, --json for programs)."""

from __future__ import annotations

import gc
import sys

_GC_WAS_ON = gc.isenabled()
gc.disable()  # the command's start-up imports make long-lived objects, not garbage (enabled again below)
# run as the console script (its __main__ is bin/agentrig): what this import loads is frozen before
# the GC is on again, so no collection walks it; a program importing the CLI keeps its GC as it was
_AS_COMMAND = (getattr(sys.modules.get("__main__"), "__file__", None) or "").replace("\\", "/").rsplit("/", 1)[-1] \
    in ("agentrig", "agentrig.exe")

from pathlib import Path  # noqa: E402
from typing import Optional  # noqa: E402

import typer  # noqa: E402
from rich.console import Console  # noqa: E402

from . import __version__, command_ending, command_started, loading  # noqa: E402
from .cli_errors import user_errors
from .commands.help_style import ClassicGroup

app = typer.Typer(
    name="agentrig",
    help="A test rig for LLM agents: k trials per task, pass^k, paired A/B, and a channel that tells plumbing faults from agent failures.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    # help texts are plain text, not Rich markup: "[[arms]]" and "[run]" stay as written (sub-apps inherit this)
    rich_markup_mode=None,
    cls=ClassicGroup,  # conventional metavars in --help: EXPERIMENT, RUN_DIRS..., --dir PATH
)
out = Console()


def _print_version(value: bool) -> None:
    if value:
        out.print(__version__, highlight=False)
        raise typer.Exit(0)


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", is_eager=True, callback=_print_version,
                                 help="Print agentrig's version and exit."),
) -> None:
    pass


@app.command()
def version() -> None:
    """Print agentrig's version."""
    out.print(__version__)


@app.command()
@user_errors
def doctor(
    config: Optional[Path] = typer.Option(None, "--config", "-c", help="Experiment TOML: check every (endpoint, model) its roles use."),
    base_url: Optional[str] = typer.Option(None, "--base-url", help="Check one endpoint (default: $OPENAI_BASE_URL or the OpenAI API)."),
    model: Optional[str] = typer.Option(None, "--model", "-m", help="Model id to check on that endpoint."),
    api_key_env: str = typer.Option("OPENAI_API_KEY", "--api-key-env", help="NAME of the variable holding the key."),
    timeout_s: Optional[float] = typer.Option(None, "--timeout", help="Seconds per request (default: the role's timeout_s, 60)."),
    wire: Optional[str] = typer.Option(None, "--wire", help="With --base-url: the API to speak: chat (default), responses or anthropic."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
    from_file: Optional[str] = typer.Option(None, "--from", help="Check another client's file: codex:PATH, claude-code:PATH, "
                                                                 "mini-swe-agent:PATH or env:PATH (docs/clients.md)."),
    sandbox: bool = typer.Option(False, "--sandbox", help="Check the terminal-task sandboxes instead (bwrap, local, docker, podman; or the KIND named)."),
    kind: Optional[str] = typer.Argument(None, help="With --sandbox: the one sandbox kind to check.", show_default=False),
    bench: Optional[str] = typer.Option(None, "--bench", help="Check what a benchmark needs on this machine instead (terminal: the sandboxes; appworld: its venv, data, a world)."),
) -> None:
    """Diagnose the endpoints before a run: key, URL, network, model list, model, chat, the server,
    the agent's own tool request, a forced tool call, silent prompt truncation, the context window.
    With --sandbox [KIND]: what the terminal sandboxes can do on this machine."""
    from .commands.doctor import doctor_command

    raise typer.Exit(doctor_command(config=config, base_url=base_url, model=model, api_key_env=api_key_env,
                                    timeout_s=timeout_s, wire=wire, as_json=as_json, from_file=from_file,
                                    sandbox=sandbox, kind=kind, bench=bench, out=_doctor_console(as_json)))


def _doctor_console(as_json: bool) -> Console:
    """A terminal: its width, lines wrapped at spaces; a pipe or a log: no hard wraps at all (a
    check's message stays one line, as `grep` expects), $COLUMNS or PIPE_WIDTH for any table."""
    from .tables import output_console

    return output_console(as_json, soft_wrap=not sys.stdout.isatty())


@app.command()
@user_errors
def run(
    experiment: Path = typer.Argument(..., help="The experiment TOML (benchmark, trials, channel, [[arms]])."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object (run dir, counts per arm) and nothing else."),
    smoke: bool = typer.Option(False, "--smoke", help="Play one task once per arm, exercising every role; report what works."),
    force: bool = typer.Option(False, "--force", help="Start a new run directory when the config changed incomparably."),
    run_dir: Optional[Path] = typer.Option(None, "--dir", help="Run directory (default: [run] dir, else runs/<name> beside the TOML)."),
    estimate: bool = typer.Option(False, "--estimate", help="Estimate the whole plan's model calls, tokens and cost per arm and role (from the run's stored trials, else a smoke play); play nothing else."),
) -> None:
    """Play an experiment: every arm × task × trial not yet stored; rerun the same command to resume."""
    with loading():
        from agentrig.commands.run import run_command

    raise typer.Exit(run_command(experiment, as_json=as_json, smoke=smoke, force=force, run_dir=run_dir,
                                 estimate=estimate))


@app.command("export")
@user_errors
def export(
    run_dir: Path = typer.Argument(..., help="A run directory (as `agentrig run` printed it)."),
    fmt: str = typer.Option(..., "--format", "-f", help="jsonl (every stored attempt); τ² runs: tau2 (tau2-bench's results.json); "
                                                   "terminal runs: terminal-bench (a Terminal-Bench run directory per arm), mini-swe-agent "
                                                   "(trajectory files), atif (Harbor's trajectory format); AppWorld runs: appworld."),
    arm: Optional[str] = typer.Option(None, "--arm", help="Only this arm (tau2: required when the run has several)."),
    domain: Optional[str] = typer.Option(None, "--domain", help="tau2: the domain (required when the run has several)."),
    out_path: Optional[Path] = typer.Option(None, "--out", "-o", help="jsonl, tau2: the output FILE; terminal-bench, mini-swe-agent, atif, appworld: the output "
                                                             "DIRECTORY (one folder per arm inside). Default: RUN_DIR/exports/...", metavar="PATH"),
) -> None:
    """Export a run's trials: JSONL of every record, or the files tau2-bench, Terminal-Bench, mini-SWE-agent or Harbor tools open."""
    from agentrig.commands.export import export_command

    n, target, noun = export_command(run_dir, fmt, arm=arm, domain=domain, out_path=out_path)
    out.print(f"wrote {n} {noun} to {target}", highlight=False)


def _wide(as_json: bool) -> Console:
    """A terminal's width; a pipe or a log gets $COLUMNS, else 100 (agentrig.tables.PIPE_WIDTH)."""
    from .tables import output_console

    return output_console(as_json)


@app.command()
@user_errors
def analyze(
    run_dir: Path = typer.Argument(..., help="A run directory (as `agentrig run` printed it)."),
    arm: Optional[str] = typer.Option(None, "--arm", help="Only this arm."),
    as_json: bool = typer.Option(False, "--json", help="Print the whole analysis as one JSON object."),
) -> None:
    """pass^k with CIs, the consistency gap, components, terminations, usage, reruns, forks, failures."""
    from agentrig.commands.analyze import analyze_command

    raise typer.Exit(analyze_command(run_dir, arm=arm, as_json=as_json, out=_wide(as_json)))


@app.command()
@user_errors
def usage(
    run_dir: Path = typer.Argument(..., help="A run directory (as `agentrig run` printed it)."),
    by: str = typer.Option("model,hour", "--by", help="Group by any of model, hour, day, role, arm, purpose (comma-separated)."),
    role: Optional[str] = typer.Option(None, "--role", help="Only this role's calls."),
    arm: Optional[str] = typer.Option(None, "--arm", help="Only this arm."),
    as_csv: bool = typer.Option(False, "--csv", help="Print CSV (one row per group, no total)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Requests, tokens and cost per model per hour (UTC), as a gateway's console shows them: to reconcile the two."""
    from agentrig.commands.usage import usage_command

    raise typer.Exit(usage_command(run_dir, by=by, role=role, arm=arm, as_csv=as_csv, as_json=as_json, out=_wide(as_json or as_csv)))


@app.command()
@user_errors
def compare(
    side_a: str = typer.Argument(..., help="RUN_DIR[:ARM] — the baseline side."),
    side_b: str = typer.Argument(..., help="RUN_DIR[:ARM] — the side under test (Δ = B − A)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
    fail_if_worse: bool = typer.Option(False, "--fail-if-worse", help="Exit 1 when B is significantly worse than A (a CI gate)."),
    metric: str = typer.Option("pass^1", "--metric", help="pass^1 or pass^k (the gate's metric)."),
    alpha: float = typer.Option(0.05, "--alpha", help="Significance level of the gate."),
    allow_mismatch: bool = typer.Option(False, "--allow-mismatch", help="Compare even when more than the arms differ (flagged)."),
) -> None:
    """Paired A/B over the tasks both sides played: Δpass^1, Δpass^k with CIs, McNemar, flips, config diff."""
    from agentrig.commands.compare import compare_command

    raise typer.Exit(compare_command(side_a, side_b, as_json=as_json, fail_if_worse=fail_if_worse, metric=metric,
                                     alpha=alpha, allow_mismatch=allow_mismatch, out=_wide(as_json)))


@app.command()
@user_errors
def report(
    run_dirs: list[Path] = typer.Argument(..., help="One or more run directories (several: compared side by side)."),
    out_path: Optional[Path] = typer.Option(None, "--out", "-o", help="Output file (default: FIRST_RUN/report.html)."),
) -> None:
    """One self-contained HTML report: pass^k curves, gap, outcome grid, failures, A/B, usage, trajectories."""
    from .commands.report import report_command

    report_command(run_dirs, out_path=out_path, console=out)


@app.command()
@user_errors
def instability(
    run_dir: Path = typer.Argument(..., help="A run directory (as `agentrig run` printed it)."),
    arm: Optional[str] = typer.Option(None, "--arm", help="Only this arm (default: every arm with a model agent)."),
    tasks: Optional[str] = typer.Option(None, "--tasks", help="Only these tasks: comma-separated ids (or domain/id)."),
    samples: int = typer.Option(5, "--samples", help="Samples per decision step."),
    temperature: float = typer.Option(0.5, "--temperature", help="Sampling temperature of the samples (> 0)."),
    max_steps: int = typer.Option(15, "--max-steps", help="Resample the first N decision steps of each trial."),
    threshold: Optional[float] = typer.Option(None, "--threshold", help="A step is unstable when at least this share of its actions leave the majority decision (default: the experiment's [analysis] instability_threshold, else 0.1)."),
    concurrency: Optional[int] = typer.Option(None, "--concurrency", help="Calls in flight (default: the agent endpoint's max_concurrency)."),
    only_estimate: bool = typer.Option(False, "--estimate", help="Print the calls, tokens and money it would take, and stop."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object (estimate, totals, reports)."),
) -> None:
    """Decision instability: re-ask the agent model at each step of stored trials (exact prefix, nothing executed);
    per step, how much the samples disagree with each other and with the action taken; validated against the reruns."""
    from agentrig.commands.instability import instability_command

    raise typer.Exit(instability_command(run_dir, arm=arm, tasks=tasks, samples=samples, temperature=temperature,
                                         max_steps=max_steps, concurrency=concurrency, only_estimate=only_estimate,
                                         as_json=as_json, threshold=threshold, out=None if as_json else _wide(False)))


@app.command()
@user_errors
def demo(
    base_dir: Path = typer.Option(Path("runs"), "--dir", help="where the demo's experiment files and runs go"),
) -> None:
    """Run the built-in demo offline, with no key: see what agentrig does on this machine."""
    from agentrig.commands.demo import run_demo

    raise typer.Exit(run_demo(out, base_dir))


from agentrig.commands.tasks import AUDIT_SETTINGS, audit_command, tasks_app  # noqa: E402

app.add_typer(tasks_app, name="tasks", help="List, show and replay a benchmark's tasks (--bench KIND; default tau2).")
from agentrig.commands.guidelines import guidelines_app  # noqa: E402

app.add_typer(guidelines_app, name="guidelines", help="Derive consistency guidelines from a run; show a guidelines file for review.")
from agentrig.commands.channel import channel_app  # noqa: E402

app.add_typer(channel_app, name="channel", help="Write the channel as another client's file (Codex, Claude Code, mini-swe-agent, .env).")
app.command("audit", context_settings=AUDIT_SETTINGS, add_help_option=False)(audit_command)
from agentrig.commands.agents import agents_app  # noqa: E402

app.add_typer(agents_app, name="agents", help="Install, list and remove the installed agents' tool roots (mini-swe-agent, codex, claude-code).")
from .benchmark import command_groups  # noqa: E402

for _name, _group in command_groups().items():  # each benchmark's own groups (τ²: data; terminal: images; AppWorld: appworld)
    app.add_typer(_group, name=_name)

if _AS_COMMAND:
    command_started()
if _GC_WAS_ON:
    gc.enable()


def main() -> None:
    command_started()
    try:
        app()
    finally:
        command_ending()


if __name__ == "__main__":
    main()
