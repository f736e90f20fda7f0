"""One way for every command to turn a user error into a message and exit code 1."""

from __future__ import annotations

import functools
import json
import sys
from typing import Any, Callable

import typer
from rich.console import Console
from rich.text import Text

from .errors import AgentrigError

_JSON_PARAMS = ("as_json", "json_out")  # the names commands give their --json flag
FIX_MARK = "\n  fix: "


def _wants_json(kwargs: dict[str, Any]) -> bool:
    """The command was asked for --json: its own flag, or (a ``--bench`` dispatcher passing its
    arguments on) ``--json`` among the arguments it passes."""
    if any(kwargs.get(name) is True for name in _JSON_PARAMS):
        return True
    args = getattr(kwargs.get("ctx"), "args", None)
    return isinstance(args, list) and "--json" in args


def error_object(exc: AgentrigError) -> dict[str, str | None]:
    """A user error as a program reads it: the message and, apart, its fix (None when it has none)."""
    text = str(exc)
    error, sep, fix = text.partition(FIX_MARK)
    return {"error": error, "fix": fix if sep else None}


def user_errors(fn: Callable) -> Callable:
    """A user error (AgentrigError) becomes one clear message on stderr and exit code 1, never a
    traceback — with --json, one JSON object ``{"error": …, "fix": …}`` on stdout instead; Ctrl-C
    exits 130."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except AgentrigError as exc:
            if _wants_json(kwargs):
                sys.stdout.write(json.dumps(error_object(exc), ensure_ascii=False) + "\n")
                raise typer.Exit(1) from None
            # Text, not markup: messages may hold brackets ("[redacted]", telecom task ids)
            Console(stderr=True, highlight=False, soft_wrap=True).print(Text("error: ", style="bold red") + Text(str(exc)))
            raise typer.Exit(1) from None
        except KeyboardInterrupt:
            Console(stderr=True).print("interrupted")
            raise typer.Exit(130) from None

    return wrapper
