"""The installed agents' records read into agentrig's trajectory (agents/installed/records.py) and the
analysis on such trajectories (analysis/shell_tools.py): the parsers on the shapes each agent really
writes (tests/agents/installed_records_support.py), the alignment with the proxy's replies (by
tool-call id, in order, a missing or broken record), and decisions, the command sequence, the
viewer's hints and the mini-SWE-agent export on the agents' own tool names."""

from __future__ import annotations

import json
import time
from types import SimpleNamespace

import pytest

from agentrig.agents.installed.records import (apply_record, mini_text_action, parse_claude, parse_codex, parse_mini,
                                               read_record)
from agentrig.analysis.decisions import decision_key, same_decision
from agentrig.analysis.instability import action_of, decisions_of, similarity
from agentrig.analysis.shell_tools import shell_command
from agentrig.trial.context import TrialContext
from agentrig.types import AgentRequest, AssistantMessage, ModelCall, ToolCall, TrialKey, Usage

from .installed_records_support import (FINAL, SCRIPT, SUBMIT, Step, claude_events, codex_events, mini_doc, replies_for,
                                       write_record)

KINDS = ("mini-swe-agent", "codex", "claude-code")


def _record(kind: str, **kw):
    return {"mini-swe-agent": mini_doc, "codex": codex_events, "claude-code": claude_events}[kind](**kw)


def _ctx(n_calls: int, instruction: str = "Print hello and list a directory.") -> TrialContext:
    ctx = TrialContext(key=TrialKey(arm="a", domain="terminal", task_id="t", trial=0),
                       task=SimpleNamespace(instruction=instruction), seed=1)
    now = time.time()
    for i in range(n_calls):
        ctx.trajectory.model_calls.append(ModelCall(role="agent", purpose="agent", model="m", sent_at=now + i,
                                                    latency_s=0.2, usage=Usage(prompt_tokens=100 + i, completion_tokens=10)))
    return ctx


def _applied(kind: str, directory, **kw) -> tuple[TrialContext, list]:
    """A record of `kind` (`kw`: its options, e.g. text_mode) written to `directory` and applied to
    a new trial's context with the proxy's replies: (the context, the replies)."""
    write_record(kind, directory, _record(kind, **kw))
    replies = replies_for(kind, **kw)
    ctx = _ctx(len(replies))
    apply_record(ctx, kind, directory, replies)
    return ctx, replies


def _events(ctx, plugin, kind):
    return [e.data for e in ctx.trajectory.events if (e.plugin, e.kind) == (plugin, kind)]


# ------------------------------------------------------------------------------------ parsers


def test_mini_tool_mode_steps_outputs_exit_codes_and_the_submission():
    rec = parse_mini(mini_doc())
    assert rec.finished and rec.exit_status == "Submitted" and rec.final_text == "" and not rec.text_mode
    cmds = rec.commands()
    assert [c.command for c in cmds] == ["echo hello-from-agent", "ls /nonexistent-dir-xyz", f"echo {SUBMIT}"]
    assert [c.tool_call_id for c in cmds] == ["call_chat_0", "call_chat_1", "call_chat_2"]
    assert [c.exit_code for c in cmds] == [0, 2, 0]  # the sentinel ran (mini marks it "not executed")
    assert cmds[0].output == "hello-from-agent\n" and json.loads(cmds[1].observation)["returncode"] == 2
    assert cmds[0].duration_s == pytest.approx(0.25)
    assert rec.steps[0].reasoning == "thinking about step 0" and rec.steps[1].text == "Step 1: running a command."


def test_mini_text_mode_and_a_format_error_keep_one_step_per_reply():
    rec = parse_mini(mini_doc(text_mode=True, format_error_at=1))
    assert rec.text_mode and rec.finished
    assert [s.text for s in rec.steps][1] == "I think so."  # the unusable reply, from the note's extra
    assert [len(s.commands) for s in rec.steps] == [1, 0, 1, 1]
    assert [c.exit_code for c in rec.commands()] == [0, 2, 0]
    assert rec.commands()[1].observation.startswith("<returncode>2</returncode>")
    assert mini_text_action(rec.steps[0].text) == "echo hello-from-agent"
    assert mini_text_action("```mswea_bash_command\na\n```\n```mswea_bash_command\nb\n```") is None


