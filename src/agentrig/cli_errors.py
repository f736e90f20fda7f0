"""One way for every command to turn a user error into a message and exit code 1."""

from __future__ import annotations

import functools
from typing import Callable

import typer
from rich.console import Console
from rich.text import Text

from .errors import AgentrigError


def user_errors(fn: Callable) -> Callable:
    """A user error (AgentrigError) becomes one clear message on stderr and exit code 1, never a
    traceback; Ctrl-C exits 130."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except AgentrigError as exc:
            # Text, not markup: messages may hold brackets ("[redacted]", telecom task ids)
            Console(stderr=True, highlight=False, soft_wrap=True).print(Text("error: ", style="bold red") + Text(str(exc)))
            raise typer.Exit(1) from None
        except KeyboardInterrupt:
            Console(stderr=True).print("interrupted")
            raise typer.Exit(130) from None

    return wrapper
