"""The three installed agents' records, built in code in the shapes they really have.

Shapes observed on this machine (issue 32) by running each agent against a scripted local server
that asked for two shell commands (``echo hello-from-agent``, then ``ls /nonexistent-dir-xyz``,
exit code 2) and then finished: mini-swe-agent 2.4.6 (``mini.yaml`` and ``mini_textbased.yaml``),
Codex CLI 0.169.0 (``codex exec --json``) and Claude Code 2.1.328 (``--output-format stream-json
--verbose``). Only the fields the parsers read are kept, plus a few neighbours as they come.

``Step(command, output, exit_code)``; a script is a list of them, then the agent finishes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from agentrig.types import AssistantMessage, ToolCall

SUBMIT = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"


@dataclass
class Step:
    command: str
    output: str
    exit_code: int = 0


SCRIPT = [Step("echo hello-from-agent", "hello-from-agent\n"),
          Step("ls /nonexistent-dir-xyz", "ls: cannot access '/nonexistent-dir-xyz': No such file or directory\n", 2)]
FINAL = "All done, the task is finished."


def _response(n: int, message: dict) -> dict:
    return {"id": f"chatcmpl-{n}", "created": 1796451280, "model": "m", "object": "chat.completion",
            "choices": [{"finish_reason": "tool_calls", "index": 0, "message": message}],
            "usage": {"completion_tokens": 10 + n, "prompt_tokens": 100 + n, "total_tokens": 110 + 2 * n}}


def mini_doc(script: list[Step] = SCRIPT, *, text_mode: bool = False, submit: bool = True,
             format_error_at: int | None = None) -> dict:
    """mini-swe-agent 2.4.6's trajectory file (``-o``)."""
    t = 1796451280.0
    messages: list[dict] = [{"role": "system", "content": "You are a helpful assistant that can interact with a computer."},
                            {"role": "user", "content": "Please solve this issue: the task"}]
    steps = list(script) + ([Step(f"echo {SUBMIT}", "")] if submit else [])
    for n, s in enumerate(steps):
        if n == format_error_at:  # mini keeps the unusable reply only inside the note's extra
            messages.append({"role": "user", "content": "Format error:\n\n<error>\nNo tool calls found</error>",
                             "extra": {"interrupt_type": "FormatError", "cost": 0.0,
                                       "response": _response(n, {"role": "assistant", "content": "I think so.",
                                                                 "tool_calls": None})}})
        t += 0.5
        last = s.command.startswith(f"echo {SUBMIT}")
        if text_mode:
            content = f"THOUGHT: step {n}.\n\n```mswea_bash_command\n{s.command}\n```"
            msg = {"content": content, "role": "assistant", "tool_calls": None, "function_call": None,
                   "provider_specific_fields": None,
                   "extra": {"actions": [{"command": s.command}], "response": _response(n, {"content": content}),
                             "cost": 0.0, "timestamp": t}}
        else:
            call = {"function": {"arguments": json.dumps({"command": s.command}), "name": "bash"},
                    "id": f"call_chat_{n}", "type": "function"}
            msg = {"content": f"Step {n}: running a command.", "role": "assistant", "tool_calls": [call],
                   "function_call": None, "reasoning_content": f"thinking about step {n}", "provider_specific_fields": None,
                   "extra": {"actions": [{"command": s.command, "tool_call_id": f"call_chat_{n}"}],
                             "response": _response(n, {"content": f"Step {n}"}), "cost": 0.0, "timestamp": t}}
        messages.append(msg)
        t += 0.25
        if last and text_mode:
            continue
        if last:
            extra = {"raw_output": "", "returncode": -1, "timestamp": t, "exception_info": "action was not executed"}
            content = '{\n  "returncode": -1,\n  "output": "", "exception_info": "action was not executed"\n}'
        else:
            extra = {"raw_output": s.output, "returncode": s.exit_code, "timestamp": t, "exception_info": ""}
            content = (f"<returncode>{s.exit_code}</returncode>\n<output>\n{s.output}</output>" if text_mode else
                       json.dumps({"returncode": s.exit_code, "output": s.output}, indent=2))
        obs = {"role": "user" if text_mode else "tool", "content": content, "extra": extra}
        if not text_mode:
            obs["tool_call_id"] = f"call_chat_{n}"
        messages.append(obs)
    status = "Submitted" if submit else "LimitsExceeded"
    messages.append({"role": "exit", "content": "", "extra": {"exit_status": status, "submission": ""}})
    return {"info": {"model_stats": {"instance_cost": 0.0, "api_calls": len(steps)}, "exit_status": status},
            "messages": messages, "trajectory_format": "mini-swe-agent-1.1"}


