"""An installed agent's own record, read into agentrig's trajectory and aligned with the proxy's calls.

Each installed agent keeps its own record of a trial in the trial's record directory:

=================  ==================  =========================================================
kind               file                what it is
=================  ==================  =========================================================
``mini-swe-agent`` ``trajectory.json`` mini's saved trajectory (``-o``; ``mini-swe-agent-1.1``)
``codex``          ``codex.jsonl``     ``codex exec --json``'s events (stdout)
``claude-code``    ``claude.jsonl``    ``claude -p --output-format stream-json --verbose`` (stdout)
``command``        (``agent.log``)     a user's own script: no record, only its output
=================  ==================  =========================================================

``read_record(kind, record_dir)`` parses one into a neutral ``AgentRecord``: per step (one model
reply as the agent kept it) the assistant text, the reasoning and the commands run — command,
output, exit code, duration and tool-call id when the record knows them — and whether the agent
finished by itself, with its final text.

``apply_record(ctx, kind, record_dir, replies)`` writes the trial's conversation the way the
built-in bash agent does (``agents/bash.py``): the assistant messages are the replies the proxy
returned (``(call index, AssistantMessage)``: what the model really said, ``Message.call`` set),
each tool call answered by a ``tool`` message holding the result from the agent's record, matched
by tool-call id (Claude Code, mini's tool-call mode) or in order (Codex's events carry no ids;
mini's text mode), and one ``sandbox``/``command`` event per shell command (``commands`` bumped).
A result the record lacks is taken from the agent's next request as the proxy recorded it
(``Trajectory.agent_requests``: the tool message the agent sent back). mini's text mode gets, as
the bash agent's, a ``bash`` tool call with id ``text-<n>`` on its reply and the observation as a
``user`` message. Tool names stay the agent's own (``bash``, ``exec_command``, ``Bash``…);
``analysis.shell_tools`` says where each keeps its command. A record that is missing or cannot be
read (the agent crashed) never fails the trial: the conversation is built from the replies and
the requests alone, and an ``agent``/``record_unreadable`` event says why. An agent that finished
by itself gets an ``agent``/``submit`` event with its final text.

``LiveConversation``: the conversation while the agent runs, for the arm's plug-ins (the record is
read only after the agent ends). Before each model call (the proxy's ``before_call``) it adds to
the trajectory the task's instruction (first), the replies the proxy returned since, and the tool
results the agent sends back in this request (by tool-call id; mini's text mode: the user message
after its reply, as ``apply_record`` aligns them). ``clear()`` takes it out again before
``apply_record`` writes the conversation from the record.
"""

from __future__ import annotations

import json
import re
import shlex
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agentrig.analysis.shell_tools import shell_command
from agentrig.types import AssistantMessage, Message, Strict, ToolCall

__all__ = ["RECORD_FILES", "RecordedCommand", "RecordedStep", "AgentRecord", "read_record", "parse_mini",
           "parse_codex", "parse_claude", "mini_text_action", "apply_record", "LiveConversation"]

RECORD_FILES = {"mini-swe-agent": "trajectory.json", "codex": "codex.jsonl", "claude-code": "claude.jsonl"}
MINI_SUBMIT = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
MINI_NOT_RUN = "action was not executed"
COMMAND_EVENT_CHARS = 2000  # as bench/terminal/episode.py
SUBMISSION_EVENT_CHARS = 4000
_MINI_BLOCK = re.compile(r"^ {0,3}```mswea_bash_command[ \t]*\n(.*?)^ {0,3}```", re.M | re.S)
_EXIT_CODE = re.compile(r"\A(?:Error: )?Exit code (-?\d+)")


class RecordedCommand(Strict):
    """One tool call's result as the agent recorded it. ``shell``: a shell command (``command`` is
    it); else another tool (``command`` is its input as JSON). ``output`` None: no result kept."""

    tool_call_id: str | None = None
    tool: str | None = None
    command: str
    shell: bool = True
    output: str | None = None
    observation: str | None = None  # the result as the agent showed it to the model, when it differs
    exit_code: int | None = None
    timed_out: bool = False
    duration_s: float | None = None


