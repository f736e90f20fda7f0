"""Codex CLI or Claude Code held in one conversation, turn by turn: each turn is one headless run
of the real binary on this host (driven by ``cli_trial.py`` for τ², ``bench/tau/cli_agent.py``, and
AppWorld, ``bench/appworld/cli_agent.py``), the first one starting
the agent's session and every later one resuming it, so the agent keeps its own history.

    convo = CliConversation("codex", root, home, model=…, instructions=policy, proxy_url=…,
                            proxy_token=…, mcp_url=…, mcp_token=…)
    turn = await convo.turn("I want to change my flight.", stop=(episode_ended,))   # turn.reply
    convo.env        # everything the agent's processes get

- **Codex**: ``codex exec --json --skip-git-repo-check -`` (the text on stdin), then
  ``codex exec resume --json --skip-git-repo-check <thread_id> -`` (the id from its
  ``thread.started`` event; never ``--ephemeral``: resume needs the session files). Its
  ``CODEX_HOME`` holds a ``config.toml`` whose one model provider is the trial's proxy, whose
  ``model_instructions_file`` is the instructions (in place of Codex's own base instructions), whose
  one MCP server ``[mcp_servers.<mcp_name>]`` (τ²'s ``tau``, AppWorld's ``appworld``) is the trial's tool server (``url``, the token read from
  ``AGENTRIG_MCP_TOKEN`` by ``bearer_token_env_var``, ``required``, its tools approved), and which
  turns its own tools off (``CODEX_OFF``, ``CODEX_TABLES``: no shell, no sub-agents, goals, web
  search, plug-ins or apps; a read-only sandbox; no environment, permission, apps or skills sections
  in its prompt).
- **Claude Code**: ``claude -p --output-format stream-json --verbose --session-id <uuid>``, then
  ``--resume <uuid>``, the text on stdin, with ``--system-prompt-file`` (the instructions in place of
  its own system prompt), ``--tools ""`` (none of its built-in tools), ``--strict-mcp-config
  --mcp-config <home>/mcp.json`` (the tool server as ``<mcp_name>``, its header naming
  ``${AGENTRIG_MCP_TOKEN}``) and ``--allowedTools mcp__<mcp_name>`` (every tool of that server, no other).

A turn's reply is its last message to the user (Codex's last ``agent_message``, Claude Code's
``result``). Each run is a process group of its own, killed whole when one of the ``stop`` events
is set (the episode or the proxy ended the trial in the middle of the turn), when the turn is
cancelled, and after the turn (anything it left). Its JSON events are appended to
``<home>/codex.jsonl`` / ``claude.jsonl`` (the agent's own record, read with ``records.py``), its
other output to ``<home>/agent.log``.

The processes' environment (``env``) is built from nothing: ``PATH``, a private ``HOME`` (and
``CODEX_HOME`` / ``CLAUDE_CONFIG_DIR`` inside it), the proxy's address and per-trial token as the
API key, and the tool server's per-trial token — never agentrig's real key.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentrig.agents.base import CONVERSATION_KINDS

from .cli_config import codex_config, toml_value
from .records import RECORD_FILES, AgentRecord, parse_claude, parse_codex

MCP_SERVER = "tau"  # the tool server's default name in the agent's config: its tools are mcp__tau__<name>
MCP_TOKEN_ENV = "AGENTRIG_MCP_TOKEN"
PATH = "/usr/local/bin:/usr/bin:/bin"
LINE_LIMIT = 64 * 1024 * 1024  # one JSON event (a tool result inside) may be long
KILL_WAIT_S = 5.0

# Codex's own tools and prompt sections, off: the τ² tools (its MCP server) are all it has
CODEX_OFF: dict[str, Any] = {
    "sandbox_mode": "read-only", "web_search": "disabled", "check_for_update_on_startup": False,
    "include_environment_context": False, "include_permissions_instructions": False,
    "include_apps_instructions": False,
}
CODEX_FEATURES_OFF = ("shell_tool", "unified_exec", "goals", "plugins", "remote_plugin", "apps")
CODEX_TABLES: dict[str, dict[str, Any]] = {
    "features": {name: False for name in CODEX_FEATURES_OFF}, "agents": {"enabled": False},  # no sub-agents
    "skills": {"include_instructions": False}, "skills.bundled": {"enabled": False},
    "analytics": {"enabled": False},
}
CLAUDE_ENV = {"IS_SANDBOX": "1", "DISABLE_TELEMETRY": "1", "DISABLE_ERROR_REPORTING": "1", "DISABLE_AUTOUPDATER": "1",
              "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}


@dataclass
class Turn:
    """One turn's run: the reply (None: the turn ended without a message to the user), the exit
    code (None when we killed it: ``stopped``), and the agent's own record of the turn."""

    reply: str | None
    exit_code: int | None
    stopped: bool
    record: AgentRecord
    tool_calls: int = 0  # the MCP tool calls its record shows
    failed_tool_calls: list[str] = field(default_factory=list)  # the ones whose result it marks an error (τ²'s Error: too)
    notes: list[str] = field(default_factory=list)  # Codex's error *items*: its warnings (an unknown model name)


