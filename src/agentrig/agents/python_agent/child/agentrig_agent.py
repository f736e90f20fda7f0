"""The protocol between agentrig and a Python agent, as the agent's own code sees it.

This module is standard library only: agentrig's runner puts it on the agent's import path, in the
agent's own interpreter (``import agentrig_agent``), so agentrig itself is never imported there.

Your module names a factory in the arm's ``agent.entry`` ("my_pkg.agent:make")::

    def make(settings: dict, client, model: str) -> agent     # may also be ``async def``

- ``settings``: the arm's ``agent.settings`` table, as it is;
- ``client``: a ready model client whose every call goes through the trial's measuring proxy:
  ``openai.OpenAI`` (when ``openai`` is importable), else ``anthropic.Anthropic``, else None
  (``agent.client`` chooses). ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY`` and ``ANTHROPIC_BASE_URL`` /
  ``ANTHROPIC_API_KEY`` name the same proxy, so a client you build yourself (``openai.AsyncOpenAI()``)
  reaches it too. The key is the trial's own token, never a real key;
- ``model``: the model name to ask for.

Per agent step agentrig calls ``agent.respond(turn)`` (plain or ``async def``) and takes its return
value as the step's reply. What a turn carries and what a reply means is the benchmark's:

- τ² tasks — a ``Turn`` (the conversation, the policy, the tools); the reply: a ``Reply``, a ``str``
  (text to the user) or a dict ``{"content": str | None, "tool_calls": [{"name": str, "arguments":
  dict, "id": str (optional)}]}``. Tool calls in the reply are run by the episode, and their
  results come back in the next turn. An agent that runs its own tool loop calls
  ``turn.call_tool(name, arguments)`` (or ``await turn.acall_tool(...)``) instead: the tool runs in
  the trial's environment at once and its result comes back.
- AppWorld tasks — an ``AppWorldTurn`` (the task, the guide, the conversation, the last
  execution's output); the reply: the Python code to run next in the task's world, as a ``str``, a
  ``Reply(code=..., content=...)`` (content: your thought, kept in the record) or a dict
  ``{"code": str, "content": str | None}``. ``None`` (or no code) means: I stop. The code runs in
  AppWorld's session (``apis.<app>.<api>(...)``); ``apis.supervisor.complete_task()`` ends the task.
- terminal tasks — one ``TerminalTurn`` per trial (the instruction, the working directory, the
  limits) with ``turn.run(command)`` (or ``await turn.arun(...)``): the command runs in the task's
  sandbox and its ``CommandOutput`` comes back. Return when you are done (a ``str``: your final
  note, may be empty); the task's tests run then.

``agent.close()`` (optional, plain or async) is called when the trial ends.
"""

from __future__ import annotations

import asyncio
import json
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Protocol, Union

__all__ = ["Agent", "AppWorldTask", "AppWorldTurn", "CommandOutput", "Reply", "ReplyLike", "TerminalTurn", "ToolCall",
           "ToolResult", "Turn"]


@dataclass
class ToolCall:
    """A tool call for the episode to run: the tool's name and its arguments (a JSON object).
    ``id``: the model's id of the call, if you want your next turn's messages to carry it."""

    name: str
    arguments: Dict[str, Any] = field(default_factory=dict)
    id: Optional[str] = None


@dataclass
class Reply:
    """One step's reply. τ²: text to the user, or tool calls (with both, the calls go to the
    environment; the text stays in the record, the user does not see it). AppWorld: ``code`` to
    run (``content``, your thought, stays in the record and in your conversation)."""

    content: Optional[str] = None
    tool_calls: List[ToolCall] = field(default_factory=list)
    code: Optional[str] = None


ReplyLike = Union[Reply, str, Dict[str, Any]]


@dataclass
class ToolResult:
    """What a tool answered: its output text; ``error`` when it refused the call (the text then
    starts with ``Error:``)."""

    content: str
    error: bool = False

    def __str__(self) -> str:
        return self.content


@dataclass
class Turn:
    """One agent step.

    ``messages``: the whole conversation so far from the agent's side, as OpenAI Chat Completions
    messages (``assistant`` — your own replies and tool calls, the greeting first —, ``user``,
    ``tool``), without a system message: the system prompt is yours to write. ``new``: the messages
    that arrived since your last step (the tail of ``messages``: a user message, or the results of
    your reply's tool calls). ``policy``: the domain's policy text your agent must follow. ``tools``:
    the domain's agent tools as OpenAI function tools (``{"type": "function", "function": {name,
    description, parameters}}``), ready for a Chat Completions request. ``step``: 0 for the first
    step of the trial. ``model``: the model to ask for."""

    messages: List[Dict[str, Any]]
    new: List[Dict[str, Any]]
    policy: str
    tools: List[Dict[str, Any]]
    step: int
    model: str
    _call: Callable[[str, Any], ToolResult] = field(repr=False, default=None)  # type: ignore[assignment]
    _lock: Any = field(repr=False, default_factory=threading.Lock)

    def call_tool(self, name: str, arguments: Any) -> ToolResult:
        """Run one of ``tools`` now, in the trial's environment: recorded, applied and counted as a
        call in a reply is (a call that ends the conversation — a transfer, the step limit — ends it
        here too, and the step's reply is then dropped). ``arguments``: a dict or its JSON text."""
        with self._lock:  # one call at a time over the pipe, also from several threads
            return self._call(name, arguments)

    async def acall_tool(self, name: str, arguments: Any) -> ToolResult:
        """``call_tool`` for async code (it waits in a thread, so your event loop runs on)."""
        return await asyncio.get_running_loop().run_in_executor(None, self.call_tool, name, arguments)

    def tool_names(self) -> List[str]:
        return [t["function"]["name"] for t in self.tools]