def test_mini_not_submitted():
    rec = parse_mini(mini_doc(submit=False))
    assert not rec.finished and rec.final_text is None and rec.exit_status == "LimitsExceeded"


def test_codex_events_commands_unwrapped_in_order_and_the_final_message():
    rec = parse_codex(codex_events(SCRIPT + [Step("printf '%s' \"it's\"", "it's")]))
    assert [c.command for c in rec.commands()] == ["echo hello-from-agent", "ls /nonexistent-dir-xyz",
                                                  "printf '%s' \"it's\""]
    assert [c.exit_code for c in rec.commands()] == [0, 2, 0]
    assert all(c.tool_call_id is None for c in rec.commands())
    assert [s.reasoning for s in rec.steps[:2]] == ["**Plan** step 0", "**Plan** step 1"]
    assert rec.finished and rec.final_text == FINAL and len(rec.steps) == 4


def test_codex_failed_turn_is_not_finished():
    events = codex_events(finish=False) + [{"type": "turn.failed", "error": {"message": "stream disconnected"}}]
    rec = parse_codex(events)
    assert not rec.finished and rec.final_text is None and "stream disconnected" in rec.exit_status


def test_the_errors_an_agent_saw_itself_are_kept_and_none_when_it_saw_none():
    """What the acceptance runs read as "no fault seen by the agent": its own error/retry events."""
    assert parse_codex(codex_events()).errors == [] and parse_claude(claude_events()).errors == []
    events = codex_events()
    events.insert(2, {"type": "error", "message": "Reconnecting... 1/5 (stream disconnected)"})
    rec = parse_codex(events)
    assert rec.errors == ["Reconnecting... 1/5 (stream disconnected)"] and rec.finished
    events = claude_events()
    events.insert(1, {"type": "system", "subtype": "api_retry", "error": "529 overloaded"})
    assert parse_claude(events).errors == ["api_retry: 529 overloaded"]


def test_claude_blocks_grouped_by_message_results_by_id_exit_codes_durations():
    rec = parse_claude(claude_events())
    assert len(rec.steps) == 3 and rec.steps[0].reasoning == "thinking about step 0"
    c0, c1 = rec.commands()
    assert (c0.tool_call_id, c0.tool, c0.command, c0.exit_code, c0.output) == \
        ("toolu_0", "Bash", "echo hello-from-agent", 0, "hello-from-agent")
    assert c1.exit_code == 2 and c1.output.startswith("ls: cannot access") and c1.observation.startswith("Exit code 2")
    assert c0.duration_s == pytest.approx(2.0)
    assert rec.finished and rec.final_text == FINAL


def test_claude_other_tools_are_kept_apart_from_commands():
    events = claude_events([])
    events.insert(1, {"type": "assistant", "timestamp": "2026-12-05T06:15:00Z", "message": {
        "id": "msg_w", "content": [{"type": "tool_use", "id": "toolu_w", "name": "Write",
                                    "input": {"file_path": "/app/a.txt", "content": "x"}}]}})
    events.insert(2, {"type": "user", "timestamp": "2026-12-05T06:15:01Z", "message": {"content": [
        {"type": "tool_result", "tool_use_id": "toolu_w", "content": "File created"}]}})
    (c,) = parse_claude(events).commands()
    assert not c.shell and c.tool == "Write" and json.loads(c.command)["file_path"] == "/app/a.txt"
    assert c.output == "File created" and c.exit_code is None


@pytest.mark.parametrize("kind", KINDS)
def test_read_record_names_the_file_when_it_is_missing_or_broken(kind, tmp_path):
    with pytest.raises(ValueError, match="is missing"):
        read_record(kind, tmp_path)
    name = {"mini-swe-agent": "trajectory.json", "codex": "codex.jsonl", "claude-code": "claude.jsonl"}[kind]
    (tmp_path / name).write_text('{"type": "item.completed", "item": {"type": "agent_message", "te')
    with pytest.raises(ValueError, match=name):
        read_record(kind, tmp_path)