class RecordedStep(Strict):
    text: str | None = None
    reasoning: str | None = None
    commands: list[RecordedCommand] = []
    note: str | None = None  # mini: the format-error message it answered an unusable reply with


class AgentRecord(Strict):
    kind: str
    steps: list[RecordedStep] = []
    finished: bool = False  # the agent ended by itself (submitted / answered)
    final_text: str | None = None
    exit_status: str | None = None  # the agent's own word for how it ended
    text_mode: bool = False  # mini's text-based actions (no tool calls)
    # what the agent itself reported as an API error or a retry of its own (Codex's ``error`` events,
    # Claude Code's API-error/retry events): behind the proxy, a fault the channel rode out never shows here
    errors: list[str] = []

    def commands(self) -> list[RecordedCommand]:
        return [c for s in self.steps for c in s.commands]


# ------------------------------------------------------------------------------------ parsers


def _text(content: Any) -> str | None:
    """A message's text: a string, or the text parts of a list of content blocks."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)]
        return "\n".join(parts) if parts else None
    return str(content)


def mini_text_action(content: str | None) -> str | None:
    """The command of a reply in mini's text mode (its one ``mswea_bash_command`` block), or None."""
    blocks = _MINI_BLOCK.findall(content or "")
    return blocks[0].strip("\n") if len(blocks) == 1 else None


def parse_mini(doc: dict) -> AgentRecord:
    """mini-swe-agent 2.x's trajectory file (``trajectory_format`` ``mini-swe-agent-1.1``)."""
    if not isinstance(doc, dict) or not isinstance(doc.get("messages"), list):
        raise ValueError("not a mini-swe-agent trajectory (no 'messages' list)")
    out = AgentRecord(kind="mini-swe-agent")
    by_id: dict[str, RecordedCommand] = {}
    pending: list[RecordedCommand] = []  # text mode: actions waiting for their observation
    last_t: float | None = None
    for m in doc["messages"]:
        role, extra = m.get("role"), m.get("extra") or {}
        stamp = extra.get("timestamp") if isinstance(extra.get("timestamp"), (int, float)) else None
        if role == "assistant":
            step = RecordedStep(text=_text(m.get("content")), reasoning=m.get("reasoning_content") or None)
            for a in extra.get("actions") or []:
                c = RecordedCommand(tool_call_id=a.get("tool_call_id"), tool="bash", command=str(a.get("command", "")))
                step.commands.append(c)
                if c.tool_call_id:
                    by_id[c.tool_call_id] = c
                else:
                    out.text_mode = True
                    pending.append(c)
            out.steps.append(step)
        elif role == "tool" or (role == "user" and "returncode" in extra):
            c = by_id.get(m.get("tool_call_id") or "") if role == "tool" else (pending.pop(0) if pending else None)
            if c is not None:
                _mini_result(c, m, extra, stamp, last_t)
        elif role == "user" and extra.get("interrupt_type") == "FormatError":
            reply = ((extra.get("response") or {}).get("choices") or [{}])[0].get("message") or {}
            out.steps.append(RecordedStep(text=_text(reply.get("content")), reasoning=reply.get("reasoning_content"),
                                          note=_text(m.get("content"))))
        elif role == "exit":
            out.exit_status = extra.get("exit_status") or _text(m.get("content"))
            out.finished = out.exit_status == "Submitted"
            out.final_text = extra.get("submission", "") if out.finished else None
        last_t = stamp if stamp is not None else last_t
    if out.finished:  # the sentinel command ran (exit 0, its output the submission); mini marks it "not executed"
        for c in reversed(out.commands()):
            if c.command.strip().startswith(f"echo {MINI_SUBMIT}"):
                if c.output is None or c.exit_code == -1:
                    c.output, c.exit_code = f"{MINI_SUBMIT}\n{out.final_text or ''}", 0
                break
    return out


