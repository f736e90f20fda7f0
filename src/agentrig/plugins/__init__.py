"""Plug-ins: hooks around agent steps (see ``base.py``). ``build_plugin`` makes one per trial."""

from __future__ import annotations

from typing import Any, Callable

from agentrig.errors import ConfigError

from .base import Plugin, PluginSettings

# kind -> factory(settings, ctx) -> Plugin; plug-in packages register themselves here
REGISTRY: dict[str, Callable[[PluginSettings, Any], Plugin]] = {}


def register(kind: str, factory: Callable[[PluginSettings, Any], Plugin]) -> None:
    REGISTRY[kind] = factory


def _load_builtin() -> None:
    import agentrig.plugins.guidelines  # noqa: F401 - the built-in plug-ins register themselves on import
    import agentrig.plugins.memory  # noqa: F401


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


__all__ = ["Plugin", "PluginSettings", "build_plugin", "register", "available"]
