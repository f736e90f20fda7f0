"""``agentrig run --smoke`` on terminal arms: which task, and what is shown of its trial.

The smoke check is what people run first after pointing a bash agent at a new gateway, so it
plays the smallest built-in task (``write-marker``: write a marker file, list the directory)
once per arm — even when the experiment selects other tasks (its own Terminal-Bench or Harbor
tasks), as long as the sandbox can run it — and prints the trial step by step:

    thought       the model's text before its action (its reasoning when that is all it sent)
    reply         a reply that held no action, as the model sent it
    action        each command it asked for
    observation   what came back (exit code and output, clipped here; the store keeps it whole)
    format error  a reply that could not be parsed into an action, with why
    stop          how the agent phase ended when it was not a submission (limits, timeout …)
    submission    what the agent submitted (the output after the sentinel line)
    tests         the verifier's verdict: tests passed, the failure mode

A wrong key, URL or model name stops the trial at its first call (the roles' checks then give
the doctor's diagnosis); a model whose replies cannot be parsed shows its format errors here.
"""

from __future__ import annotations

import re
from typing import Any, Callable

from agentrig.agents.bash_prompts import ACTION_LABEL
from agentrig.analysis.shell_tools import shell_command

from .tasks.parsers import PASSING

SMOKE_TASK = "write-marker"
CLIP_LINES = 8
CLIP_CHARS = 600
_ACTION_BLOCK = re.compile(r"^ {0,3}(`{3,})[ \t]*" + re.escape(ACTION_LABEL) + r"[ \t]*\n.*?^ {0,3}\1`*[ \t]*$",
                           re.M | re.S)


def smoke_task(r: Any, group: str, runnable: Callable[[Any], bool]) -> tuple[str, Any]:
    """The built-in smoke task: from the selection when it is there, else loaded from the
    built-in tasks when ``runnable(task)`` (the run's sandbox can run it), else the first
    selected task."""
    from .tasks.taskfile import builtin_tasks_dir, load_tasks

    builtin = builtin_tasks_dir().resolve()
    for g, task in r.tasks:
        if task.id == SMOKE_TASK and task.path.resolve().parent == builtin:
            return g, task
    try:
        found, _ = load_tasks(builtin_tasks_dir(), task_ids=[SMOKE_TASK])
    except Exception:  # noqa: BLE001 - a damaged installation: fall back to the selection
        found = []
    for task in found:
        if runnable(task):
            return group, task
    return r.tasks[0]


def clip(text: str, lines: int = CLIP_LINES, chars: int = CLIP_CHARS) -> str:
    """The head of ``text``: at most ``lines`` lines and ``chars`` characters, with what was left out."""
    text = (text or "").strip("\n")
    rows = text.split("\n")
    head = "\n".join(rows[:lines])
    if len(head) > chars:
        head = head[:chars]
    left = len(text) - len(head)
    if left > 0:
        more = len(rows) - len(head.split("\n"))
        head += f"\n… ({more} more line(s), {left} more characters)" if more > 0 else f" … ({left} more characters)"
    return head


def _thought(message: Any) -> str:
    text = message.content or ""
    if any(c.id.startswith("text-") for c in message.tool_calls):
        text = _ACTION_BLOCK.sub("", text)
    text = text.strip()
    if not text and message.reasoning:
        text = message.reasoning.strip()
    return text


def transcript(record: Any) -> list[tuple[str, str]]:
    """The smoke trial as (label, text) lines: each step's thought, actions and observations,
    then the stop, the submission and the tests (see the module docstring)."""
    traj = record.trajectory
    problems = {e.data.get("call"): e.data for e in traj.events if (e.plugin, e.kind) == ("agent", "format_error")}
    out: list[tuple[str, str]] = []
    seen_assistant = False
    last_had_action = False
    for m in traj.messages:
        if m.role == "system":
            continue
        if m.role == "assistant":
            seen_assistant = True
            thought = _thought(m)
            commands = [shell_command(c.name, c.arguments) or c.arguments_raw for c in m.tool_calls]
            if thought:  # a reply with no action is shown whole: it is what could not be parsed
                out.append(("thought" if commands else "reply", clip(thought, lines=4, chars=300)))
            for command in commands:
                out.append(("action", clip(command, lines=6, chars=400)))
            last_had_action = bool(commands)
            if not commands and m.call is not None and m.call in problems:
                out.append(("format error", str(problems[m.call].get("problem", "unusable reply"))))
            continue
        if not seen_assistant:  # the task prompt
            continue
        if m.role == "tool" or (m.role == "user" and last_had_action):
            out.append(("observation", clip(m.content or "")))
            if m.role == "user":
                last_had_action = False  # text mode: one observation per action
        # a user message after a reply without an action is the format-error note, shown above
    for e in traj.events:
        if (e.plugin, e.kind) == ("agent", "stop"):
            out.append(("stop", f"{e.data.get('termination')}: {e.data.get('detail', '')}".rstrip(": ")))
        elif (e.plugin, e.kind) == ("agent", "submit"):
            out.append(("submission", clip(str(e.data.get("submission", ""))) or "(empty)"))
    out.extend(_tests(record))
    return out


def _tests(record: Any) -> list[tuple[str, str]]:
    v = record.verdict
    if not v.valid:
        return [("tests", f"not run: the trial is invalid ({v.invalid_cause})")]
    result = next((e.data for e in record.trajectory.events if (e.plugin, e.kind) == ("verifier", "result")), None)
    if result is None:
        notes = v.reward_info.notes if v.reward_info else {}
        return [("tests", f"not run: {notes.get('failure_mode', v.termination)}")]
    tests = result.get("tests") or []
    passed = [t["name"] for t in tests if t.get("outcome") in PASSING]
    failed = [t["name"] for t in tests if t.get("outcome") not in PASSING]
    if result.get("format") == "harbor":  # the reward file decides; a test summary it printed is told beside it
        line = f"reward {result.get('reward')}" + (f" ({len(passed)}/{len(tests)} tests passed)" if tests else "")
    else:
        line = f"{len(passed)}/{len(tests)} passed" if tests else f"reward {result.get('reward')}"
    line += ": resolved" if result.get("resolved") else f": not resolved, failure mode {result.get('failure_mode')}"
    if failed:
        line += "\nfailed: " + ", ".join(failed[:8])
    if result.get("detail") and not result.get("resolved"):
        line += "\n" + clip(str(result["detail"]), lines=3, chars=300)
    return [("tests", line)]


def problem(record: Any) -> str | None:
    """Why the smoke check fails although the trial was valid: the model's replies could not be
    parsed into actions (a wrong ``tool_mode`` for this model, or a model that does not follow
    the format). A low reward alone is not a smoke failure."""
    if record.verdict.termination != "format_errors":
        return None
    stops = _stops(record)
    return ("the model's replies could not be parsed into actions (format_errors"
            + (f": {stops[-1]}" if stops else "") + "); try the other tool_mode (\"native\" / \"text\") "
            "or another model")


def _stops(record: Any) -> list[str]:
    return [str(e.data.get("detail", "")) for e in record.trajectory.events if (e.plugin, e.kind) == ("agent", "stop")]
