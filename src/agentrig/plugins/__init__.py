"""Plug-ins: hooks around agent steps (see ``base.py``). ``build_plugin`` makes one per trial.

A plug-in package registers itself on import — its factory, and its own analysis figures (the
figure protocol, ``analysis/figure.py``: ``agentrig analyze`` and the report show them)::

    register("memory", factory, figures=["agentrig.plugins.memory.figure:MemoryFigure"])

The built-in plug-ins are ``memory/`` (the proactive memory agent, its bank, its figure) and
``guidelines/`` (a file of guidelines shown to the agent, derived from a run by ``derive.py``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Callable

from agentrig.analysis import figure as figure_registry
from agentrig.errors import ConfigError

from .base import Plugin, PluginSettings

# kind -> factory(settings, ctx) -> Plugin; plug-in packages register themselves here
REGISTRY: dict[str, Callable[[PluginSettings, Any], Plugin]] = {}


def register(kind: str, factory: Callable[[PluginSettings, Any], Plugin], *, figures: Iterable[str] = ()) -> None:
    """Register a plug-in kind; ``figures``: its analysis figures by import path ("module:Class")."""
    REGISTRY[kind] = factory
    for ref in figures:
        figure_registry.register(ref)


def _load_builtin() -> None:
    import agentrig.plugins.guidelines  # noqa: F401 - the built-in plug-ins register themselves on import
    import agentrig.plugins.memory  # noqa: F401


def load_builtin() -> None:
    """Import the built-in plug-ins (each registers itself and its figures): what reads an analysis
    (``agentrig analyze``, the report) calls it first."""
    _load_builtin()


def available() -> list[str]:
    _load_builtin()
    return sorted(REGISTRY)


def build_plugin(settings: PluginSettings, ctx: Any) -> Plugin:
    _load_builtin()
    factory = REGISTRY.get(settings.kind)
    if factory is None:
        known = ", ".join(sorted(REGISTRY)) or "none yet"
        raise ConfigError(f"unknown plug-in kind {settings.kind!r} in an arm's `plugins` (known: {known})")
    return factory(settings, ctx)


__all__ = ["Plugin", "PluginSettings", "build_plugin", "register", "available", "load_builtin"]
