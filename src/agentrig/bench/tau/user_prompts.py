"""The user simulator's system prompt: general guidelines + the task's scenario.

The prompt has τ²-bench's structure, so that a model playing the user sees the same shape of
prompt whichever guidelines are used::

    <guidelines>

    <scenario>
    <the task's user_scenario, rendered as tau2-bench renders it>
    </scenario>

The guidelines are tau2-bench's own files (``<data root>/user_simulator/simulation_guidelines.md``,
or ``simulation_guidelines_tools.md`` when the user has tools) when the setting asks for them, or
the built-in ones below (our own wording, same two variants).
"""

from __future__ import annotations

from pathlib import Path

from agentrig.errors import ConfigError

GUIDELINES_DIR = "user_simulator"
GUIDELINES_FILES = {False: "simulation_guidelines.md", True: "simulation_guidelines_tools.md"}
# newer tau2-bench guideline files carry this marker where run-time persona text goes (none here)
PERSONA_MARKER = "<PERSONA_GUIDELINES>"

_BUILTIN_COMMON_HEAD = """\
# Playing the customer

You are a customer who has contacted a company's support service, and you are talking to one of \
its support agents. Act out the situation described in the scenario below as a real person in \
that situation would.
"""

_BUILTIN_TOOLS_NOTE = """\
You also have a device (for example your phone) that you can operate with the tools you are given. \
The agent cannot see or touch it: when the agent asks you to check or change something on it, you \
do it with a tool.
"""

_BUILTIN_RULES = """\
## How to behave
- Write one message per turn, short and natural, the way people write in a support chat.
- Stick to the scenario. Anything it does not tell you, you do not know: say so rather than \
invent names, numbers or facts.
- Put things in your own words instead of copying the scenario's sentences.
- Give details only when they are needed or asked for, a little at a time, not everything at once.
"""

_BUILTIN_TOOL_RULES = """\
- In one turn, either write a message to the agent or make a tool call, not both.
- Use a tool only when the agent asks you to do something on your device, or when you need it \
to answer the agent's question. If you are unsure what the agent wants you to do, ask.
- Report only what the tools actually returned; never guess or make up a result. If a tool \
call fails, correct it and try again.
- If the agent asks for several actions at once, say you can only do one at a time and ask \
which to do first.
- The agent does not see your tool calls, only your messages.
"""

_BUILTIN_ENDING = """\
## Ending the conversation
- Keep talking until what the scenario asks for is done.
- When it is done, write ###STOP### to end the conversation.
- When the agent hands you over to another agent or a human, write ###TRANSFER###.
- When the scenario gives you no way to go on (you would have to make things up), write \
###OUT-OF-SCOPE###.
Stay in character throughout, and keep to the scenario.
"""


def builtin_guidelines(with_tools: bool) -> str:
    """Our own guidelines for the user simulator (the variant for a user with tools or without)."""
    parts = [_BUILTIN_COMMON_HEAD]
    if with_tools:
        parts.append(_BUILTIN_TOOLS_NOTE)
    rules = _BUILTIN_RULES + (_BUILTIN_TOOL_RULES if with_tools else "")
    parts += [rules, _BUILTIN_ENDING]
    return "\n".join(parts)


_file_cache: dict[Path, tuple[tuple[int, int], str]] = {}


def _read_cached(path: Path) -> str | None:
    try:
        st = path.stat()
    except OSError:
        return None
    stamp = (st.st_mtime_ns, st.st_size)
    hit = _file_cache.get(path)
    if hit is not None and hit[0] == stamp:
        return hit[1]
    text = path.read_text(encoding="utf-8")
    _file_cache[path] = (stamp, text)
    return text


def tau2_guidelines_path(data_root: str | Path | None, with_tools: bool) -> Path | None:
    if data_root is None:
        return None
    return Path(data_root) / GUIDELINES_DIR / GUIDELINES_FILES[with_tools]


def tau2_guidelines(data_root: str | Path | None, with_tools: bool) -> str | None:
    """tau2-bench's guidelines from the data root (read once per file version), or None."""
    path = tau2_guidelines_path(data_root, with_tools)
    return _read_cached(path) if path is not None else None


def resolve_guidelines(choice: str, data_root: str | Path | None, with_tools: bool) -> tuple[str, str]:
    """(guidelines text, source) where source is ``tau2`` or ``builtin``.

    ``choice``: ``auto`` = tau2-bench's file when the data root has it, else ours; ``tau2`` = the
    file or a ConfigError; ``builtin`` = ours."""
    if choice == "builtin":
        return builtin_guidelines(with_tools), "builtin"
    text = tau2_guidelines(data_root, with_tools)
    if text is not None:
        return text.replace(PERSONA_MARKER, ""), "tau2"
    if choice == "auto":
        return builtin_guidelines(with_tools), "builtin"
    if choice != "tau2":
        raise ConfigError(f"user.guidelines = {choice!r} is not a choice; use \"auto\", \"tau2\" or \"builtin\"")
    name = GUIDELINES_FILES[with_tools]
    if data_root is None:
        where = "no data root is given, so there is no user_simulator/ directory to look in"
    else:
        where = f"{Path(data_root) / GUIDELINES_DIR / name} does not exist"
    raise ConfigError(
        f"user.guidelines = \"tau2\" needs tau2-bench's user simulator guidelines ({GUIDELINES_DIR}/{name}), "
        f"but {where}.\n"
        "  fix: point the data root at a tau2-bench data root that has user_simulator/ "
        "(`agentrig data pull tau2 --dest DIR`), or set user.guidelines = \"auto\" (falls back to the "
        "built-in guidelines) or \"builtin\""
    )


def system_prompt(guidelines: str, scenario_text: str) -> str:
    """tau2-bench's layout: the guidelines, a blank line, the scenario in <scenario> tags."""
    return f"{guidelines}\n\n<scenario>\n{scenario_text}\n</scenario>"