def _mini_result(c: RecordedCommand, m: dict, extra: dict, stamp: float | None, last_t: float | None) -> None:
    info = str(extra.get("exception_info") or "")
    if info == MINI_NOT_RUN:
        c.exit_code = -1
        return
    c.output = extra.get("raw_output") if isinstance(extra.get("raw_output"), str) else _text(m.get("content"))
    c.observation = _text(m.get("content"))
    c.timed_out = "timed out" in info.lower() or "timeoutexpired" in info.lower()
    code = extra.get("returncode")
    c.exit_code = code if isinstance(code, int) and not c.timed_out else None  # as agentrig's: None when killed
    if stamp is not None and last_t is not None and stamp >= last_t:
        c.duration_s = round(stamp - last_t, 4)


def _lines(text: str) -> list[dict]:
    """The JSON events of a JSONL record. A line cut short (the agent was killed while writing it)
    or a stray log line is skipped; a record with no event at all cannot be read."""
    out, broken = [], 0
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            broken += 1
            continue
        if isinstance(event, dict):
            out.append(event)
    if not out:
        raise ValueError(f"no JSON event in it ({broken} line(s) that are not JSON)" if broken else "it is empty")
    return out


def _unwrap(command: str) -> str:
    """Codex shows a command as ``/bin/bash -lc '…'``: the script inside."""
    try:
        words = shlex.split(command)
    except ValueError:
        return command
    if len(words) == 3 and words[1] in ("-c", "-lc") and words[0].rsplit("/", 1)[-1] in ("bash", "sh", "zsh"):
        return words[2]
    return command


def parse_codex(events: list[dict]) -> AgentRecord:
    """``codex exec --json`` events: items (reasoning, agent_message, command_execution, file_change)
    and turn.completed / turn.failed. The items carry no tool-call ids: commands align in order."""
    out = AgentRecord(kind="codex")
    step = RecordedStep()

    def close() -> None:
        nonlocal step
        if step.text is not None or step.reasoning is not None or step.commands:
            out.steps.append(step)
        step = RecordedStep()

    for e in events:
        kind, item = e.get("type"), e.get("item") or {}
        if kind == "item.completed":
            itype = item.get("type")
            if itype in ("reasoning", "agent_message") and step.commands:
                close()  # text after a command: the next reply
            if itype == "reasoning":
                step.reasoning = "\n".join(x for x in (step.reasoning, item.get("text")) if x)
            elif itype == "agent_message":
                step.text = "\n".join(x for x in (step.text, item.get("text")) if x)
            elif itype == "command_execution":
                output = item.get("aggregated_output")
                step.commands.append(RecordedCommand(  # (Codex's words when its own timeout kills a command)
                    tool="exec_command", command=_unwrap(str(item.get("command", ""))), output=output,
                    exit_code=item.get("exit_code"), timed_out="command timed out after " in str(output or "")[-300:]))
            elif itype == "file_change":
                step.commands.append(RecordedCommand(tool="apply_patch", shell=False,
                                                     command=json.dumps(item.get("changes") or [], ensure_ascii=False),
                                                     output=str(item.get("status") or "")))
        elif kind == "turn.completed":
            out.finished, out.exit_status = True, "completed"
        elif kind == "turn.failed":
            out.finished = False
            out.exit_status = "failed: " + str((e.get("error") or {}).get("message", ""))[:500]
        elif kind == "error":
            out.errors.append(str(e.get("message", ""))[:300])
            if not out.finished:
                out.exit_status = "error: " + str(e.get("message", ""))[:500]
    close()
    if out.finished:
        last = out.steps[-1] if out.steps else None
        out.final_text = last.text if last is not None and not last.commands else ""
    return out