def test_a_record_cut_short_by_a_kill_is_read_up_to_the_cut(tmp_path):
    path = write_record("claude-code", tmp_path, claude_events(finish=False))
    path.write_text(path.read_text() + '{"type": "assistant", "message": {"id": "msg_9", "cont')
    rec = read_record("claude-code", tmp_path)
    assert [c.exit_code for c in rec.commands()] == [0, 2] and not rec.finished
    (tmp_path / "claude.jsonl").write_text("")
    with pytest.raises(ValueError, match="empty"):
        read_record("claude-code", tmp_path)


# ------------------------------------------------------------------------------- the alignment


@pytest.mark.parametrize("kind", KINDS)
def test_apply_record_writes_the_conversation_as_the_bash_agent_does(kind, tmp_path):
    ctx, replies = _applied(kind, tmp_path)
    msgs = ctx.trajectory.messages
    assert msgs[0].role == "user" and msgs[0].content == "Print hello and list a directory."
    assistants = [m for m in msgs if m.role == "assistant"]
    assert [m.call for m in assistants] == list(range(len(replies)))
    assert [m.turn for m in msgs] == list(range(len(msgs)))
    assert all(b.t >= a.t for a, b in zip(msgs, msgs[1:]))
    tools = [m for m in msgs if m.role == "tool"]
    calls = [c for m in assistants for c in m.tool_calls]
    assert [m.tool_call_id for m in tools] == [c.id for c in calls]  # each call answered, in order
    assert "hello-from-agent" in tools[0].content and "No such file" in tools[1].content
    commands = _events(ctx, "sandbox", "command")
    assert [e["command"] for e in commands][:2] == ["echo hello-from-agent", "ls /nonexistent-dir-xyz"]
    assert [e["exit_code"] for e in commands][:2] == [0, 2]
    assert [e["tool_call_id"] for e in commands] == [c.id for c in calls]
    assert ctx.trajectory.counters["commands"] == len(commands) == (3 if kind == "mini-swe-agent" else 2)
    assert ctx.trajectory.counters["agent_steps"] == len(replies)
    (submit,) = _events(ctx, "agent", "submit")
    assert submit["submission"] == ("" if kind == "mini-swe-agent" else FINAL)
    assert not _events(ctx, "agent", "record_unreadable") and not _events(ctx, "agent", "record_unmatched")
    # the assistant messages are the proxy's replies, not the record's text
    assert assistants[0].tool_calls == replies[0][1].tool_calls and assistants[0].reasoning == replies[0][1].reasoning


def test_mini_text_mode_gets_text_calls_and_user_observations(tmp_path):
    ctx, _ = _applied("mini-swe-agent", tmp_path, text_mode=True)
    msgs = ctx.trajectory.messages
    assistants = [m for m in msgs if m.role == "assistant"]
    assert [c.id for m in assistants for c in m.tool_calls] == ["text-1", "text-2", "text-3"]
    assert assistants[1].tool_calls[0].arguments == {"command": "ls /nonexistent-dir-xyz"}
    assert not [m for m in msgs if m.role == "tool"]
    observations = [m for m in msgs[1:] if m.role == "user"]
    assert observations[1].content.startswith("<returncode>2</returncode>")
    assert [e["exit_code"] for e in _events(ctx, "sandbox", "command")] == [0, 2, 0]
    assert not _events(ctx, "agent", "record_unmatched") and not _events(ctx, "agent", "format_error")


@pytest.mark.parametrize("text_mode", [False, True])
def test_a_mini_reply_without_an_action_is_a_format_error_with_minis_note(tmp_path, text_mode):
    write_record("mini-swe-agent", tmp_path, mini_doc(text_mode=text_mode, format_error_at=1))
    replies = [m for _c, m in replies_for("mini-swe-agent", text_mode=text_mode)]
    replies.insert(1, AssistantMessage(content="I think so."))
    ctx = _ctx(len(replies))
    apply_record(ctx, "mini-swe-agent", tmp_path, list(enumerate(replies)))
    (error,) = _events(ctx, "agent", "format_error")
    assert error["call"] == 1 and error["reply"] == "I think so."
    assert ctx.trajectory.counters["format_errors"] == 1
    msgs = ctx.trajectory.messages
    turn = next(m.turn for m in msgs if m.call == 1)
    assert msgs[turn + 1].role == "user" and msgs[turn + 1].content.startswith("Format error:")
    assert [e["exit_code"] for e in _events(ctx, "sandbox", "command")] == [0, 2, 0]
    assert not _events(ctx, "agent", "record_unmatched")