class CliConversation:
    """One trial's conversation with Codex or Claude Code (see the module's docstring)."""

    def __init__(self, kind: str, entry: Path, home: Path, *, model: str, instructions: str, proxy_url: str,
                 proxy_token: str, mcp_url: str, mcp_token: str, config: dict[str, Any] | None = None,
                 config_file: str | None = None, args: list[str] | None = None, mcp_name: str = MCP_SERVER):
        if kind not in CONVERSATION_KINDS:
            raise ValueError(f"CliConversation: kind {kind!r} is not one of {', '.join(CONVERSATION_KINDS)}")
        self.kind, self.entry, self.home = kind, Path(entry), Path(home)
        self.mcp_name = mcp_name  # the tool server's name in the agent's config (τ²: tau, AppWorld: appworld)
        self.args = list(args or [])
        self.config = dict(config or {})
        self.session: str | None = None  # Codex's thread id, Claude Code's session id (after the first turn)
        self.turns = 0
        self.pid: int | None = None  # the current (or last) turn's process, the leader of its group
        self._running = self._killed = False
        self.model = model
        self.work = self.home / "work"  # the agent's working directory: empty, its own
        self.work.mkdir(parents=True, exist_ok=True)
        self.record_path = self.home / RECORD_FILES[kind]
        self.log_path = self.home / "agent.log"
        instructions_file = self.home / "instructions.md"
        instructions_file.write_text(instructions, encoding="utf-8")
        self.env = {"PATH": PATH, "HOME": str(self.home), MCP_TOKEN_ENV: mcp_token}
        extra = Path(config_file).read_text(encoding="utf-8") if config_file else ""
        if kind == "codex":
            codex_home = self.home / "codex"
            codex_home.mkdir()
            server = {"url": mcp_url, "bearer_token_env_var": MCP_TOKEN_ENV, "required": True,
                      "default_tools_approval_mode": "approve"}
            text = codex_config(model, f"{proxy_url}/v1", extra,
                                top={**CODEX_OFF, "model_instructions_file": str(instructions_file)},
                                tables={**CODEX_TABLES, f"mcp_servers.{mcp_name}": server})
            (codex_home / "config.toml").write_text(text, encoding="utf-8")
            self.env.update(CODEX_HOME=str(codex_home), OPENAI_BASE_URL=f"{proxy_url}/v1", OPENAI_API_KEY=proxy_token)
        else:
            claude_home = self.home / "claude"
            claude_home.mkdir()
            settings: dict[str, Any] = json.loads(extra) if extra.strip() else {}
            settings.update(self.config)
            if settings:
                (claude_home / "settings.json").write_text(json.dumps(settings, indent=2), encoding="utf-8")
            servers = {"mcpServers": {mcp_name: {"type": "http", "url": mcp_url,
                                                   "headers": {"Authorization": f"Bearer ${{{MCP_TOKEN_ENV}}}"}}}}
            (self.home / "mcp.json").write_text(json.dumps(servers, indent=2), encoding="utf-8")
            self.env.update(CLAUDE_ENV, CLAUDE_CONFIG_DIR=str(claude_home), ANTHROPIC_BASE_URL=proxy_url,
                            ANTHROPIC_API_KEY=proxy_token)
            self._new_session = str(uuid.uuid4())
        self._instructions_file = instructions_file

    # ------------------------------------------------------------------ the command line
    def argv(self) -> list[str]:
        """The next turn's command line (the user's text goes on stdin): a new session's, or the
        resumed one's."""
        if self.kind == "codex":
            argv = [str(self.entry), "exec"]
            if self.session is not None:
                argv.append("resume")
            argv += ["--json", "--skip-git-repo-check"]
            for key, value in self.config.items():
                argv += ["-c", f"{key}={toml_value(value)}"]
            argv += self.args
            return argv + ([self.session, "-"] if self.session is not None else ["-"])
        argv = [str(self.entry), "-p", "--output-format", "stream-json", "--verbose", "--model", self.model,
                "--system-prompt-file", str(self._instructions_file), "--tools", "", "--strict-mcp-config",
                "--mcp-config", str(self.home / "mcp.json"), "--allowedTools", f"mcp__{self.mcp_name}"]
        argv += ["--resume", self.session] if self.session is not None else ["--session-id", self._new_session]
        return argv + self.args

    # ------------------------------------------------------------------ one turn
    async def turn(self, text: str, stop: tuple[asyncio.Event, ...] = ()) -> Turn:
        """Run one turn with ``text`` as the user's message; ends when the agent's process exits,
        or (killed, ``stopped``) when one of the ``stop`` events is set first."""
        self.turns += 1
        self._killed = False
        argv = self.argv()
        if self.kind == "claude-code":
            self.session = self._new_session  # Codex's comes in its first event
        events: list[dict] = []
        with open(self.log_path, "ab") as log:
            proc = await asyncio.create_subprocess_exec(
                *argv, cwd=self.work, env=self.env, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=log, start_new_session=True, limit=LINE_LIMIT)
        self.pid, self._running = proc.pid, True
        reading = asyncio.ensure_future(self._read(proc, text, events))
        stopping = [asyncio.ensure_future(e.wait()) for e in stop]
        stopped = False
        try:
            await asyncio.wait({reading, *stopping}, return_when=asyncio.FIRST_COMPLETED)
            stopped = self._killed or not reading.done()
        finally:
            for waiter in stopping:
                waiter.cancel()
            if not reading.done():
                reading.cancel()
                with contextlib.suppress(BaseException):
                    await reading
            await _end_group(proc)
            self._running = False
        if reading.done() and not reading.cancelled() and reading.exception() is not None:
            raise reading.exception()  # type: ignore[misc]
        return self._turn(events, None if stopped else proc.returncode, stopped)

    def kill(self) -> None:
        """Kill the running turn's process group now, from synchronous code (e.g. the tool call
        that ended the trial, before its result goes back to the agent); the turn ends ``stopped``."""
        if self.pid is not None and self._running:
            self._killed = True
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, signal.SIGKILL)

    async def _read(self, proc: Any, text: str, events: list[dict]) -> None:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            proc.stdin.write(text.encode("utf-8"))
            await proc.stdin.drain()
            proc.stdin.close()
        with open(self.record_path, "ab") as record:
            while True:
                line = await proc.stdout.readline()
                if not line:
                    break
                record.write(line)
                with contextlib.suppress(ValueError):
                    event = json.loads(line)
                    if isinstance(event, dict):
                        events.append(event)
                        if self.kind == "codex" and event.get("type") == "thread.started" and self.session is None:
                            self.session = str(event.get("thread_id") or "") or None
        await proc.wait()

    def _turn(self, events: list[dict], exit_code: int | None, stopped: bool) -> Turn:
        if self.kind == "codex":
            record = parse_codex(events)
            texts = [i.get("text") for e in events if e.get("type") == "item.completed"
                     for i in [e.get("item") or {}] if i.get("type") == "agent_message"]
            reply = texts[-1] if texts and record.finished else None
            calls = [i for e in events if e.get("type") == "item.completed"
                     for i in [e.get("item") or {}] if i.get("type") == "mcp_tool_call"]
            failed = [str(i.get("tool")) for i in calls if i.get("status") != "completed"
                      or ((i.get("result") or {}).get("is_error"))]
            notes = [str(i.get("message"))[:300] for e in events if e.get("type") == "item.completed"
                     for i in [e.get("item") or {}] if i.get("type") == "error"]
        else:
            record = parse_claude(events)
            reply = record.final_text if record.finished else None
            names = {b.get("id"): str(b.get("name")) for e in events if e.get("type") == "assistant"
                     for b in (e.get("message") or {}).get("content") or () if b.get("type") == "tool_use"}
            calls = list(names)
            failed = [names.get(b.get("tool_use_id"), "?") for e in events if e.get("type") == "user"
                      for b in _blocks((e.get("message") or {}).get("content"))
                      if b.get("type") == "tool_result" and b.get("is_error")]
            notes = []
        return Turn(reply=reply, exit_code=exit_code, stopped=stopped, record=record, tool_calls=len(calls),
                    failed_tool_calls=failed, notes=notes)


def _blocks(content: Any) -> list[dict]:
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


async def _end_group(proc: Any) -> None:
    """Kill the turn's whole process group (an agent's MCP helpers, a child it left) and reap it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    if proc.returncode is None:
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(proc.wait(), KILL_WAIT_S)