def _stamp(value: Any) -> float | None:
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def parse_claude(events: list[dict]) -> AgentRecord:
    """Claude Code's ``stream-json`` events: ``assistant`` messages (one per content block, a model
    call's blocks sharing ``message.id``), ``user`` tool results (by ``tool_use_id``), ``result``."""
    out = AgentRecord(kind="claude-code")
    by_id: dict[str, tuple[RecordedCommand, float | None]] = {}
    current: str | None = None
    for e in events:
        kind = e.get("type")
        message = e.get("message") or {}
        if kind == "assistant" and (e.get("error") or message.get("isApiErrorMessage")):
            out.errors.append(str(e.get("error") or _text(message.get("content")) or "API error")[:300])
            continue
        if kind == "assistant":
            if message.get("id") != current or not out.steps:
                current = message.get("id")
                out.steps.append(RecordedStep())
            step = out.steps[-1]
            for block in message.get("content") or []:
                btype = block.get("type")
                if btype == "thinking":
                    step.reasoning = "\n".join(x for x in (step.reasoning, block.get("thinking")) if x)
                elif btype == "text":
                    step.text = "\n".join(x for x in (step.text, block.get("text")) if x)
                elif btype == "tool_use":
                    name, args = str(block.get("name", "")), block.get("input") or {}
                    command = shell_command(name, args)
                    c = RecordedCommand(tool_call_id=block.get("id"), tool=name, shell=command is not None,
                                        command=command if command is not None else json.dumps(args, ensure_ascii=False))
                    step.commands.append(c)
                    by_id[str(block.get("id"))] = (c, _stamp(e.get("timestamp")))
        elif kind == "user":
            content = message.get("content")
            for block in content if isinstance(content, list) else []:
                if not isinstance(block, dict) or block.get("type") != "tool_result":
                    continue
                found = by_id.get(str(block.get("tool_use_id")))
                if found is None:
                    continue
                c, started = found
                _claude_result(c, block, e, started)
        elif kind == "system" and any(w in str(e.get("subtype", "")) for w in ("error", "retry")):
            out.errors.append(f"{e.get('subtype')}: {str(e.get('error') or e.get('message') or '')[:300]}")
        elif kind == "result":
            out.exit_status = str(e.get("subtype") or e.get("terminal_reason") or "")
            out.finished = e.get("subtype") == "success" and not e.get("is_error")
            out.final_text = e.get("result") if out.finished else None
    return out


def _claude_result(c: RecordedCommand, block: dict, event: dict, started: float | None) -> None:
    text = _text(block.get("content")) or ""
    c.observation = text
    meta = event.get("tool_use_result")
    if isinstance(meta, dict) and ("stdout" in meta or "stderr" in meta):
        c.output = "\n".join(x for x in (meta.get("stdout"), meta.get("stderr")) if x)
        c.timed_out = bool(meta.get("timedOut"))
    else:
        c.output = text
    if c.shell:
        found = _EXIT_CODE.match(text)
        c.exit_code = int(found.group(1)) if found else (None if block.get("is_error") else 0)
        if found:
            c.output = text[found.end():].lstrip("\n")
        # Claude Code's words when its Bash tool kills a command at its timeout (the stderr's first line)
        c.timed_out = c.timed_out or any(line.startswith("Command timed out after ") for line in text.split("\n")[:4])
        if c.timed_out:
            c.exit_code = None  # as agentrig's: no exit code for a command killed by the timeout
    ended = _stamp(event.get("timestamp"))
    if started is not None and ended is not None and ended >= started:
        c.duration_s = round(ended - started, 4)


def read_record(kind: str, record_dir: Path) -> AgentRecord:
    """The agent's record in ``record_dir``. Raises ValueError (an unknown kind, no record, or one
    that cannot be read: the message says which file and why) or OSError."""
    name = RECORD_FILES.get(kind)
    if name is None:
        raise ValueError(f"agents of kind {kind!r} keep no record agentrig reads")
    path = Path(record_dir) / name
    if not path.is_file():
        raise ValueError(f"{path} is missing")
    text = path.read_text(encoding="utf-8", errors="replace")
    try:
        if kind == "mini-swe-agent":
            try:
                doc = json.loads(text)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path} is not JSON ({exc})") from None
            return parse_mini(doc)
        events = _lines(text)
        return parse_codex(events) if kind == "codex" else parse_claude(events)
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None
    except (AttributeError, TypeError, ValidationError) as exc:
        raise ValueError(f"{path} has an unexpected shape ({type(exc).__name__}: {exc})") from None