def test_timeouts_have_no_exit_code():
    doc = mini_doc([Step("sleep 100", "")], submit=False)
    obs = doc["messages"][3]["extra"]
    obs.update(returncode=-1, exception_info="An error occurred while executing the command: Command 'sleep 100' "
                                             "timed out after 30 seconds")
    (c,) = parse_mini(doc).commands()
    assert c.timed_out and c.exit_code is None
    events = claude_events([Step("sleep 300", "")])
    result = next(e for e in events if e["type"] == "user")
    text = "Exit code 143\nCommand timed out after 2m 0.0s"  # the Bash tool's kill, as Claude Code 2.1.328 words it
    result["message"]["content"][0].update(content=text, is_error=True)
    result["tool_use_result"] = "Error: " + text
    (c,) = parse_claude(events).commands()
    assert c.timed_out and c.exit_code is None
    result["message"]["content"][0].update(content="Exit code 28\ncurl: (28) Connection timed out")
    (c,) = parse_claude(events).commands()
    assert not c.timed_out and c.exit_code == 28


def test_results_follow_ids_not_the_records_order(tmp_path):
    """Claude Code runs a reply's calls in parallel: their results come back in any order."""
    events = claude_events(SCRIPT)
    uses = [e for e in events if e["type"] == "assistant" and e["message"]["content"][0]["type"] == "tool_use"]
    results = [e for e in events if e["type"] == "user"]
    for e in uses:
        e["message"]["id"] = "msg_1"  # one reply, two calls
    head = [e for e in events if e not in uses and e not in results and e["type"] != "result"][:3]
    final = [e for e in events if e["type"] == "result"]
    write_record("claude-code", tmp_path, head + uses + list(reversed(results)) + final)
    reply = AssistantMessage(content="Two at once.", tool_calls=[c for _n, m in replies_for("claude-code")[:2]
                                                                 for c in m.tool_calls])
    ctx = _ctx(2)
    apply_record(ctx, "claude-code", tmp_path, [(0, reply), (1, AssistantMessage(content=FINAL))])
    tools = [m for m in ctx.trajectory.messages if m.role == "tool"]
    assert [m.tool_call_id for m in tools] == ["toolu_0", "toolu_1"]  # in the reply's order
    assert "hello-from-agent" in tools[0].content and "No such file" in tools[1].content
    assert [e["exit_code"] for e in _events(ctx, "sandbox", "command")] == [0, 2]


def test_codex_results_pair_by_command_when_the_order_differs(tmp_path):
    """Codex's events carry no ids: a call takes the next result with its command, else the next one."""
    events = codex_events(list(reversed(SCRIPT)))
    write_record("codex", tmp_path, events)
    replies = replies_for("codex")
    ctx = _ctx(len(replies))
    apply_record(ctx, "codex", tmp_path, replies)
    by_id = {m.tool_call_id: m.content for m in ctx.trajectory.messages if m.role == "tool"}
    assert "hello-from-agent" in by_id["call_resp_0"] and "No such file" in by_id["call_resp_1"]


def test_a_codex_command_it_refused_keeps_what_codex_sent_back_not_the_next_commands_result(tmp_path):
    """Codex declines some commands by its own rule (no command_execution in its events): that call
    keeps the refusal Codex sent the model, and the next command keeps its own exit code."""
    events = codex_events(SCRIPT[1:])  # the record holds only the second command
    write_record("codex", tmp_path, events)
    replies = replies_for("codex")
    ctx = _ctx(len(replies))
    ctx.trajectory.agent_requests.append(AgentRequest(call=1, keep=3, tail=[
        {"role": "tool", "tool_call_id": "call_resp_0", "content": "rm -f style commands are not permitted"}]))
    apply_record(ctx, "codex", tmp_path, replies)
    by_id = {m.tool_call_id: m.content for m in ctx.trajectory.messages if m.role == "tool"}
    assert by_id["call_resp_0"] == "rm -f style commands are not permitted"
    assert "No such file" in by_id["call_resp_1"]
    assert [e["exit_code"] for e in _events(ctx, "sandbox", "command")] == [None, 2]


