"""``--help`` in the conventional style of command-line tools: ``agentrig run [OPTIONS] EXPERIMENT``,
``RUN_DIRS...``, ``--dir PATH``, ``--samples INTEGER`` — rather than the style typer's plain
formatter prints by default (``{experiment}``, ``run_dirs... <list[Path]>``, ``--dir <path>``).

``classic_help(command)`` walks a built command tree and gives each parameter the classes below
(the same typer parameters, only their help rendering changes). The root app applies it through
its group class (``ClassicGroup``), the ``--bench`` dispatcher to each benchmark's own commands.
"""

from __future__ import annotations

import re
from typing import Any

from typer.core import TyperArgument, TyperGroup, TyperOption

_WORDS = {"str": "TEXT", "int": "INTEGER", "float": "FLOAT", "path": "PATH", "bool": "BOOLEAN"}


def _type_word(label: str) -> str:
    """A typer type label ("str", "list[Path]", "a|b", "int range") as a metavar word."""
    label = label.strip("<>")
    inner = re.fullmatch(r"list\[(.*)\]", label)
    if inner:
        label = inner.group(1)
    if "|" in label:
        return f"[{label}]"
    words = label.split()
    return " ".join(_WORDS.get(w.lower(), w.upper()) for w in words)


class ClassicArgument(TyperArgument):
    def _name(self) -> str:
        return self.metavar or (self.name or "").upper()

    def _rich_display_name(self) -> str:  # the Arguments section: NAME, NAME... for several
        return self._name() + ("..." if self.nargs != 1 else "")

    def _usage_display_name(self) -> str:  # the usage line: NAME, [NAME] when optional
        name = self._name() if self.required else f"[{self._name()}]"
        return name + ("..." if self.nargs != 1 else "")

    def display_type_rich(self, ctx: Any) -> str | None:  # the name says what it is
        return None


class ClassicOption(TyperOption):
    def display_type_rich(self, ctx: Any) -> str | None:
        if self.metavar is not None:
            return self.metavar
        word = _type_word(self.display_type(ctx) or "")
        return word + "..." if self.nargs != 1 else word


def classic_help(command: Any) -> Any:
    """Give every parameter of ``command`` and its sub-commands the conventional help rendering."""
    for param in getattr(command, "params", ()):
        if type(param) is TyperArgument:
            param.__class__ = ClassicArgument
        elif type(param) is TyperOption:
            param.__class__ = ClassicOption
    for sub in getattr(command, "commands", {}).values():
        classic_help(sub)
    return command


class ClassicGroup(TyperGroup):
    """The root app's group: its whole command tree gets ``classic_help`` once built."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        classic_help(self)