# ------------------------------------------------------------------------------- the alignment


class _Results:
    """The record's results, taken by tool-call id or, for records without ids, in order (a
    shell call takes the next shell result whose command is the call's; else what the agent sent
    back for it — a command it refused to run is not in its record —, else the next one)."""

    def __init__(self, record: AgentRecord | None, requested: dict[str, str], text_mode: bool):
        commands = record.commands() if record is not None else []
        self.text = commands if text_mode else []  # mini's text mode: its actions, in order
        commands = [] if text_mode else commands
        self.by_id = {c.tool_call_id: c for c in commands if c.tool_call_id}
        self.shell = [c for c in commands if not c.tool_call_id and c.shell]
        self.other = [c for c in commands if not c.tool_call_id and not c.shell]
        self.requested = requested  # tool_call_id → the result the agent sent back (its next request)

    def take(self, call: ToolCall, command: str | None) -> RecordedCommand | None:
        if call.id.startswith("text-"):
            return self.text.pop(0) if self.text else None
        found = self.by_id.pop(call.id, None)
        if found is None and command is not None and self.shell:
            wanted = " ".join(command.split())
            i = next((i for i, c in enumerate(self.shell) if " ".join(c.command.split()) == wanted), None)
            if i is None and call.id not in self.requested:  # no result of its own anywhere: the next one
                i = 0
            # else a command the record does not hold (one the agent refused to run) keeps what it sent back
            found = self.shell.pop(i) if i is not None else None
        elif found is None:
            i = next((i for i, c in enumerate(self.other) if c.tool == call.name), None)
            found = self.other.pop(i) if i is not None else None
        sent = self.requested.get(call.id)
        if found is not None:
            if found.observation is None and sent is not None:
                found = found.model_copy(update={"observation": sent})
                if found.duration_s is None:
                    found.duration_s = _request_facts(sent)[1]
            return found
        if sent is not None:  # not in the record: what the agent sent back to the model
            code, seconds = _request_facts(sent)
            return RecordedCommand(tool_call_id=call.id, tool=call.name, command=command or "", shell=command is not None,
                                   output=sent, observation=sent, exit_code=code, duration_s=seconds)
        return None

    def left(self) -> int:
        return len(self.text) + len(self.by_id) + len(self.shell) + len(self.other)


_SENT_EXIT = re.compile(r"^(?:Process exited with code|Exit code) (-?\d+)$|<returncode>(-?\d+)</returncode>"
                        r'|^\s*"returncode": (-?\d+),', re.M)
_SENT_WALL = re.compile(r"^Wall time: ([\d.]+) seconds$", re.M)


def _request_facts(text: str) -> tuple[int | None, float | None]:
    """The exit code and duration a tool result the agent sent back states, where it states them
    (Codex: ``Process exited with code N`` and ``Wall time: S seconds``; Claude Code: ``Exit
    code N``; mini: its observation's ``returncode``)."""
    code = _SENT_EXIT.search(text)
    wall = _SENT_WALL.search(text)
    number = next((g for g in code.groups() if g is not None), None) if code else None
    return (int(number) if number is not None else None), (float(wall.group(1)) if wall else None)


def _requested_results(trajectory: Any) -> dict[str, str]:
    """tool_call_id → the tool result the agent sent in a later request (chat-format tails)."""
    out: dict[str, str] = {}
    for request in trajectory.agent_requests:
        for m in request.tail:
            if isinstance(m, dict) and m.get("role") == "tool" and m.get("tool_call_id"):
                out.setdefault(str(m["tool_call_id"]), _text(m.get("content")) or "")
    return out


