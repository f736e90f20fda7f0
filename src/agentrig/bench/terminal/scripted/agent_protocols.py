"""How each agent the solution endpoint plays for speaks: its shell tool, its count of commands
played, its way of finishing, and its side requests — recognised per request from the request alone.

The solution endpoint sees chat-style bodies (``messages``, ``tools``): agentrig's bash agent
sends them itself; an installed agent's wire (Responses, Anthropic Messages, streaming or not) is
turned into them by the measuring proxy (or by ``FakeEndpoint``'s own wires), each tool with the
agent's own name and parameters. What the real agents send (each run against a capture server,
offline; a task of one command is 2 model calls for each of them):

- **agentrig's bash agent**: tool ``bash`` (``command``) in native mode, else a reply with one
  ```` ```bash-action ```` block; submits with ``echo AGENTRIG_SUBMIT && echo <note>``.
- **mini-swe-agent 2.4.6**, Chat Completions, not streaming, no ``temperature`` unless its config
  sets one. Default config (``mini.yaml``): tools ``[bash]`` — ``{"name": "bash", "description":
  "Execute a bash command", "parameters": {"command": string}}``, a system message and a user
  message holding the task and its submit instruction (``echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT``);
  each reply's ``bash`` calls are run (each in a fresh subshell) and answered by ``tool`` messages.
  Text config (``mini_textbased.yaml``): no tools, one ```` ```mswea_bash_command ```` block per
  reply. It stops when a command's output starts with the line ``COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT``
  (the rest of the output is its submission). Recognised by the sentinel (tool mode) or the fence
  label (text mode) in its system/user messages, or its tool's description (set in its code) —
  its tool is named like agentrig's. Its model class (litellm) looks up a price list on github.com
  at start: offline it falls back to its copy (``LITELLM_LOCAL_MODEL_COST_MAP=True`` skips it).
- **Codex CLI 0.169.0** (``codex exec``), Responses, always streaming (``stream: true``, no
  ``temperature``): ``instructions`` empty, ``input`` = two ``developer`` messages (its ~17 KB
  prompt, the skills list), a user message with ``<environment_context>``, the user's task; tools
  ``exec_command`` (``cmd`` a **string**, required; optional ``workdir``, ``yield_time_ms``
  (default 10000, at most 30000), ``tty``, ``login``, ``shell``, ``max_output_tokens``,
  ``sandbox_permissions``, ``justification``, ``prefix_rule``), ``write_stdin`` (``session_id``,
  ``chars``, ``yield_time_ms``), ``request_user_input``, ``view_image``, ``get_goal``,
  ``create_goal``, ``update_goal``, a ``namespace`` tool ``multi_agent_v1`` and a ``web_search``
  tool; ``tool_choice: "auto"``, ``parallel_tool_calls: true``, ``reasoning: {"summary": "auto"}``,
  ``store: false``, ``include: ["reasoning.encrypted_content"]``. A command's output comes back as
  ``Chunk ID …\\nWall time …\\nProcess exited with code N\\n…Output:\\n…``; one still running after
  ``yield_time_ms`` comes back as ``Process running with session ID N`` and is waited for with
  ``write_stdin`` (empty ``chars``). The turn — and ``codex exec`` — ends at a reply without a tool
  call. Same tools whatever the model name (tried: solution, gpt-5, gpt-4.1, o3); no other request,
  even without the ``--disable`` flags.
- **Claude Code 2.1.328** (``claude -p``), Anthropic Messages ``POST /v1/messages?beta=true``,
  streaming, ``max_tokens`` 32000, ``thinking: {"type": "adaptive"}``, no ``temperature``;
  ``system`` = blocks (a billing-header line, "You are a Claude agent, built on Anthropic's Claude
  Agent SDK.", its prompt); tools ``Agent``, ``Bash`` (``command`` required; ``timeout`` in ms, at
  most 600000, default 120000; ``description``, ``run_in_background``,
  ``dangerouslyDisableSandbox``), ``Edit``, ``ListAgents``, ``Read``, ``ReportFindings``,
  ``ScheduleWakeup``, ``Skill``, ``ToolSearch``, ``Workflow``, ``DeferredToolPlaceholder``,
  ``Write``. Its run ends at a reply without a tool use (``stop_reason: end_turn``). Side requests:
  with ``CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1`` none; without it, a ``HEAD /api/hello`` to
  the base URL first (a reachability check, no model call). Older versions also asked for a
  title/topic or a quota check (no tools, a tiny ``max_tokens``): answered as side requests below.

- **A user's own agent** (``kind = "command"``; e.g. ``examples/command_agent/agent.py``: tool
  ``shell`` (``cmd``), each command run, the whole history sent each time with the results as
  ``tool`` messages, its run ends at a reply without a tool call): any request whose tools are none
  of the above but hold a **shell-like** tool (``shell_tool``) — its name says shell (a word of it
  is ``shell``, ``bash``, ``sh``, ``zsh``, ``terminal``, ``cmd`` or ``command``), or the
  first sentence of its description says it runs or executes shell/bash/terminal commands, or its
  only required parameter is a string named ``cmd``, ``command`` or ``script``. Its argument comes
  from its schema: its one required string parameter, else a string property named ``cmd``,
  ``command`` or ``script``, else its only string property (a tool with no such slot is no shell).
  A tool picked by name or description wins over one picked by its parameter alone (a
  ``run_python(script)`` listed first). Its calls of that tool are the commands played; it finishes
  with a text and no tool call, as Codex and Claude Code do. A request naming an agent product in
  its system text (Claude Code's, Codex's) without that product's shell tool stays a side request
  (e.g. Claude Code's ``SlashCommand`` takes one ``command`` string but runs no shell).

**Side requests** — a request that offers tools but no shell-like one, or offers none and either
has ``max_tokens`` ≤ ``SIDE_MAX_TOKENS`` or names an agent product in its system text (Claude
Code's, Codex's) — get the short text ``SIDE_REPLY`` and never count as a command played.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from agentrig.agents.bash_prompts import ACTION_LABEL, SUBMIT_SENTINEL, TOOL_NAME

__all__ = ["AGENTRIG_NATIVE", "AGENTRIG_TEXT", "CLAUDE_CODE", "CODEX", "MINI_ACTION_LABEL", "MINI_NATIVE",
           "MINI_SUBMIT_SENTINEL", "MINI_TEXT", "PROTOCOLS", "Protocol", "SIDE_REPLY", "codex_poll", "generic",
           "protocol_of", "shell_tool", "tool_names"]

MINI_ACTION_LABEL = "mswea_bash_command"  # mini-SWE-agent 2.x's text-mode fence label and submit sentinel
MINI_SUBMIT_SENTINEL = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
MINI_TOOL_DESCRIPTION = "Execute a bash command"  # its bash tool's, set in its code (not its config)
SIDE_REPLY = "OK."
SIDE_MAX_TOKENS = 16
CODEX_TOOL, CODEX_POLL_TOOL, CLAUDE_TOOL = "exec_command", "write_stdin", "Bash"
CODEX_YIELD_MS = 30_000  # exec_command's longest wait before it answers "Process running with session ID N"
CODEX_POLL_MS = 300_000  # write_stdin's longest empty poll
CLAUDE_TIMEOUT_MS = 600_000  # Bash's longest foreground timeout
_PRODUCT_MARKERS = ("x-anthropic-billing-header", "Claude Code", "Claude Agent SDK", "Codex CLI")
_RUNNING = re.compile(r"Process running with session ID (\d+)")
SHELL_WORDS = frozenset({"shell", "bash", "sh", "zsh", "terminal", "cmd", "command"})  # in a tool's name
SHELL_ARGS = ("cmd", "command", "script")  # a shell tool's argument, by its name
_RUNS = re.compile(r"\b(run|runs|running|execute|executes|executing)\b", re.IGNORECASE)
_SHELLISH = re.compile(r"\b(shell|bash|zsh|terminal|command[- ]line)\b", re.IGNORECASE)
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")  # RunInTerminal, run_command, bash2 -> words


@dataclass(frozen=True)
class Protocol:
    """One agent's way: ``tool`` its shell tool (None: text mode, one fenced block per reply),
    ``finish`` ``"submit"`` (a submit command) or ``"text"`` (a final text without a tool call)."""

    name: str  # agentrig | mini | codex | claude-code | generic
    tool: str | None
    finish: str
    label: str = ACTION_LABEL  # text mode's fence label
    sentinel: str = SUBMIT_SENTINEL  # the submit command's first output line
    arg: str = "command"  # the shell tool's argument that holds the command

    @property
    def native(self) -> bool:
        return self.tool is not None

    def arguments(self, command: str, step: int, total: int) -> dict:
        """The shell tool's arguments that run ``command`` (0-based ``step`` of ``total``)."""
        if self.name == "codex":
            return {"cmd": command, "yield_time_ms": CODEX_YIELD_MS}
        if self.name == "claude-code":
            return {"command": command, "description": f"Run step {step + 1} of {total} of the solution",
                    "timeout": CLAUDE_TIMEOUT_MS}
        return {self.arg: command}


