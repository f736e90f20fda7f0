"""``agentrig guidelines derive|show``: write consistency guidelines from a run; show a file for review."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.text import Text

from agentrig.cli_errors import user_errors

guidelines_app = typer.Typer(no_args_is_help=True, add_completion=False, rich_markup_mode=None,
                             help="Derive consistency guidelines from a run, and show a guidelines file for review.")


@guidelines_app.command("derive")
@user_errors
def derive_command(
    run_dir: Path = typer.Argument(..., help="A run directory (its reruns, and its instability table when stored)."),
    out_path: Path = typer.Option(..., "--out", "-o", help="The guidelines file to write (JSON)."),
    arm: Optional[str] = typer.Option(None, "--arm", help="The arm whose trials are read (required when the run has several)."),
    from_split: Optional[str] = typer.Option(None, "--from-split", help="Check that the run played this split (e.g. train) and record it."),
    top: int = typer.Option(3, "--top", help="Unstable steps per trial shown to the analyst (most unstable first)."),
    threshold: float = typer.Option(0.2, "--threshold", help="Least instability of a step shown to the analyst."),
    config: Optional[Path] = typer.Option(None, "--config", "-c", help="Experiment TOML whose [channel] / [roles.analyst] to use (default: the run's)."),
) -> None:
    """Ask the analyst model (role `analyst`) for guidelines from the run's unstable steps and rerun forks;
    guidelines that repeat a task's values (ids, names, amounts) are rejected and listed."""
    from agentrig.plugins.guidelines.derive import derive

    gf = derive(run_dir, out_path, arm=arm, from_split=from_split, top=top, threshold=threshold, channel_file=config)
    out = Console(highlight=False)
    pv = gf.provenance
    out.print(f"wrote {len(gf.guidelines)} guideline(s) to {out_path} "
              f"(from {pv.inputs.unstable_steps} unstable step(s) and {pv.inputs.forks} fork(s) of "
              f"{len(pv.source_tasks)} task(s); analyst {pv.analyst.model}: {pv.analyst.calls} call(s), "
              f"{pv.analyst.prompt_tokens} + {pv.analyst.completion_tokens} tokens)")
    for note in pv.inputs.notes:
        out.print(Text(f"note: {note}", style="yellow"))
    for r in gf.rejected:
        text = str(r.guideline.get("text", ""))[:120]
        out.print(Text(f"rejected (repeats task value(s) {', '.join(repr(v) for v in r.values[:5])}): {text}",
                       style="red"))
    out.print(f"review it: agentrig guidelines show {out_path}")


@guidelines_app.command("show")
@user_errors
def show_command(
    file: Path = typer.Argument(..., help="A guidelines file."),
    plain: bool = typer.Option(False, "--plain", help="Print the markdown source instead of rendering it."),
) -> None:
    """Render a guidelines file as markdown for review (a malformed or hand-broken file: the field is named)."""
    from agentrig.plugins.guidelines.filemodel import file_sha, load, markdown

    gf = load(file)
    text = markdown(gf, sha=file_sha(file))
    if plain or not sys.stdout.isatty():
        sys.stdout.write(text)
    else:
        from rich.markdown import Markdown  # markdown-it: loaded for this page only, not by every command

        Console().print(Markdown(text))
