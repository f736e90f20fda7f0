"""What the memory model sees of a bash agent's shell session (both tool modes), and that its
prompts fit a shell task as well as a customer conversation."""

from __future__ import annotations

import json
import re

from agentrig.agents import bash_prompts as texts
from agentrig.plugins.memory import prompts
from agentrig.plugins.memory.bank import TOOLS, Bank
from agentrig.plugins.memory.window import Conversation
from agentrig.bench.terminal.scripted.memory import commands, lessons
from agentrig.types import Message, ToolCall

TASK = texts.task_prompt("Write ok to /app/config/settings.ini.", "/app")
FAILED = "cat /app/config/settings.ini"
FIX = "mkdir -p /app/config && printf 'mode=fast\\n' > /app/config/settings.ini"
SUBMIT = f"echo {texts.SUBMIT_SENTINEL} && echo done"
OUTPUTS = {FAILED: (1, "cat: /app/config/settings.ini: No such file or directory\n"), FIX: (0, ""),
           SUBMIT: (0, f"{texts.SUBMIT_SENTINEL}\ndone\n")}


def _call(n: int, command: str, text_mode: bool) -> ToolCall:
    raw = json.dumps({"command": command}, ensure_ascii=False)
    return ToolCall(id=f"text-{n}" if text_mode else f"call_{n}", name="bash", arguments={"command": command},
                    arguments_raw=raw)


def session(text_mode: bool, *, format_error: bool = False) -> list[Message]:
    """A bash agent's trajectory as agents/bash.py records it: system, task, then per step the
    reply (native: a bash tool call; text: the action block plus the same call) and the output
    (native: a tool message; text: a user message)."""
    msgs = [Message(role="system", content="rules"), Message(role="user", content=TASK)]
    if format_error:
        msgs.append(Message(role="assistant", content="I will look around first."))
        msgs.append(Message(role="user", content=texts.text_format_error("your reply holds no action block")))
    for n, command in enumerate((FAILED, FIX, SUBMIT), 1):
        code, output = OUTPUTS[command]
        shown = texts.observation(code, output)
        call = _call(n, command, text_mode)
        if text_mode:
            reply = f"Step {n}.\n\n```{texts.ACTION_LABEL}\n{command}\n```"
            msgs.append(Message(role="assistant", content=reply, tool_calls=[call]))
            msgs.append(Message(role="user", content=shown))
        else:
            msgs.append(Message(role="assistant", content=f"Step {n}.", tool_calls=[call]))
            msgs.append(Message(role="tool", content=shown, tool_call_id=call.id, requestor="assistant"))
    for i, m in enumerate(msgs):
        m.turn = i
    return msgs


def test_native_session_window_holds_commands_and_outputs():
    view = Conversation(session(text_mode=False), 1000).view(8)
    assert view.requests == [(1, TASK)]  # the task is the one request
    lines = view.window.split("\n")
    assert lines[0] == "[turn 2] agent: Step 1."
    assert lines[1] == f"[turn 2] agent calls bash({json.dumps({'command': FAILED})})"
    assert lines[2] == "[turn 3] result of bash: exit code: 1"
    assert "cat: /app/config/settings.ini: No such file or directory" in view.window
    assert view.window.count("result of bash: exit code: 0") == 2
    assert "user:" not in view.window


def test_text_mode_outputs_are_results_not_requests_and_blocks_are_not_repeated():
    msgs = session(text_mode=True, format_error=True)
    conv = Conversation(msgs, 1000)
    view = conv.view(8)
    # the command outputs (user messages in text mode) are no requests; the format-error note is
    # a harness message to the agent and stays in place as a user line
    assert [t for t, _ in view.requests] == [1]
    window = view.window
    assert "[turn 3] user: Format error: your reply holds no action block" in window
    assert "[turn 5] result of bash: exit code: 1" in window
    assert "[turn 7] result of bash: exit code: 0" in window
    assert window.count(FAILED) == 1  # in the action block, not repeated as a call
    assert window.count("agent calls bash (arguments as in its text above)") == 3
    assert "agent calls bash({" not in window
    # a window that starts later: the outputs before it are not requests either
    later = conv.view(1)
    assert [t for t, _ in later.requests] == [1, 3] and later.window.startswith("[turn 8] agent: Step 3.")


def test_a_cut_action_block_keeps_the_call_line():
    msgs = session(text_mode=True)
    view = Conversation(msgs, 50).view(8)  # step 2's reply is cut inside its (long) command
    assert '[turn 4] agent calls bash({"command": "mkdir -p /app/config' in view.window
    assert "(arguments as in its text above)" not in view.window  # every reply here is cut


def test_the_solution_endpoints_memory_reads_failures_and_fixes_from_the_window():
    for text_mode in (False, True):
        window = Conversation(session(text_mode=text_mode), 1000).view(8).window
        assert [(c, code) for c, code, _ in commands(window)] == [(FAILED, "1"), (FIX, "0"), (SUBMIT, "0")]
        assert lessons(window) == [
            f"command `{FAILED}` failed (exit code 1): cat: /app/config/settings.ini: No such file or directory",
            f"after `{FAILED}` failed, `{FIX}` worked (exit code 0)"]


def test_memory_prompts_are_benchmark_neutral():
    view = Conversation(session(text_mode=False), 1000).view(8)
    request = prompts.edit_request(view, Bank(), 3, None, [])
    texts_seen = [prompts.EDIT_SYSTEM, prompts.DECIDE_SYSTEM, prompts.ALWAYS_SYSTEM, prompts.ADVISOR_SYSTEM, request,
                  prompts.REMINDER_HEAD, prompts.BANK_HEAD, prompts.RETRIEVED_HEAD,
                  *(t["function"]["description"] for t in TOOLS)]
    for text in texts_seen:
        assert not re.search(r"customer|policy|airline|retail|telecom", text, re.I), text
    # a shell task is named as one of the agent's settings, and failed commands as lessons
    assert "running commands" in prompts.EDIT_SYSTEM and "a command exited with a non-zero code" in prompts.EDIT_SYSTEM
    assert "commands that failed" in prompts.EDIT_SYSTEM
    assert "The user's messages before the window" in request and TASK in request
