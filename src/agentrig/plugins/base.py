"""The plug-in seam: hooks around agent steps.

A plug-in is built once per trial (``build_plugin(settings, ctx)``, nothing carries over between
trials). Before each agent step the episode calls ``before_agent_step(step)`` on every plug-in of
the arm, in order; what they return is added to that ONE agent call (``Transient``) and is not
kept in the agent's history. Plug-ins read the conversation from ``ctx.trajectory.messages``,
make model calls with ``ctx.complete(role="memory", ...)`` and record what they did with
``ctx.event(name, kind, ...)``. A plug-in whose model call fails (after the channel's retries)
should record it and return nothing: the trial stays playable. A fatal channel error
(``FatalChannelError``) must propagate: the run stops.
"""

from __future__ import annotations

from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict

from agentrig.types import Transient


class PluginSettings(BaseModel):
    """One entry of an arm's ``plugins`` list: ``kind`` plus the plug-in's own settings."""

    model_config = ConfigDict(extra="allow")

    kind: str

    def options(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


class Plugin(Protocol):
    name: str

    async def before_agent_step(self, step: int) -> list[Transient]: ...