@pytest.mark.parametrize("broken", ["missing", "garbage"])
def test_a_missing_or_broken_record_builds_the_conversation_from_the_replies(tmp_path, broken):
    if broken == "garbage":
        (tmp_path / "codex.jsonl").write_text("{not json\n")
    replies = replies_for("codex")
    ctx = _ctx(len(replies))
    # the agent's second request carried its first result back (as the proxy records requests)
    ctx.trajectory.agent_requests.append(AgentRequest(call=1, keep=3, tail=[
        {"role": "tool", "tool_call_id": "call_resp_0",
         "content": "Chunk ID: 7bd81a\nWall time: 0.0506 seconds\nProcess exited with code 0\nOriginal token count: 5\n"
                    "Output:\nhello-from-agent\n"}]))
    apply_record(ctx, "codex", tmp_path, replies)
    (why,) = _events(ctx, "agent", "record_unreadable")
    assert why["agent"] == "codex" and "codex.jsonl" in why["reason"]
    assert [m.call for m in ctx.trajectory.messages if m.role == "assistant"] == [0, 1, 2]
    (tool,) = [m for m in ctx.trajectory.messages if m.role == "tool"]
    assert tool.tool_call_id == "call_resp_0" and "hello-from-agent" in tool.content
    (event,) = _events(ctx, "sandbox", "command")
    assert event["command"] == "echo hello-from-agent" and event["exit_code"] == 0 and event["duration_s"] == 0.0506
    assert not _events(ctx, "agent", "submit")  # whether it finished is the record's to say


def test_a_command_agent_has_no_record_and_no_complaint(tmp_path):
    (tmp_path / "agent.log").write_text("my script ran\n")
    replies = [(0, AssistantMessage(content="hi"))]
    ctx = _ctx(1)
    apply_record(ctx, "command", tmp_path, replies)
    assert not _events(ctx, "agent", "record_unreadable")
    assert [m.role for m in ctx.trajectory.messages] == ["user", "assistant"]


def test_results_the_replies_never_asked_for_are_reported(tmp_path):
    write_record("claude-code", tmp_path, claude_events())
    replies = replies_for("claude-code")[1:]  # the proxy's first call lost (never answered)
    ctx = _ctx(3)
    apply_record(ctx, "claude-code", tmp_path, [(c + 1, m) for c, m in replies])
    (left,) = _events(ctx, "agent", "record_unmatched")
    assert left["results"] == 1


# ------------------------------------------------------------------------- analysis on them


def test_shell_tools_find_each_agents_command():
    assert shell_command("bash", {"command": "ls"}) == "ls"
    assert shell_command("exec_command", {"cmd": "ls -la", "workdir": "/app"}) == "ls -la"
    assert shell_command("Bash", {"command": "pwd", "description": "Show the directory"}) == "pwd"
    assert shell_command("shell", {"command": ["bash", "-lc", "echo hi"]}) == "echo hi"
    assert shell_command("shell", {"command": ["ls", "-l", "a b"]}) == "ls -l 'a b'"
    assert shell_command("Write", {"file_path": "/a"}) is None and shell_command("bash", None) is None


def _tool(name: str, args: dict) -> dict:
    return action_of([ToolCall(id="x", name=name, arguments=args)], None)