def _bash_lc(command: str) -> str:
    return "/bin/bash -lc '" + command.replace("'", "'\"'\"'") + "'"


def codex_events(script: list[Step] = SCRIPT, *, finish: bool = True) -> list[dict]:
    """``codex exec --json``'s stdout events (Codex CLI 0.169.0)."""
    out: list[dict] = [{"type": "thread.started", "thread_id": "01a244d7-b9aa-7052-8403-9a1cace182bb"},
                       {"type": "item.completed", "item": {"id": "item_0", "type": "error",
                                                           "message": "Model metadata for `m` not found."}},
                       {"type": "turn.started"}]
    n = 1
    for i, s in enumerate(script):
        out.append({"type": "item.completed", "item": {"id": f"item_{n}", "type": "reasoning", "text": f"**Plan** step {i}"}})
        out.append({"type": "item.completed", "item": {"id": f"item_{n + 1}", "type": "agent_message",
                                                       "text": f"Step {i}: running a command."}})
        item = {"id": f"item_{n + 2}", "type": "command_execution", "command": _bash_lc(s.command)}
        out.append({"type": "item.started", "item": {**item, "aggregated_output": "", "exit_code": None,
                                                     "status": "in_progress"}})
        out.append({"type": "item.completed", "item": {**item, "aggregated_output": s.output, "exit_code": s.exit_code,
                                                       "status": "completed" if s.exit_code == 0 else "failed"}})
        n += 3
    if finish:
        out.append({"type": "item.completed", "item": {"id": f"item_{n}", "type": "agent_message", "text": FINAL}})
        out.append({"type": "turn.completed", "usage": {"input_tokens": 603, "cached_input_tokens": 0,
                                                        "output_tokens": 63, "reasoning_output_tokens": 15}})
    return out


def claude_events(script: list[Step] = SCRIPT, *, finish: bool = True) -> list[dict]:
    """Claude Code 2.1.328's ``stream-json`` events: one ``assistant`` event per content block."""
    sid = "777e27f4-e8f4-4770-a694-2e7dd3955ca9"
    out: list[dict] = [{"type": "system", "subtype": "init", "cwd": "/app", "session_id": sid, "model": "m",
                        "claude_code_version": "2.1.328", "permissionMode": "bypassPermissions"}]
    usage = {"input_tokens": 300, "output_tokens": 1, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}

    def assistant(mid: str, block: dict, second: int) -> dict:
        return {"type": "assistant", "message": {"id": mid, "type": "message", "role": "assistant", "model": "m",
                                                 "content": [block], "stop_reason": None, "usage": usage},
                "parent_tool_use_id": None, "session_id": sid, "timestamp": f"2026-12-05T06:15:{second:02d}.100Z"}

    sec = 10
    for i, s in enumerate(script):
        mid = f"msg_{i + 1}"
        out.append(assistant(mid, {"type": "thinking", "thinking": f"thinking about step {i}", "signature": "sig"}, sec))
        out.append(assistant(mid, {"type": "text", "text": f"Step {i}: running a command."}, sec))
        out.append(assistant(mid, {"type": "tool_use", "id": f"toolu_{i}", "name": "Bash",
                                   "input": {"command": s.command, "description": f"Run step {i}"}}, sec))
        sec += 2
        if s.exit_code == 0:
            result = {"tool_use_id": f"toolu_{i}", "type": "tool_result", "content": s.output.rstrip("\n"), "is_error": False}
            meta: object = {"stdout": s.output.rstrip("\n"), "stderr": "", "interrupted": False, "isImage": False}
        else:
            text = f"Exit code {s.exit_code}\n{s.output.rstrip()}"
            result = {"type": "tool_result", "content": text, "is_error": True, "tool_use_id": f"toolu_{i}"}
            meta = "Error: " + text
        out.append({"type": "user", "message": {"role": "user", "content": [result]}, "parent_tool_use_id": None,
                    "session_id": sid, "timestamp": f"2026-12-05T06:15:{sec:02d}.100Z", "tool_use_result": meta})
    if finish:
        out.append(assistant(f"msg_{len(script) + 1}", {"type": "text", "text": FINAL}, sec + 1))
        out.append({"type": "result", "subtype": "success", "is_error": False, "result": FINAL, "num_turns": len(script) + 1,
                    "session_id": sid, "stop_reason": "end_turn", "terminal_reason": "completed"})
    return out