def apply_record(ctx: Any, kind: str, record_dir: Path, replies: list[tuple[int, AssistantMessage]]) -> None:
    """Write the trial's conversation into ``ctx.trajectory`` (see the module docstring)."""
    record: AgentRecord | None = None
    if kind in RECORD_FILES:
        try:
            record = read_record(kind, Path(record_dir))
        except (OSError, ValueError) as exc:
            ctx.event("agent", "record_unreadable", agent=kind, file=RECORD_FILES[kind], reason=str(exc)[:1000])
    traj = ctx.trajectory
    wall_start = time.time() - ctx.elapsed()
    instruction = getattr(ctx.task, "instruction", None)
    if not traj.messages and isinstance(instruction, str):
        _add(traj, Message(role="user", content=instruction), 0.0)
    text_mode = kind == "mini-swe-agent" and (record.text_mode if record is not None else
                                              not any(r.tool_calls for _c, r in replies))
    results = _Results(record, _requested_results(traj), text_mode)
    notes = [s.note for s in record.steps if s.note] if record is not None else []
    n_text = 0
    times = [_reply_time(traj, call, wall_start, ctx) for call, _r in replies]
    for i, (call, reply) in enumerate(replies):
        t = times[i]
        until = times[i + 1] if i + 1 < len(times) else None  # a result comes before the next reply
        message = Message(role="assistant", content=reply.content, tool_calls=list(reply.tool_calls),
                          reasoning=reply.reasoning, extra=dict(reply.extra), call=call)
        if text_mode and not message.tool_calls:
            action = mini_text_action(reply.content)
            if action is not None:
                n_text += 1
                args = {"command": action}
                message.tool_calls = [ToolCall(id=f"text-{n_text}", name="bash", arguments=args,
                                               arguments_raw=json.dumps(args, ensure_ascii=False))]
        _add(traj, message, t)
        if kind == "mini-swe-agent" and not message.tool_calls:  # mini answers a reply without an action
            _format_error(ctx, call, reply, notes.pop(0) if notes else None, text_mode, t)
        for tc in message.tool_calls:
            command = shell_command(tc.name, tc.arguments)
            found = results.take(tc, command)
            if found is None:
                continue
            if command is not None:
                _command_event(ctx, command, found, tc)
            t += found.duration_s or 0.0
            if until is not None:
                t = min(t, until)
            shown = found.observation if found.observation is not None else (found.output or "")
            if tc.id.startswith("text-"):
                _add(traj, Message(role="user", content=shown), t)
            else:
                _add(traj, Message(role="tool", content=shown, tool_call_id=tc.id, requestor="assistant",
                                   error=found.timed_out), t)
    if replies and "agent_steps" not in traj.counters:  # the model calls, as the bash agent counts them
        traj.bump("agent_steps", len(replies))
    if record is not None and results.left():
        ctx.event("agent", "record_unmatched", agent=kind, results=results.left(),
                  detail="results in the agent's record that no reply of the proxy's asked for")
    if record is not None:
        ctx.event("agent", "record", agent=kind, steps=len(record.steps), commands=len(record.commands()),
                  finished=record.finished, exit_status=record.exit_status, errors=record.errors[:20])
        if record.finished:
            ctx.event("agent", "submit", submission=(record.final_text or "")[:SUBMISSION_EVENT_CHARS])


