"""The proactive memory plug-in: a second model beside the agent that keeps a memory bank and,
before an agent step, hands it a short reminder or (by default) stays silent.

**Trigger**: before agent step 0, then before every ``interval``-th agent step (step % interval
== 0). A trigger runs up to two calls through the ``memory`` role:

1. *edit* (purpose ``memory.edit``; modes with a bank): the requests, the bank and the window →
   zero or more calls of the four bank tools, applied in order. One round only: the results are
   not sent back in that call; the next trigger's edit prompt lists them (``<previous_edits>``).
2. *decide* (purpose ``memory.decide``; modes selective, always_inject, advisor): the requests,
   the updated bank (advisor: none) and the window → ``<context_for_action>…</context_for_action>``
   or ``<no_intervention/>``; anything else is silence (see ``prompts.parse_decision``).
   ``always_inject``: the prompt requires a reminder; when the model is silent or garbled anyway
   that is recorded (``decide.parsed``) and nothing is injected — no filler text is made up.

Above 50 bank entries the phase prompts show the 20 knowledge and 20 procedural entries most
similar to the window (BM25, ``bm25.py``).

**Injection**: into the next agent call only (``Transient``, placement ``system`` for
``injection = "transient_system"``, ``user_append`` for ``"user_append"``); never the status.
``full_bank`` shows the whole knowledge and procedural bank and ``retrieval`` the ``retrieval_k``
entries most similar to the current window (BM25, only entries sharing a term with it) before
EVERY agent step; the bank is edited at triggers only. Their non-trigger steps that inject are
recorded as ``memory.show`` events.

**Failures**: a memory call that fails after the channel's retries (``RetriesExhausted``) is
recorded in the trigger's event (``error``) and nothing is injected at that trigger (after a failed
edit the decision call is skipped); the trial goes on. A ``FatalChannelError`` propagates.

**Events** (``ctx.event("memory", ...)``), one ``memory.trigger`` per trigger::

    {"step": int, "mode": str,
     "edit":   None | {"tool_calls": [{"name", "arguments", "result", "ok"}],
                       "bank_size": {"knowledge", "procedural", "status_chars"},
                       "call": int | None, "error": str | None},
     "decide": None | {"decision": "inject" | "silent", "text": str | None, "raw": str | None,
                       "parsed": str | None, "call": int | None, "error": str | None},
     "injected": str | None,
     "retrieved": [ids]            # mode retrieval only
    }

``edit`` is None in mode advisor, ``decide`` None in full_bank and retrieval. ``call`` is the index
of the call in ``trajectory.model_calls`` (tokens, latency, attempts), also for a failed call.
"""

from __future__ import annotations

import json
from typing import Any

from agentrig.errors import RetriesExhausted
from agentrig.types import Transient

from . import prompts
from .bank import TOOLS, Bank
from .bm25 import terms
from .settings import BANK_MODES, DECIDING_MODES, MemorySettings
from .window import Conversation, View, clip

NAME = "memory"
RAW_CHARS = 500


def _failure(exc: RetriesExhausted) -> str:
    return f"{exc.code}: {exc.diagnosis.message}"[:500]


