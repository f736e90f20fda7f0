"""The guidelines plug-in: reviewed consistency guidelines in front of the agent.

An arm's ``plugins = [{ kind = "guidelines", file = "guidelines.json", select = "all", top_k = 5 }]``:

    file      the guidelines file (``agentrig guidelines derive``; relative to the experiment file)
    select    all  — every guideline, before every agent step, in a system message of that call
              bm25 — the ``top_k`` guidelines most similar to the current step's context (the
                     conversation window as the memory plug-in sees it, ``window`` steps), only
                     guidelines sharing a term with it (common function words left out of the
                     query); ranked by the memory plug-in's BM25 index (``memory/bm25.py``)
    top_k     guidelines shown per step with bm25 (5, ≥ 1)
    window    agent steps of the conversation that make the bm25 query, with the user's latest
              request before them (4, ≥ 1)

The text goes into the agent's request as a system message after the history (``Transient``,
placement ``system``): the same place for the τ² agents (native and text mode) and the bash agent.
It is never kept in the agent's history, so the prompt prefix of each call is what it would be
without the plug-in plus that one message. Nothing here calls a model.

Events: ``guidelines.loaded`` once per trial (file hash, count, select); with ``bm25`` a
``guidelines.select`` per step that showed something (``ids``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import ConfigDict, Field, ValidationError

from agentrig.errors import ConfigError, format_validation_error
from agentrig.plugins.memory.bm25 import BM25Index, terms
from agentrig.plugins.memory.window import Conversation
from agentrig.types import Strict, Transient

from .filemodel import Guideline, GuidelinesFile

NAME = "guidelines"
# function words left out of the bm25 query: a guideline is not relevant because it says "the"
STOP = frozenset("""a an and are as at be been but by can could did do does for from had has have he her
his how i if in into is it its me my no not of on or our she so than that the their them then there
these they this to too up us was we were what when where which who will with would you your""".split())
HEADER = "Guidelines for consistent decisions (follow them when they apply):"


class GuidelinesSettings(Strict):
    model_config = ConfigDict(frozen=True)

    file: str = Field(min_length=1)
    select: Literal["all", "bm25"] = "all"
    top_k: int = Field(5, ge=1, strict=True)
    window: int = Field(4, ge=1, strict=True)


_FIXES = {
    "file": "give the path of a guidelines file (agentrig guidelines derive RUN --out FILE)",
    "select": "use one of: all, bm25",
    "top_k": "give a whole number >= 1",
    "window": "give a whole number >= 1",
}


def parse_settings(options: dict[str, Any], where: str = "") -> GuidelinesSettings:
    try:
        return GuidelinesSettings.model_validate(options)
    except ValidationError as exc:
        def line(err: dict) -> str:
            name = ".".join(str(p) for p in err["loc"]) or "(settings)"
            if err["type"] == "extra_forbidden":
                return (f"`{name}`: not a setting of the guidelines plug-in "
                        f"(fix: use one of: {', '.join(GuidelinesSettings.model_fields)})")
            if err["type"] == "missing":
                return f"`{name}`: required (fix: {_FIXES.get(name, 'see docs/consistency.md')})"
            return (f"`{name}` = {err.get('input')!r}: {err['msg']} "
                    f"(fix: {_FIXES.get(name, 'see docs/consistency.md')})")
        head = f"{where}: " if where else ""
        raise ConfigError(format_validation_error(
            exc, f"{head}invalid setting(s) of plug-in kind \"guidelines\" in the arm's `plugins`:", line)) from None


def guideline_text(g: Guideline) -> str:
    line = f"- [{g.category}] {g.text}"
    if g.trigger:
        line += f" (when: {g.trigger})"
    return line


def block(guidelines: list[Guideline]) -> str:
    return HEADER + "\n" + "\n".join(guideline_text(g) for g in guidelines)


class GuidelinesPlugin:
    name = NAME

    def __init__(self, settings: GuidelinesSettings, gf: GuidelinesFile, sha: str, ctx: Any):
        self.settings = settings
        self.ctx = ctx
        self.guidelines = {g.id: g for g in gf.guidelines}
        self.sha = sha
        self._all = block(gf.guidelines) if gf.guidelines else ""
        self._loaded = False
        self.index: BM25Index | None = None
        self.conversation: Conversation | None = None
        if settings.select == "bm25":
            self.index = BM25Index()
            for g in gf.guidelines:
                self.index.add(g.id, f"{g.text} {g.trigger} {g.category}")
            self.conversation = Conversation(ctx.trajectory.messages, 1000)

    async def before_agent_step(self, step: int) -> list[Transient]:
        if not self._loaded:
            self._loaded = True
            self.ctx.event(NAME, "guidelines.loaded", file_sha=self.sha, count=len(self.guidelines),
                           select=self.settings.select, file=Path(self.settings.file).name)
        if self.index is None:
            return [Transient(text=self._all, placement="system", source=NAME)] if self._all else []
        assert self.conversation is not None
        view = self.conversation.view(self.settings.window)
        # the window's words, and the latest user request before it (a terminal task's instruction)
        query = " ".join([view.requests[-1][1]] if view.requests else []) + " " + view.query
        words = [t for t in terms(query) if t not in STOP]
        ids = self.index.top(words, self.settings.top_k, positive_only=True) if len(self.index) else []
        if not ids:
            return []
        self.ctx.event(NAME, "guidelines.select", step=step, ids=ids)
        return [Transient(text=block([self.guidelines[i] for i in ids]), placement="system", source=NAME)]