AGENTRIG_NATIVE = Protocol("agentrig", TOOL_NAME, "submit")
AGENTRIG_TEXT = Protocol("agentrig", None, "submit")
MINI_NATIVE = Protocol("mini", TOOL_NAME, "submit", MINI_ACTION_LABEL, MINI_SUBMIT_SENTINEL)
MINI_TEXT = Protocol("mini", None, "submit", MINI_ACTION_LABEL, MINI_SUBMIT_SENTINEL)
CODEX = Protocol("codex", CODEX_TOOL, "text")
CLAUDE_CODE = Protocol("claude-code", CLAUDE_TOOL, "text")
PROTOCOLS = (AGENTRIG_NATIVE, AGENTRIG_TEXT, MINI_NATIVE, MINI_TEXT, CODEX, CLAUDE_CODE)  # and generic(tool, arg)


def generic(tool: str, arg: str) -> Protocol:
    """A user's own agent's protocol: its shell-like ``tool`` gets each command as ``{arg: command}``."""
    return Protocol("generic", tool, "text", arg=arg)


def tool_names(body: dict) -> set[str]:
    """The names of the tools a request offers (chat tools; a flat ``name`` is read too)."""
    names = set()
    for t in body.get("tools") or ():
        if isinstance(t, dict):
            fn = t.get("function") if isinstance(t.get("function"), dict) else t
            if isinstance(fn.get("name"), str):
                names.add(fn["name"])
    return names


