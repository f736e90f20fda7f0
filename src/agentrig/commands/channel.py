"""``agentrig channel export``: the channel of an experiment (or of --base-url/--model/--api-key-env)
written as another client's file, without the key (see ``clientexport``)."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.text import Text

from agentrig.cli_errors import user_errors
from agentrig.errors import ConfigError

channel_app = typer.Typer(help="Write the channel as another client's file (Codex, Claude Code, mini-swe-agent, .env).",
                          no_args_is_help=True, pretty_exceptions_enable=False, add_completion=False,
                          rich_markup_mode=None)


@channel_app.command("export")
@user_errors
def export(
    fmt: str = typer.Option(..., "--format", "-f", help="codex (config.toml), claude-code (settings.json), "
                                                     "mini-swe-agent (a model: section in YAML) or env (a .env for the openai SDK)."),
    role: str = typer.Option("agent", "--role", help="The role whose channel to write (agent, user, memory, judge)."),
    config: Optional[Path] = typer.Option(None, "--config", "-c", help="Experiment TOML whose [channel]/[roles.X] to write."),
    base_url: Optional[str] = typer.Option(None, "--base-url", help="Without --config: the OpenAI-compatible base URL (…/v1)."),
    model: Optional[str] = typer.Option(None, "--model", "-m", help="The model id (overrides the config's)."),
    api_key_env: Optional[str] = typer.Option(None, "--api-key-env", help="NAME of the variable holding the key (default OPENAI_API_KEY)."),
    out_path: Optional[Path] = typer.Option(None, "--out", "-o", help="Write the file here (default: print it on stdout)."),
    force: bool = typer.Option(False, "--force", help="Overwrite --out when it exists."),
) -> None:
    """Print (or write) the channel as a Codex, Claude Code, mini-swe-agent or .env file: the base URL in
    the form that client appends its paths to, the key's variable name (never the key)."""
    from agentrig.config import ROLES, ChannelConfig, ChannelSettings, load_channel_config
    from agentrig.channel.clients.export import export_client_file

    if api_key_env is not None and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", api_key_env):
        raise ConfigError("--api-key-env must be the NAME of an environment variable (letters, digits, _), not the key itself")
    if role not in ROLES:
        raise ConfigError(f"unknown --role {role!r}; expected one of {', '.join(ROLES)}")
    if config is not None:
        if base_url:
            raise ConfigError("give either --config or --base-url, not both")
        cfg = load_channel_config(config)
    else:
        cfg = ChannelConfig(channel=ChannelSettings(base_url=base_url, api_key_env=api_key_env))
    rr = cfg.resolve(role)
    if model:
        rr = rr.model_copy(update={"model": model})
    if api_key_env and config is not None:
        rr = rr.model_copy(update={"api_key_env": api_key_env})
    result = export_client_file(fmt, rr, wire=getattr(rr, "wire", "chat"))
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    if out_path is None:
        sys.stdout.write(result.text)
    else:
        if out_path.exists() and not force:
            raise ConfigError(f"{out_path} exists; pass --force to overwrite it, or choose another --out")
        try:
            out_path.parent.mkdir(parents=True, exist_ok=True)
            out_path.write_text(result.text, encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"{out_path}: cannot be written ({exc.strerror})") from None
        err.print(Text(f"wrote the {role} channel as a {fmt} file to {out_path}"))
    if result.key_command:
        err.print(Text(f"key: {result.key_command}"))
    for note in result.notes:
        err.print(Text(f"note: {note}"))
