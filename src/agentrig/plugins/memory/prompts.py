"""The memory model's prompts (our own wording) and the texts shown to the agent.

Memory-model requests are two messages: a system prompt per phase/mode and one user message that
holds the sections ``<requests>``, ``<status>``, ``<knowledge>``, ``<procedural>``,
``<previous_edits>`` (edit phase only), ``<window>``. The advisor gets no bank sections.

What the agent sees (``reminder_text``, ``bank_text``, ``retrieved_text``) never holds the status.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from .bank import STATUS_MAX_CHARS, Bank, Entry
from .window import View

# the bank above this many entries is shown to the memory model as the most similar ones (BM25)
BANK_SHOWN_ABOVE = 50
SHOWN_PER_KIND = 20

# Benchmark-neutral wording: the same prompts serve an agent that talks with a user through tools
# (τ²-bench) and one that runs shell commands for a task (terminal tasks).
_ROLE = ("You work beside an AI agent that carries out a task with the help of tools: it may be serving "
         "a user in a conversation, or working in a computer environment by running commands. Its run "
         "grows long, and what was said or learned early stops steering what it does next. ")

EDIT_SYSTEM = _ROLE + f"""\
Your job in this step is to maintain a small memory bank for it. You do not speak to the agent or \
the user here; you only edit the bank, with the tools you are given.

The bank has three parts:
- status: your own private scratchpad on progress, open sub-goals and risks. Each update replaces \
it entirely (at most {STATUS_MAX_CHARS} characters). The agent never sees it.
- knowledge: stable facts, such as requirements and constraints from the task or the conversation, \
identifiers, names and paths, facts about the environment.
- procedural: attempts and their outcomes, such as tool calls or commands that failed and the \
reason, fixes that worked, error patterns.
Entries carry an id (K… knowledge, P… procedural) and the agent step at which they were saved.

Read the latest window of the conversation against the bank, then make zero or more tool calls:
- store only what could matter later and would be lost once this window scrolls away; never store \
what the bank already says;
- when an action failed (a tool returned an error, a command exited with a non-zero code or timed \
out), store the failure together with its cause, and later the fix that worked;
- delete entries that turned out wrong or were superseded; to revise an entry, delete it and save \
the new version;
- one fact or one lesson per entry, in a sentence or two;
- replace the status when progress or the open goals have changed.
If the bank is already up to date, answer without any tool call. All tool calls of your answer are \
applied together; you get no further turn on this window (their results are shown to you next time)."""

_FORMAT = """
Answer with exactly one of the two forms below and nothing else:
<context_for_action>the reminder</context_for_action>
<no_intervention/>"""

_OBSERVATIONS = """\
A reminder is an observation for the agent to verify against the conversation: a requirement or \
constraint that the next action could break, a failure that is about to be repeated in the same \
way, an assumption that contradicts a stored fact or an earlier message. It never tells the agent \
what to do, never lays out a plan and never gives orders. One to three sentences, saying what it rests on (what the \
user or the task said, what a tool or a command returned); the agent cannot see your bank or the turn numbers."""

DECIDE_SYSTEM = _ROLE + """\
The agent is about to take its next action. You may hand it one short reminder, but silence is \
the default: most steps need none, and a needless reminder distracts. Speak only when something in \
the memory bank or in the conversation bears on the very next action and the agent looks likely to \
overlook it.

""" + _OBSERVATIONS + "\n" + _FORMAT

ALWAYS_SYSTEM = _ROLE + """\
The agent is about to take its next action, and in this setting you must hand it a reminder at \
every step: choose the single observation most useful for the next action, even when nothing looks \
wrong.

""" + _OBSERVATIONS + """

Answer with the reminder and nothing else, in this form (staying silent is not allowed here):
<context_for_action>the reminder</context_for_action>"""

ADVISOR_SYSTEM = _ROLE + """\
You have no notes of your own: only the user's requests (the task) and the latest window of the \
conversation. The agent is about to take its next action. You may hand it one short reminder, but \
silence is the default: most steps need none, and a needless reminder distracts. Speak only when \
something in the conversation bears on the very next action and the agent looks likely to \
overlook it.