def _functions(body: dict) -> list[dict]:
    """The function definitions a request offers (chat tools' ``function``, or a flat tool)."""
    out = []
    for t in body.get("tools") or ():
        if isinstance(t, dict):
            fn = t.get("function") if isinstance(t.get("function"), dict) else t
            if isinstance(fn.get("name"), str):
                out.append(fn)
    return out


def _is_string(schema: Any) -> bool:
    kind = schema.get("type") if isinstance(schema, dict) else None
    return kind == "string" or (isinstance(kind, list) and "string" in kind)


def _command_slot(fn: dict) -> tuple[str | None, bool]:
    """The parameter a shell-like tool's command goes in (None: no string to fill), and whether its
    schema alone says shell (its only required parameter is a string named like ``SHELL_ARGS``)."""
    params = fn.get("parameters") if isinstance(fn.get("parameters"), dict) else {}
    props = params.get("properties") if isinstance(params.get("properties"), dict) else {}
    required = [r for r in params.get("required") or () if isinstance(r, str)]
    strings = [name for name, schema in props.items() if _is_string(schema)]
    required_strings = [r for r in required if r in strings]
    if len(required_strings) == 1:
        slot = required_strings[0]
    else:
        slot = next((a for a in SHELL_ARGS if a in strings), strings[0] if len(strings) == 1 else None)
    return slot, required == [slot] and slot in SHELL_ARGS