@dataclass
class AppWorldTask:
    """An AppWorld task as the agent gets it: its id, the supervisor's instruction, the supervisor
    (``first_name``, ``last_name``, ``email``, ``phone_number``) and the task's date and time (the
    world's clock is set to it)."""

    id: str
    instruction: str
    supervisor: Dict[str, str] = field(default_factory=dict)
    datetime: str = ""


@dataclass
class AppWorldTurn:
    """One step on an AppWorld task: reply with the next block of Python code.

    ``task``: the task. ``prompt``: the task as agentrig's own code agent gets it (the supervisor's
    name, email, phone, the instruction, the date), also the first message of ``messages``.
    ``guide``: how the world works (the ``apis`` object, the API docs at
    ``apis.api_docs.show_app_descriptions()`` / ``show_api_descriptions(app_name=...)`` /
    ``show_api_doc(app_name=..., api_name=...)``, the supervisor's accounts, how to finish, the
    limits), the text agentrig's code agent has in its system prompt, for yours. ``output``: what
    the last execution printed (or AppWorld's "Execution failed" and its traceback), cut to the
    run's output limit; None in the first step. ``failed``: the last execution failed.
    ``messages``: the conversation so far as Chat Completions messages, without a system message:
    the task prompt (``user``), then per step your reply (``assistant``; your code in a ```python
    fence) and its output (``user``). ``new``: what came since your last step. ``step``: 0 first.
    ``model``: the model to ask for."""

    task: AppWorldTask
    prompt: str
    guide: str
    messages: List[Dict[str, Any]]
    new: List[Dict[str, Any]]
    step: int
    model: str
    output: Optional[str] = None
    failed: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.task, dict):  # as it came over the pipe
            known = {"id", "instruction", "supervisor", "datetime"}
            self.task = AppWorldTask(**{k: v for k, v in self.task.items() if k in known})


@dataclass
class CommandOutput:
    """What a command run with ``TerminalTurn.run`` gave: its ``output`` (stdout and stderr
    interleaved, cut in the middle to the run's output limit: ``omitted_chars`` left out), its
    ``exit_code`` (None when it was killed at its timeout: ``timed_out``), and a ``note`` from the
    sandbox (e.g. the persistent shell was restarted after a timeout)."""

    output: str
    exit_code: Optional[int]
    timed_out: bool = False
    omitted_chars: int = 0
    note: Optional[str] = None

    def __str__(self) -> str:
        return self.output


@dataclass
class TerminalTurn:
    """A terminal task, the one turn of the trial: run commands, return when you are done.

    ``instruction``: the task. ``workdir``: where commands start (as they see it). ``limits``: the
    trial's bounds — ``commands`` (the most commands you may run), ``command_timeout_s`` (each
    command's longest run), ``agent_timeout_s`` (the time the whole agent phase has), ``shell``
    (``"stateless"``: each command in a fresh ``bash -c`` from ``workdir``; ``"persistent"``: one
    shell session, ``cd`` and exported variables stay). ``messages`` / ``new``: the instruction as
    one user message (your conversation is yours to keep). ``step``: 0. ``model``: the model to
    ask for."""

    instruction: str
    workdir: str
    limits: Dict[str, Any]
    messages: List[Dict[str, Any]]
    new: List[Dict[str, Any]]
    step: int
    model: str
    _call: Callable[[str, Any], ToolResult] = field(repr=False, default=None)  # type: ignore[assignment]
    _lock: Any = field(repr=False, default_factory=threading.Lock)

    def run(self, command: str, timeout: Optional[float] = None) -> CommandOutput:
        """Run ``command`` in the task's sandbox now, as agentrig's bash agent runs its commands
        (recorded, counted against ``limits["commands"]``). ``timeout``: seconds, at most the
        per-command timeout (the default). Past the command limit or the agent's time the trial's
        agent phase ends (this call does not return)."""
        if not isinstance(command, str) or not command.strip():
            raise TypeError("run: the command must be a non-empty str")
        if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0):
            raise ValueError(f"run: timeout must be a positive number of seconds, not {timeout!r}")
        with self._lock:  # one command at a time over the pipe, also from several threads
            result = self._call("run", {"command": command, "timeout": timeout})
        data = json.loads(result.content)
        return CommandOutput(output=str(data.get("output") or ""), exit_code=data.get("exit_code"),
                             timed_out=bool(data.get("timed_out")), omitted_chars=int(data.get("omitted_chars") or 0),
                             note=data.get("note"))

    async def arun(self, command: str, timeout: Optional[float] = None) -> CommandOutput:
        """``run`` for async code (it waits in a thread, so your event loop runs on)."""
        return await asyncio.get_running_loop().run_in_executor(None, self.run, command, timeout)


class Agent(Protocol):
    """What ``make`` returns (``respond`` and ``close`` may be ``async def`` as well)."""

    def respond(self, turn: Any) -> ReplyLike: ...