def test_a_description_or_output_paging_is_not_another_decision():
    a = _tool("Bash", {"command": "ls /app", "description": "List the app directory"})
    b = _tool("Bash", {"command": "ls /app", "description": "Look at what is in /app"})
    c = _tool("Bash", {"command": "ls /tmp", "description": "List the app directory"})
    assert same_decision(a, b) and not same_decision(a, c)
    assert similarity(a, b) == 1.0 and similarity(a, c) == 0.5
    assert same_decision(a, _tool("Bash", {"command": " ls   /app\n", "description": "x"}))
    d = _tool("exec_command", {"cmd": "make", "yield_time_ms": 1000})
    e = _tool("exec_command", {"cmd": "make", "yield_time_ms": 30000, "max_output_tokens": 500})
    f = _tool("exec_command", {"cmd": "make", "workdir": "/other"})
    assert same_decision(d, e) and not same_decision(d, f)
    # the built-in bash tool and other tools: every argument still matters
    assert decision_key(_tool("bash", {"command": "ls"})) == ("tool", (("bash", '{"command":"ls"}'),))
    assert not same_decision(_tool("write", {"path": "a", "note": "x"}), _tool("write", {"path": "a", "note": "y"}))


@pytest.mark.parametrize("kind", KINDS)
def test_decisions_and_the_command_sequence_of_an_installed_agents_trial(kind, tmp_path):
    from agentrig.bench.terminal.benchmark import TerminalBenchmark

    ctx, replies = _applied(kind, tmp_path)
    record = SimpleNamespace(trajectory=ctx.trajectory)
    keys = decisions_of(record)
    assert len(keys) == len(replies) and keys[0][0] == "tool" and keys[-1][0] in ("text", "tool")
    sequence = TerminalBenchmark().action_sequence(record)
    assert sequence[:2] == (("bash", "echo hello-from-agent"), ("bash", "ls /nonexistent-dir-xyz"))


def test_the_viewer_shows_each_agents_shell_command_as_code():
    from agentrig.bench.terminal.benchmark import VIEWER_HINTS

    assert VIEWER_HINTS["code_arguments"] == {"bash": "command", "exec_command": "cmd", "Bash": "command",
                                              "shell": "command"}


def test_the_mini_swe_agent_export_reads_codex_and_claude_commands(tmp_path):
    from agentrig.bench.terminal.export import _mini_message

    for kind, name in (("codex", "exec_command"), ("claude-code", "Bash")):
        ctx, _ = _applied(kind, tmp_path / kind)
        record = SimpleNamespace(trajectory=ctx.trajectory)
        first = next(m for m in ctx.trajectory.messages if m.role == "assistant")
        assert first.tool_calls[0].name == name
        out = _mini_message(first, record, __import__("datetime").datetime.now(), {})
        assert out["extra"]["actions"] == [{"command": "echo hello-from-agent", "tool_call_id": first.tool_calls[0].id}]


def test_a_resampled_mini_text_reply_is_read_as_mini_reads_it(tmp_path):
    """`agentrig instability` compares a resampled reply with the step taken: in mini's text mode the
    recorded step is a `bash` call (text-<n>), so the sample's block must be read as one too."""
    from agentrig.run.resample import parse_reply

    ctx, _ = _applied("mini-swe-agent", tmp_path, text_mode=True)
    taken = decisions_of(SimpleNamespace(trajectory=ctx.trajectory))[1]
    settings = SimpleNamespace(agent=SimpleNamespace(kind="mini-swe-agent", tool_mode="native"))
    sample = "Let me look.\n\n```mswea_bash_command\nls  /nonexistent-dir-xyz\n```"
    same = parse_reply(settings, AssistantMessage(content=sample), "stop")
    other = parse_reply(settings, AssistantMessage(content="```mswea_bash_command\nls /\n```"), "stop")
    assert decision_key(same) == taken and decision_key(other) != taken
    assert parse_reply(settings, AssistantMessage(content="no block"), "stop") == {"kind": "text", "text": "no block"}