""" + _OBSERVATIONS + "\n" + _FORMAT


def decide_system(mode: str) -> str:
    return {"always_inject": ALWAYS_SYSTEM, "advisor": ADVISOR_SYSTEM}.get(mode, DECIDE_SYSTEM)


# ---------------------------------------------------------------------------------- requests


def _entry_line(e: Entry) -> str:
    return f"{e.id} (step {e.step}): {e.content}"


def shown_entries(bank: Bank, query_terms: Iterable[str] | None) -> tuple[list[Entry], list[Entry]]:
    """The entries put in a phase prompt: all of them, or — above ``BANK_SHOWN_ABOVE`` entries —
    the ``SHOWN_PER_KIND`` knowledge and procedural entries most similar to the window (BM25),
    listed in the order they were saved."""
    if len(bank) <= BANK_SHOWN_ABOVE or query_terms is None:
        return list(bank.knowledge.values()), list(bank.procedural.values())
    q = list(query_terms)
    out = []
    for part in (bank.knowledge, bank.procedural):
        if len(part) <= SHOWN_PER_KIND:
            out.append(list(part.values()))
            continue
        keep = set(bank.index.top(q, SHOWN_PER_KIND, part.keys()))
        out.append([e for k, e in part.items() if k in keep])
    return out[0], out[1]


def _bank_sections(bank: Bank, query_terms: Iterable[str] | None) -> list[str]:
    knowledge, procedural = shown_entries(bank, query_terms)
    parts = [f"<status>\n{bank.status or '(empty)'}\n</status>"]
    for tag, shown, total in (("knowledge", knowledge, len(bank.knowledge)),
                              ("procedural", procedural, len(bank.procedural))):
        note = ""
        if len(shown) < total:
            note = (f"(the bank holds {total} {tag} entries; shown: the {len(shown)} most similar to the "
                    "window)\n")
        body = "\n".join(_entry_line(e) for e in shown) or "(none)"
        parts.append(f"<{tag}>\n{note}{body}\n</{tag}>")
    return parts


def _requests(view: View) -> str:
    body = "\n".join(f"[turn {t}] {text}" for t, text in view.requests)
    return ("<requests>\nThe user's messages before the window, oldest first (later ones appear in the window):\n"
            f"{body or '(none)'}\n</requests>")


def _window(view: View, step: int) -> str:
    return (f"<window>\nThe conversation from the agent's last {view.steps} message(s) on, oldest first:\n"
            f"{view.window or '(nothing yet)'}\n</window>\nThe agent is about to take its step {step}.")


def edit_request(view: View, bank: Bank, step: int, query_terms: Iterable[str] | None,
                 previous: list[str]) -> str:
    parts = [_requests(view), *_bank_sections(bank, query_terms)]
    if previous:
        parts.append("<previous_edits>\nResults of your tool calls at the previous trigger:\n"
                     + "\n".join(previous) + "\n</previous_edits>")
    parts.append(_window(view, step))
    return "\n\n".join(parts)


def decide_request(view: View, bank: Bank | None, step: int, query_terms: Iterable[str] | None) -> str:
    parts = [_requests(view)]
    if bank is not None:
        parts.extend(_bank_sections(bank, query_terms))
    parts.append(_window(view, step))
    return "\n\n".join(parts)


# ---------------------------------------------------------------------------------- agent side

REMINDER_HEAD = ("Note from your memory assistant (an observation to check against the conversation, "
                 "not an instruction):")
BANK_HEAD = ("Notes kept by your memory assistant about this conversation (observations to check, "
             "not instructions):")
RETRIEVED_HEAD = ("Notes from your memory assistant that may bear on this step, found by similarity "
                  "(observations to check, not instructions):")


def reminder_text(reminder: str) -> str:
    return f"{REMINDER_HEAD}\n{reminder}"


def bank_text(bank: Bank) -> str | None:
    """The whole knowledge and procedural bank (mode full_bank); None when both are empty."""
    if not len(bank):
        return None
    parts = [BANK_HEAD]
    if bank.knowledge:
        parts.append("Knowledge:\n" + "\n".join(f"- {_entry_line(e)}" for e in bank.knowledge.values()))
    if bank.procedural:
        parts.append("Procedural:\n" + "\n".join(f"- {_entry_line(e)}" for e in bank.procedural.values()))
    return "\n".join(parts)


def retrieved_text(entries: list[Entry]) -> str | None:
    if not entries:
        return None
    return RETRIEVED_HEAD + "\n" + "\n".join(f"- {_entry_line(e)}" for e in entries)


# ---------------------------------------------------------------------------------- the decision

_REMINDER = re.compile(r"<context_for_action>(.*?)</context_for_action>", re.S | re.I)
_SILENT = re.compile(r"<no_intervention\s*/?>", re.I)


def parse_decision(content: str | None) -> tuple[str, str | None]:
    """``(parsed, reminder)`` from the decision phase's answer. ``parsed`` is ``reminder`` (a
    non-empty ``<context_for_action>`` block, the first one when there are several),
    ``no_intervention``, ``empty`` (a block with nothing in it), ``conflicting`` (both forms) or
    ``unparseable`` (neither; no text). Everything but ``reminder`` means silence."""
    text = content or ""
    blocks = _REMINDER.findall(text)
    silent = _SILENT.search(text) is not None
    if blocks and silent:
        return "conflicting", None
    if blocks:
        first = next((b.strip() for b in blocks if b.strip()), "")
        return ("reminder", first) if first else ("empty", None)
    return ("no_intervention" if silent else "unparseable"), None