class MemoryPlugin:
    name = NAME

    def __init__(self, settings: MemorySettings, ctx: Any):
        self.settings = settings
        self.ctx = ctx
        self.mode = settings.mode
        self.bank: Bank | None = Bank(settings.max_entry_chars) if settings.mode in BANK_MODES else None
        self.conversation = Conversation(ctx.trajectory.messages, settings.max_output_chars)
        self._previous: list[str] = []  # results of the last trigger's edits, for the next edit prompt
        self._bank_text: tuple[int, str | None] | None = None  # (bank version, full_bank text)

    # ------------------------------------------------------------------ the hook

    async def before_agent_step(self, step: int) -> list[Transient]:
        s = self.settings
        if step % s.interval == 0:
            text = await self._trigger(step)
        elif self.mode in ("full_bank", "retrieval"):
            data = self._show(self.conversation.view(s.window) if self.mode == "retrieval" else None)
            text = data["injected"]
            if text:
                self.ctx.event(NAME, "memory.show", step=step, mode=self.mode, **data)
        else:
            return []
        return [Transient(text=text, placement=s.placement, source=NAME)] if text else []

    async def _trigger(self, step: int) -> str | None:
        view = self.conversation.view(self.settings.window)
        data: dict[str, Any] = {"step": step, "mode": self.mode, "edit": None, "decide": None, "injected": None}
        edited = True
        if self.mode != "advisor":
            data["edit"] = await self._edit(step, view)
            edited = data["edit"]["error"] is None
        if self.mode in DECIDING_MODES:
            if edited:
                data["decide"], reminder = await self._decide(step, view)
                if reminder:
                    data["injected"] = prompts.reminder_text(reminder)
            else:
                data["decide"] = {"decision": "silent", "text": None, "raw": None, "parsed": None, "call": None,
                                  "error": "skipped: the edit call of this trigger failed"}
        elif edited:
            data.update(self._show(view))
        elif self.mode == "retrieval":
            data["retrieved"] = []
        self.ctx.event(NAME, "memory.trigger", **data)
        return data["injected"]

    # ------------------------------------------------------------------ phase 1: edit

    async def _edit(self, step: int, view: View) -> dict[str, Any]:
        bank = self.bank
        assert bank is not None
        query = terms(view.query) if len(bank) > prompts.BANK_SHOWN_ABOVE else None
        messages = [{"role": "system", "content": prompts.EDIT_SYSTEM},
                    {"role": "user", "content": prompts.edit_request(view, bank, step, query, self._previous)}]
        try:
            done, call = await self.ctx.complete("memory", messages, TOOLS, purpose="memory.edit")
        except RetriesExhausted as exc:
            return {"tool_calls": [], "bank_size": bank.size(),
                    "call": len(self.ctx.trajectory.model_calls) - 1, "error": _failure(exc)}
        calls = []
        previous = []
        for c in done.message.tool_calls:
            ok, result = bank.apply(c.name, c.arguments, step, c.arguments_error)
            arguments = c.arguments if c.arguments is not None else c.arguments_raw
            calls.append({"name": c.name, "arguments": arguments, "result": result, "ok": ok})
            raw = c.arguments_raw or json.dumps(arguments, ensure_ascii=False)
            previous.append(f"{c.name}({clip(raw, 300)}) -> {result}")
        self._previous = previous
        return {"tool_calls": calls, "bank_size": bank.size(), "call": call, "error": None}

    # ------------------------------------------------------------------ phase 2: decide

    async def _decide(self, step: int, view: View) -> tuple[dict[str, Any], str | None]:
        bank = self.bank
        query = terms(view.query) if bank is not None and len(bank) > prompts.BANK_SHOWN_ABOVE else None
        messages = [{"role": "system", "content": prompts.decide_system(self.mode)},
                    {"role": "user", "content": prompts.decide_request(view, bank, step, query)}]
        try:
            done, call = await self.ctx.complete("memory", messages, None, purpose="memory.decide")
        except RetriesExhausted as exc:
            return {"decision": "silent", "text": None, "raw": None, "parsed": None,
                    "call": len(self.ctx.trajectory.model_calls) - 1, "error": _failure(exc)}, None
        content = done.message.content
        parsed, reminder = prompts.parse_decision(content)
        if reminder is not None:
            reminder = clip(reminder, self.settings.max_reminder_chars)
        out = {"decision": "inject" if reminder else "silent", "text": reminder,
               "raw": (content or "")[:RAW_CHARS], "parsed": parsed, "call": call, "error": None}
        return out, reminder

    # ------------------------------------------------------------------ full_bank / retrieval

    def _show(self, view: View | None) -> dict[str, Any]:
        """What full_bank (the whole bank) or retrieval (top-k for the window) shows the agent."""
        bank = self.bank
        assert bank is not None
        if self.mode == "full_bank":
            cached = self._bank_text
            if cached is None or cached[0] != bank.version:
                cached = self._bank_text = (bank.version, prompts.bank_text(bank))
            return {"injected": cached[1]}
        assert view is not None
        ids = bank.index.top(terms(view.query), self.settings.retrieval_k, positive_only=True) if len(bank) else []
        entries = [bank.get(i) for i in ids]
        return {"injected": prompts.retrieved_text([e for e in entries if e is not None]), "retrieved": ids}
