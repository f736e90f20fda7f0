"""Shell tools: which tool calls run a shell command, and where their command is.

The agents on terminal tasks each name their shell tool their own way, and the trajectory keeps
the agent's own names and arguments (what the model really said). Everything that reads a
command out of a tool call — the decisions of ``instability`` and ``analyze``, the report's
viewer, the terminal exports — asks this registry instead of assuming ``bash(command)``:

=================  ==============  ===============================================================
tool               argument        whose
=================  ==============  ===============================================================
``bash``           ``command``     agentrig's bash agent, mini-swe-agent (tool-call mode and the
                                   text mode's action, as agentrig records it)
``exec_command``   ``cmd``         Codex CLI
``Bash``           ``command``     Claude Code
``shell``          ``command``     older Codex CLI releases (a list: ``["bash", "-lc", "…"]``)
=================  ==============  ===============================================================

``ignored`` arguments do not change what runs (Claude Code's free-text ``description``, Codex's
output paging): two calls differing only there are the same decision (``decisions``).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Any

__all__ = ["ShellTool", "SHELL_TOOLS", "shell_command", "is_shell_call", "decision_arguments", "code_arguments"]


@dataclass(frozen=True)
class ShellTool:
    name: str
    argument: str  # the argument holding the command (a string, or for ``shell`` a list of words)
    ignored: tuple[str, ...] = ()  # arguments that do not change what runs


SHELL_TOOLS: dict[str, ShellTool] = {t.name: t for t in (
    ShellTool("bash", "command"),
    ShellTool("exec_command", "cmd", ("justification", "yield_time_ms", "max_output_tokens", "sandbox_permissions",
                                      "prefix_rule")),
    ShellTool("Bash", "command", ("description",)),
    ShellTool("shell", "command", ("justification", "timeout_ms", "sandbox_permissions")),
)}


def _words(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        if len(value) == 3 and value[1] in ("-c", "-lc") and value[0].rsplit("/", 1)[-1] in ("bash", "sh", "zsh"):
            return value[2]  # ["bash", "-lc", "script"]: the script is the command
        return shlex.join(value)
    return None


def shell_command(name: str, arguments: Any) -> str | None:
    """The command of a call of a shell tool, or None (another tool, or no usable command)."""
    tool = SHELL_TOOLS.get(name)
    if tool is None or not isinstance(arguments, dict):
        return None
    return _words(arguments.get(tool.argument))


def is_shell_call(name: str) -> bool:
    return name in SHELL_TOOLS


def decision_arguments(name: str, arguments: dict) -> dict:
    """The arguments of a call that make its decision: a shell tool's command (as one string)
    and the arguments that change what runs; any other tool's arguments unchanged."""
    tool = SHELL_TOOLS.get(name)
    if tool is None:
        return arguments
    out = {k: v for k, v in arguments.items() if k not in tool.ignored}
    command = _words(arguments.get(tool.argument))
    if command is not None:
        out[tool.argument] = command
    return out


def code_arguments() -> dict[str, str]:
    """The report viewer's hint: per shell tool, the string argument shown as code."""
    return {t.name: t.argument for t in SHELL_TOOLS.values()}
