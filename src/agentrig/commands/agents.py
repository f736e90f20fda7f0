"""``agentrig agents install|list|rm``: the cached tool roots of installed agents (mini-swe-agent,
Codex CLI, Claude Code), each installed once per kind and version (agents/installed/)."""

from __future__ import annotations

import json
import sys
from typing import Optional

import typer
from rich.console import Console
from rich.text import Text

from agentrig.cli_errors import user_errors

agents_app = typer.Typer(help="Install, list and remove the installed agents' tool roots (mini-swe-agent, codex, claude-code).",
                         no_args_is_help=True, pretty_exceptions_enable=False, add_completion=False,
                         rich_markup_mode=None)

KINDS = "mini-swe-agent, codex or claude-code"


def _err() -> Console:
    return Console(stderr=True, highlight=False, soft_wrap=True)


@agents_app.command("install")
@user_errors
def install(
    kind: str = typer.Argument(..., help=f"The agent: {KINDS}."),
    version: Optional[str] = typer.Option(None, "--version", metavar="VERSION", help="The version to install (default: the pinned one)."),
) -> None:
    """Install an agent's tool root (once: nothing to do when cached)."""
    from agentrig.agents.installed import ensure_tool_root
    from agentrig.agents.installed.common import human_size

    root = ensure_tool_root(kind, version, progress=lambda m: _err().print(Text(m)))
    typer.echo(f"{root.kind} {root.version}: {root.path} ({human_size(root.size)}; run {root.entry})")
    if root.glibc_floor:
        _err().print(Text(f"note: {root.kind} runs on the task image's C library: images need glibc ≥ {root.glibc_floor}"))


@agents_app.command("list")
@user_errors
def list_cmd(as_json: bool = typer.Option(False, "--json", help="Print a JSON array of the tool roots.")) -> None:
    """The installed agents: kind, version, size, path."""
    from agentrig.agents.installed import list_tool_roots
    from agentrig.agents.installed.common import human_size

    roots = list_tool_roots()
    if as_json:
        sys.stdout.write(json.dumps([r.model_dump(mode="json") for r in roots], indent=2) + "\n")
        return
    if not roots:
        typer.echo(f"no agents installed yet (agentrig agents install KIND; KIND is {KINDS})")
        return
    for r in roots:
        floor = f"  glibc ≥ {r.glibc_floor}" if r.glibc_floor else ""
        typer.echo(f"{r.kind:<15} {r.version:<10} {human_size(r.size):>8}  {r.path}{floor}")


@agents_app.command("rm")
@user_errors
def rm(
    kind: str = typer.Argument(..., help=f"The agent: {KINDS}."),
    version: Optional[str] = typer.Option(None, "--version", metavar="VERSION", help="Only this version (default: every installed version)."),
) -> None:
    """Remove an installed agent's tool root."""
    from agentrig.agents.installed import remove_tool_root

    removed = remove_tool_root(kind, version)
    if not removed:
        typer.echo(f"{kind}{' ' + version if version else ''} is not installed; nothing removed")
        return
    for path in removed:
        typer.echo(f"removed {path}")
