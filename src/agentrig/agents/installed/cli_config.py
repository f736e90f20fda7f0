"""Codex CLI's and Claude Code's own configuration, as agentrig writes it for a trial (terminal
tasks: ``bench/terminal/installed.py``; τ²: ``conversation.py``): Codex's ``config.toml`` (TOML
values for its ``-c key=value`` too), with the trial's proxy as its one model provider."""

from __future__ import annotations

import json
from typing import Any


def toml_value(value: Any) -> str:
    """A TOML value for Codex's ``-c key=value`` and config.toml (strings quoted, lists and tables inline)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{json.dumps(str(k))} = {toml_value(v)}" for k, v in value.items()) + " }"
    return json.dumps(str(value))


def codex_config(model: str, base_url: str, extra_text: str = "", *, top: dict[str, Any] | None = None,
                 tables: dict[str, dict[str, Any]] | None = None) -> str:
    """CODEX_HOME/config.toml: the trial's proxy as Codex's one model provider (Responses wire).
    ``extra_text`` (the user's ``config_file``) comes first; ``top`` adds top-level keys and
    ``tables`` whole tables (``{"mcp_servers.tau": {...}}``)."""
    lines = [f"model = {json.dumps(model)}", 'model_provider = "agentrig"']
    lines += [f"{key} = {toml_value(value)}" for key, value in (top or {}).items()]
    lines += ["", "[model_providers.agentrig]", 'name = "agentrig"', f"base_url = {json.dumps(base_url)}",
              'env_key = "OPENAI_API_KEY"', 'wire_api = "responses"', ""]
    for name, table in (tables or {}).items():
        lines += [f"[{name}]", *(f"{key} = {toml_value(value)}" for key, value in table.items()), ""]
    head = extra_text.strip()
    return (head + "\n\n" if head else "") + "\n".join(lines)