class LiveConversation:
    """The trial's conversation as the proxy has seen it so far (see the module docstring)."""

    def __init__(self, ctx: Any, kind: str):
        self.ctx, self.kind = ctx, kind
        self.replies = 0  # replies already added
        self.pending: dict[str, ToolCall] = {}  # tool-call id → a call whose result has not come back yet
        self.n_text = 0  # mini's text-mode actions so far (their ids: text-<n>)
        self.start: int | None = None  # where in the trajectory's messages the live ones begin

    def catch_up(self, replies: list[tuple[int, AssistantMessage]], request: list[dict]) -> None:
        """Add what is new: the replies after those added, the results ``request`` sends back."""
        traj = self.ctx.trajectory
        if self.start is None:
            self.start = len(traj.messages)
        instruction = getattr(self.ctx.task, "instruction", None)
        if not traj.messages and isinstance(instruction, str):
            _add(traj, Message(role="user", content=instruction), self.ctx.elapsed())
        for call, reply in replies[self.replies:]:
            message = Message(role="assistant", content=reply.content, tool_calls=list(reply.tool_calls),
                              reasoning=reply.reasoning, extra=dict(reply.extra), call=call)
            action = mini_text_action(reply.content) if self.kind == "mini-swe-agent" and not reply.tool_calls else None
            if action is not None:
                self.n_text += 1
                args = {"command": action}
                message.tool_calls = [ToolCall(id=f"text-{self.n_text}", name="bash", arguments=args,
                                               arguments_raw=json.dumps(args, ensure_ascii=False))]
            _add(traj, message, self.ctx.elapsed())
            self.pending.update((tc.id, tc) for tc in message.tool_calls)
        self.replies = max(self.replies, len(replies))
        last_reply = max((i for i, m in enumerate(request) if m.get("role") == "assistant"), default=len(request))
        for i, m in enumerate(request):
            role = m.get("role")
            if role == "tool" and str(m.get("tool_call_id") or "") in self.pending:
                call_id = str(m["tool_call_id"])
                del self.pending[call_id]
                _add(traj, Message(role="tool", content=_text(m.get("content")) or "", tool_call_id=call_id,
                                   requestor="assistant"), self.ctx.elapsed())
            elif role == "user" and i > last_reply:  # mini's text mode: the observation of its last action
                text_ids = [k for k in self.pending if k.startswith("text-")]
                if text_ids:
                    for k in text_ids:
                        del self.pending[k]
                    _add(traj, Message(role="user", content=_text(m.get("content")) or ""), self.ctx.elapsed())

    def clear(self) -> None:
        """Take the live messages out of the trajectory (the same list, cut where they began)."""
        if self.start is not None:
            del self.ctx.trajectory.messages[self.start:]


def _format_error(ctx: Any, call: int, reply: AssistantMessage, note: str | None, text_mode: bool, t: float) -> None:
    """As the bash agent records one: a ``format_errors`` count, an ``agent``/``format_error``
    event, and the agent's note back to the model (mini's, from its record) as a user message."""
    ctx.trajectory.bump("format_errors")
    problem = ("the reply holds no single mswea_bash_command block" if text_mode else "the reply made no tool call")
    ctx.event("agent", "format_error", problem=problem, call=call, reply=(reply.content or "")[:500])
    if note is not None:
        _add(ctx.trajectory, Message(role="user", content=note), t)


def _reply_time(traj: Any, call: int, wall_start: float, ctx: Any) -> float:
    """Seconds since the trial started when the reply came back (its ModelCall's sent_at + latency)."""
    calls = traj.model_calls
    if 0 <= call < len(calls) and calls[call].sent_at is not None:
        return max(round(calls[call].sent_at + calls[call].latency_s - wall_start, 6), 0.0)
    return round(ctx.elapsed(), 6)


def _add(traj: Any, message: Message, t: float) -> None:
    message.turn = len(traj.messages)
    message.t = round(t, 6)
    traj.messages.append(message)


def _command_event(ctx: Any, command: str, found: RecordedCommand, call: ToolCall) -> None:
    ctx.trajectory.bump("commands")
    if found.timed_out:
        ctx.trajectory.bump("command_timeouts")
    ctx.event("sandbox", "command", command=command[:COMMAND_EVENT_CHARS], exit_code=found.exit_code,
              timed_out=found.timed_out,
              duration_s=round(found.duration_s, 4) if found.duration_s is not None else None,
              tool=call.name, tool_call_id=call.id)