def write_record(kind: str, record_dir: Path, content: object) -> Path:
    """Write a record as the agent writes it (mini: one JSON document; the others: JSONL)."""
    record_dir.mkdir(parents=True, exist_ok=True)
    name = {"mini-swe-agent": "trajectory.json", "codex": "codex.jsonl", "claude-code": "claude.jsonl"}[kind]
    path = record_dir / name
    if kind == "mini-swe-agent":
        path.write_text(json.dumps(content))
    else:
        path.write_text("".join(json.dumps(e) + "\n" for e in content))  # type: ignore[union-attr]
    return path


# ------------------------------------------------------------------ the proxy's side: the replies


def _call(call_id: str, name: str, args: dict) -> ToolCall:
    return ToolCall(id=call_id, name=name, arguments=args, arguments_raw=json.dumps(args))


def replies_for(kind: str, script: list[Step] = SCRIPT, *, text_mode: bool = False, submit: bool = True,
                first_call: int = 0) -> list[tuple[int, AssistantMessage]]:
    """What the proxy returned to the agent for ``script``: (ModelCall index, the message)."""
    out = []
    for i, s in enumerate(script):
        if kind == "mini-swe-agent" and text_mode:
            m = AssistantMessage(content=f"THOUGHT: step {i}.\n\n```mswea_bash_command\n{s.command}\n```")
        elif kind == "mini-swe-agent":
            m = AssistantMessage(content=f"Step {i}: running a command.", reasoning=f"thinking about step {i}",
                                 tool_calls=[_call(f"call_chat_{i}", "bash", {"command": s.command})])
        elif kind == "codex":
            m = AssistantMessage(content=f"Step {i}: running a command.", reasoning=f"**Plan** step {i}",
                                 tool_calls=[_call(f"call_resp_{i}", "exec_command", {"cmd": s.command, "workdir": "/app"})])
        else:
            m = AssistantMessage(content=f"Step {i}: running a command.", reasoning=f"thinking about step {i}",
                                 tool_calls=[_call(f"toolu_{i}", "Bash", {"command": s.command,
                                                                          "description": f"Run step {i}"})])
        out.append((first_call + i, m))
    n = first_call + len(script)
    if kind == "mini-swe-agent" and submit:
        cmd = f"echo {SUBMIT}"
        out.append((n, AssistantMessage(content=f"THOUGHT: done.\n\n```mswea_bash_command\n{cmd}\n```") if text_mode else
                    AssistantMessage(content="Submitting.", tool_calls=[_call(f"call_chat_{len(script)}", "bash",
                                                                               {"command": cmd})])))
    elif kind != "mini-swe-agent":
        out.append((n, AssistantMessage(content=FINAL)))
    return out