def _says_shell(fn: dict) -> bool:
    """Whether a tool's name, or the first sentence of its description, says it runs shell commands."""
    if {w.lower() for w in _WORD.findall(fn["name"])} & SHELL_WORDS:
        return True
    description = fn.get("description") if isinstance(fn.get("description"), str) else ""
    first = re.split(r"(?<=[.!?])\s|\n", description.strip(), maxsplit=1)[0]
    return bool(_RUNS.search(first) and _SHELLISH.search(first))


def shell_tool(body: dict) -> tuple[str, str] | None:
    """A user's own agent's shell-like tool and its argument (see the module docstring), or None."""
    by_schema = None
    for fn in _functions(body):
        slot, schema_says = _command_slot(fn)
        if slot is None:
            continue
        if _says_shell(fn):
            return fn["name"], slot
        if schema_says and by_schema is None:
            by_schema = (fn["name"], slot)
    return by_schema


def _tool_description(body: dict, name: str) -> str | None:
    for t in body.get("tools") or ():
        fn = (t.get("function") if isinstance(t.get("function"), dict) else t) if isinstance(t, dict) else {}
        if fn.get("name") == name:
            return fn.get("description")
    return None


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(p.get("text") or "") for p in content if isinstance(p, dict))
    return ""


def _said(messages: list[dict], roles: tuple[str, ...], words: tuple[str, ...], first: int = 4) -> bool:
    """Whether one of ``words`` is in the first ``first`` messages of ``roles`` (the prompts)."""
    seen = 0
    for m in messages:
        if not isinstance(m, dict) or m.get("role") not in roles:
            continue
        text = _text(m.get("content"))
        if any(w in text for w in words):
            return True
        seen += 1
        if seen >= first:
            break
    return False


def protocol_of(body: dict, flavor: str = "agentrig") -> Protocol | None:
    """The agent's protocol of this request; None for a side request (see the module docstring).
    ``flavor="mini"`` (the endpoint's) makes a ``bash`` or text-mode request mini's whatever it says."""
    messages = body.get("messages") if isinstance(body.get("messages"), list) else []
    names = tool_names(body)
    if CODEX_TOOL in names:
        return CODEX
    if CLAUDE_TOOL in names:
        return CLAUDE_CODE
    if TOOL_NAME in names:
        mini = (flavor == "mini" or _tool_description(body, TOOL_NAME) == MINI_TOOL_DESCRIPTION
                or _said(messages, ("system", "user"), (MINI_SUBMIT_SENTINEL,)))
        return MINI_NATIVE if mini else AGENTRIG_NATIVE
    if names:  # a user's own agent, through its shell-like tool; else a side request
        found = None if _said(messages, ("system",), _PRODUCT_MARKERS) else shell_tool(body)
        return generic(*found) if found else None
    if flavor == "mini" or _said(messages, ("system", "user"), ("```" + MINI_ACTION_LABEL,)):
        return MINI_TEXT
    limit = body.get("max_tokens") or body.get("max_completion_tokens")
    if isinstance(limit, int) and limit <= SIDE_MAX_TOKENS:
        return None
    if _said(messages, ("system",), _PRODUCT_MARKERS):
        return None
    return AGENTRIG_TEXT


def codex_poll(messages: list[dict]) -> dict | None:
    """Codex's ``write_stdin`` arguments that wait for the command still running, when the last
    message is the output of an ``exec_command`` / ``write_stdin`` call saying so; else None."""
    if not messages or not isinstance(messages[-1], dict) or messages[-1].get("role") != "tool":
        return None
    found = _RUNNING.search(_text(messages[-1].get("content")))
    if found is None or "Process exited with code" in _text(messages[-1].get("content")):
        return None
    return {"session_id": int(found.group(1)), "chars": "", "yield_time_ms": CODEX_POLL_MS}
