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

**Side requests** — a request that offers tools but none of the known shell tools, or offers none
and either has ``max_tokens`` ≤ ``SIDE_MAX_TOKENS`` or names an agent product in its system text
(Claude Code's, Codex's) — get the short text ``SIDE_REPLY`` and never count as a command played.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..agents.bash_prompts import ACTION_LABEL, SUBMIT_SENTINEL, TOOL_NAME

__all__ = ["AGENTRIG_NATIVE", "AGENTRIG_TEXT", "CLAUDE_CODE", "CODEX", "MINI_ACTION_LABEL", "MINI_NATIVE",
           "MINI_SUBMIT_SENTINEL", "MINI_TEXT", "PROTOCOLS", "Protocol", "SIDE_REPLY", "codex_poll", "protocol_of",
           "tool_names"]

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


@dataclass(frozen=True)
class Protocol:
    """One agent's way: ``tool`` its shell tool (None: text mode, one fenced block per reply),
    ``finish`` ``"submit"`` (a submit command) or ``"text"`` (a final text without a tool call)."""

    name: str  # agentrig | mini | codex | claude-code
    tool: str | None
    finish: str
    label: str = ACTION_LABEL  # text mode's fence label
    sentinel: str = SUBMIT_SENTINEL  # the submit command's first output line

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
        return {"command": command}


AGENTRIG_NATIVE = Protocol("agentrig", TOOL_NAME, "submit")
AGENTRIG_TEXT = Protocol("agentrig", None, "submit")
MINI_NATIVE = Protocol("mini", TOOL_NAME, "submit", MINI_ACTION_LABEL, MINI_SUBMIT_SENTINEL)
MINI_TEXT = Protocol("mini", None, "submit", MINI_ACTION_LABEL, MINI_SUBMIT_SENTINEL)
CODEX = Protocol("codex", CODEX_TOOL, "text")
CLAUDE_CODE = Protocol("claude-code", CLAUDE_TOOL, "text")
PROTOCOLS = (AGENTRIG_NATIVE, AGENTRIG_TEXT, MINI_NATIVE, MINI_TEXT, CODEX, CLAUDE_CODE)


def tool_names(body: dict) -> set[str]:
    """The names of the tools a request offers (chat tools; a flat ``name`` is read too)."""
    names = set()
    for t in body.get("tools") or ():
        if isinstance(t, dict):
            fn = t.get("function") if isinstance(t.get("function"), dict) else t
            if isinstance(fn.get("name"), str):
                names.add(fn["name"])
    return names


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
    if names:
        return None
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