def test_codex_other_tools_pair_by_name_and_the_model_sees_what_codex_sent(tmp_path):
    events = codex_events(SCRIPT[:1])
    events.insert(-2, {"type": "item.completed", "item": {"id": "item_9", "type": "file_change", "status": "completed",
                                                          "changes": [{"path": "/app/a.py", "kind": "update"}]}})
    write_record("codex", tmp_path, events)
    call = replies_for("codex")[0][1].tool_calls[0]
    plan = ToolCall(id="call_plan", name="update_plan", arguments={"plan": []}, arguments_raw='{"plan": []}')
    patch = ToolCall(id="call_patch", name="apply_patch", arguments={"input": "*** Begin Patch"}, arguments_raw="{}")
    replies = [(0, AssistantMessage(tool_calls=[call])), (1, AssistantMessage(tool_calls=[plan])),
               (2, AssistantMessage(tool_calls=[patch])), (3, AssistantMessage(content=FINAL))]
    ctx = _ctx(4)
    sent = "Chunk ID: 1\nWall time: 0.0412 seconds\nProcess exited with code 0\nOutput:\nhello-from-agent\n"
    ctx.trajectory.agent_requests.append(AgentRequest(call=1, tail=[{"role": "tool", "tool_call_id": call.id,
                                                                       "content": sent}]))
    apply_record(ctx, "codex", tmp_path, replies)
    tools = {m.tool_call_id: m.content for m in ctx.trajectory.messages if m.role == "tool"}
    assert tools[call.id] == sent  # the result as the model saw it
    assert "call_plan" not in tools  # no result anywhere: none is made up
    assert tools["call_patch"] == "completed"  # the file_change item's status, not update_plan's
    (event,) = _events(ctx, "sandbox", "command")
    assert event["exit_code"] == 0 and event["duration_s"] == 0.0412
    assert not _events(ctx, "agent", "record_unmatched")


# ------------------------------------------------------------------------ the live conversation


def test_the_live_conversation_is_what_the_memory_model_reads_mid_run_and_leaves_no_trace(tmp_path):
    """Before each proxy call: the instruction, the replies so far and the results the agent sends
    back in that request — by tool-call id, or (mini's text mode) the user message after its reply —
    as the memory plug-in's window reads them; a side request adds nothing; ``clear`` leaves the
    trajectory to ``apply_record``."""
    from agentrig.agents.installed.records import LiveConversation
    from agentrig.plugins.memory.window import Conversation

    ctx = _ctx(3)
    live = LiveConversation(ctx, "mini-swe-agent")
    window = Conversation(ctx.trajectory.messages, 1000)
    task = [{"role": "system", "content": "mini's own prompt"}, {"role": "user", "content": "Do the task."}]
    text_reply = AssistantMessage(content="Look.\n\n```mswea_bash_command\nls /app\n```")
    call_reply = AssistantMessage(content=None, tool_calls=[ToolCall(id="call_9", name="bash", arguments={"command": "cat a"})])
    live.catch_up([], task)
    assert [(m.role, m.content) for m in ctx.trajectory.messages] == [("user", "Print hello and list a directory.")]
    second = [*task, {"role": "assistant", "content": text_reply.content}, {"role": "user", "content": "a\nb"}]
    live.catch_up([(0, text_reply)], second)
    live.catch_up([(0, text_reply)], [{"role": "user", "content": "a title, please"}])  # a side request
    third = [*second, {"role": "assistant", "content": None, "tool_calls": [{"id": "call_9"}]},
             {"role": "tool", "tool_call_id": "call_9", "content": [{"type": "text", "text": "hello"}]}]
    live.catch_up([(0, text_reply), (1, call_reply)], third)
    messages = ctx.trajectory.messages
    assert [(m.role, m.content, m.call) for m in messages] == [
        ("user", "Print hello and list a directory.", None), ("assistant", text_reply.content, 0), ("user", "a\nb", None),
        ("assistant", None, 1), ("tool", "hello", None)]
    assert messages[1].tool_calls[0].arguments == {"command": "ls /app"} and messages[4].tool_call_id == "call_9"
    view = window.view(8)
    assert [text for _, text in view.requests] == ["Print hello and list a directory."]
    assert "result of bash: a\nb" in view.window and "result of bash: hello" in view.window
    assert "a title" not in view.window and "user:" not in view.window

    live.clear()
    assert messages == [] and ctx.trajectory.messages is messages
    apply_record(ctx, "command", tmp_path, [(0, call_reply)])  # after it: the record's conversation alone
    assert [m.role for m in ctx.trajectory.messages] == ["user", "assistant"]
