"""The proactive memory plug-in (``kind = "memory"``): see ``agent.py`` for what it does,
``settings.py`` for its settings, ``bank.py`` for the memory bank and its tools, ``figure.py`` for
its analysis figure (what it did, what it cost, its A/B against the baseline arm)."""

from __future__ import annotations

from typing import Any

from agentrig.plugins import register
from agentrig.plugins.base import PluginSettings

from .agent import MemoryPlugin
from .bank import Bank
from .settings import MemorySettings, parse_settings


class MemoryFactory:
    """Builds one ``MemoryPlugin`` per trial (so one bank per trial)."""

    roles = ("memory",)  # every mode calls the memory role

    def check(self, settings: PluginSettings, where: str = "") -> MemorySettings:
        """Validate an arm's memory settings (a ConfigError names the setting and the fix)."""
        return parse_settings(settings.options(), where)

    def prompts_sha(self) -> str:
        """A hash of every text the plug-in sends to the memory model or shows the agent: part of
        the comparability snapshot, so a run is not resumed across a change of those texts."""
        from agentrig.benchmark import json_sha

        from . import prompts

        texts = {name: value for name, value in vars(prompts).items()
                 if isinstance(value, str) and not name.startswith("__")}
        return json_sha(texts)

    def __call__(self, settings: PluginSettings, ctx: Any) -> MemoryPlugin:
        key = getattr(ctx, "key", None)
        where = f"arm {key.arm!r}" if key is not None else ""
        return MemoryPlugin(self.check(settings, where), ctx)


factory = MemoryFactory()
register("memory", factory, figures=["agentrig.plugins.memory.figure:MemoryFigure"])

__all__ = ["Bank", "MemoryFactory", "MemoryPlugin", "MemorySettings", "factory", "parse_settings"]
