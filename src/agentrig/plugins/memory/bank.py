"""The memory bank of one trial, and the four tools through which the memory model edits it.

- **status**: the memory model's private notes (progress, open sub-goals, risks); every update
  replaces it; at most ``STATUS_MAX_CHARS`` characters (longer text is cut and the tool result
  says so). It appears only in the memory model's own prompts, never in what the agent sees.
- **knowledge** (ids ``K1``, ``K2`` …) and **procedural** (``P1``, ``P2`` …) entries, each with the
  agent step at which it was saved. Ids are never reused within a trial. An entry longer than the
  bank's ``max_entry_chars`` is cut (the tool result says so). To change an entry the model
  deletes it and saves the new text.

``Bank.apply(name, arguments, step)`` runs one tool call and returns ``(ok, result text)``; a call
it cannot run (unknown tool, arguments that are not an object, a missing or non-string argument,
empty content, an id not in the bank) changes nothing and returns ``ok=False`` with an
``error: …`` text. A bank is built per plug-in object, i.e. per trial; nothing is shared.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .bm25 import BM25Index

STATUS_MAX_CHARS = 2000

UPDATE_STATUS = "memory_update_status"
SAVE_KNOWLEDGE = "memory_save_knowledge"
SAVE_PROCEDURAL = "memory_save_procedural"
DELETE = "memory_delete"
TOOL_NAMES = (UPDATE_STATUS, SAVE_KNOWLEDGE, SAVE_PROCEDURAL, DELETE)


def _tool(name: str, description: str, arg: str, arg_description: str) -> dict:
    return {"type": "function", "function": {
        "name": name, "description": description,
        "parameters": {"type": "object", "properties": {arg: {"type": "string", "description": arg_description}},
                       "required": [arg], "additionalProperties": False}}}


TOOLS: list[dict] = [
    _tool(UPDATE_STATUS,
          "Replace your private status notes (progress so far, open sub-goals, risks) with new text. "
          "The agent never sees them. At most 2000 characters; the old notes are discarded.",
          "content", "The complete new status notes."),
    _tool(SAVE_KNOWLEDGE,
          "Store one stable fact as a new knowledge entry: a requirement or constraint, an identifier, "
          "a fact about the environment. Returns the new entry's id (K...).",
          "content", "The fact, short and self-contained."),
    _tool(SAVE_PROCEDURAL,
          "Store one lesson from an attempt as a new procedural entry: a call or command that failed and "
          "why, a fix that worked, an error pattern. Returns the new entry's id (P...).",
          "content", "The attempt and its outcome, short and self-contained."),
    _tool(DELETE,
          "Remove an entry that is wrong, outdated or superseded. To revise an entry, delete it and save "
          "the corrected text.",
          "memory_id", "The id of the entry, e.g. K2 or P5."),
]


@dataclass(slots=True)
class Entry:
    id: str
    kind: str  # "knowledge" | "procedural"
    content: str
    step: int


class Bank:
    def __init__(self, max_entry_chars: int = 500):
        self.max_entry_chars = max_entry_chars
        self.status = ""
        self.knowledge: dict[str, Entry] = {}
        self.procedural: dict[str, Entry] = {}
        self.index = BM25Index()
        self.version = 0  # bumped by every change (for renderings cached by the plug-in)
        self._next = {"K": 1, "P": 1}

    def __len__(self) -> int:
        return len(self.knowledge) + len(self.procedural)

    def size(self) -> dict[str, int]:
        return {"knowledge": len(self.knowledge), "procedural": len(self.procedural),
                "status_chars": len(self.status)}

    def get(self, memory_id: str) -> Entry | None:
        return self.knowledge.get(memory_id) or self.procedural.get(memory_id)

    # ------------------------------------------------------------------ edits

    def update_status(self, content: str) -> str:
        self.version += 1
        if len(content) > STATUS_MAX_CHARS:
            self.status = content[:STATUS_MAX_CHARS]
            return (f"status replaced, but cut to its first {STATUS_MAX_CHARS} of {len(content)} characters "
                    f"(the limit is {STATUS_MAX_CHARS})")
        self.status = content
        return f"status replaced ({len(content)} characters)"

    def save(self, kind: str, content: str, step: int) -> tuple[Entry, str]:
        prefix = "K" if kind == "knowledge" else "P"
        memory_id = f"{prefix}{self._next[prefix]}"
        self._next[prefix] += 1
        note = ""
        if len(content) > self.max_entry_chars:
            note = f", cut to its first {self.max_entry_chars} of {len(content)} characters (the limit per entry)"
            content = content[:self.max_entry_chars]
        entry = Entry(memory_id, kind, content, step)
        (self.knowledge if kind == "knowledge" else self.procedural)[memory_id] = entry
        self.index.add(memory_id, content)
        self.version += 1
        return entry, f"saved as {memory_id}{note}"

    def delete(self, memory_id: str) -> Entry | None:
        entry = self.knowledge.pop(memory_id, None) or self.procedural.pop(memory_id, None)
        if entry is not None:
            self.index.remove(memory_id)
            self.version += 1
        return entry

    # ------------------------------------------------------------------ the tools

    def apply(self, name: str, arguments: Any, step: int, arguments_error: str | None = None) -> tuple[bool, str]:
        """Run one tool call of the memory model; ``(ok, result)``."""
        if name not in TOOL_NAMES:
            return False, f"error: there is no tool {name!r}; the tools are {', '.join(TOOL_NAMES)}"
        if not isinstance(arguments, dict):
            why = f" ({arguments_error})" if arguments_error else ""
            return False, f"error: the arguments of {name} are not a JSON object{why}; nothing changed"
        if name == DELETE:
            memory_id = arguments.get("memory_id")
            if not isinstance(memory_id, str) or not memory_id.strip():
                return False, f"error: {DELETE} needs a string argument `memory_id` (e.g. \"K2\"); nothing changed"
            key = memory_id.strip().upper()
            if self.delete(key) is None:
                return False, (f"error: no entry {memory_id.strip()!r} in the bank (ids are K<n> or P<n> as listed "
                               "in the bank); nothing changed")
            return True, f"deleted {key}"
        content = arguments.get("content")
        if not isinstance(content, str):
            return False, f"error: {name} needs a string argument `content`; nothing changed"
        if name == UPDATE_STATUS:
            return True, self.update_status(content.strip())
        content = content.strip()
        if not content:
            return False, f"error: `content` of {name} is empty; nothing saved"
        _, result = self.save("knowledge" if name == SAVE_KNOWLEDGE else "procedural", content, step)
        return True, result
