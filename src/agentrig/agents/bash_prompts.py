"""Every text the bash agent sends: system prompt, task prompt, observations, format-error notes.

All of it is agentrig's own wording. ``settings.prompt`` replaces the preamble (the first part of
the system prompt) with a text file's content, as for the τ agent; the rules of the chosen tool
mode, the submission sentinel and the limits are always appended, so a custom preamble cannot
break the protocol.
"""

from __future__ import annotations

from . import prompts

# The first output line that ends the agent phase; the rest of the output is the submission.
SUBMIT_SENTINEL = "AGENTRIG_SUBMIT"
# Text mode: the label of the one action block per reply. Not "bash"/"sh": READMEs, notes and
# code that the agent reads or writes are full of those fences, and must never run as actions.
ACTION_LABEL = "bash-action"
TOOL_NAME = "bash"

PREAMBLE = """\
You are an autonomous engineer working in a Linux shell. You solve the task below by running
shell commands, reading what they print, and deciding the next command, until the task is done.
Nobody will answer questions: work it out from the files and the commands' output."""

_RULES_COMMON = f"""\
# How commands run

{{shell}}
- Commands cannot be interactive: no editors (vim, nano), pagers (less, more) or prompts. Use
  non-interactive flags (`apt-get -y`, `git --no-pager`), and write files with `cat <<'EOF' > file`,
  `sed -i` or a short script.
- A command that does not finish within {{command_timeout}} is killed. Run servers and other
  long-lived processes in the background (`nohup CMD > log 2>&1 &`) and poll them.
- Long outputs are cut in the middle; ask for what you need (`head`, `tail`, `grep`, `wc -l`).

# Finishing

When the task is done (and you have checked it), submit with a command whose FIRST line of output
is exactly `{SUBMIT_SENTINEL}`, for example:

    echo {SUBMIT_SENTINEL} && echo "what I did, in one line"

Everything printed after that first line is your submission. After submitting you cannot run
anything else, so check your work first.

# Limits

{{limits}}"""

_STATELESS = """\
- Every command runs in a fresh `bash -lc` from the working directory {workdir}: `cd` and
  `export` do not carry over to the next command. Chain them (`cd sub && make`) or use absolute
  paths."""
_PERSISTENT = """\
- Commands run one after the other in the same bash session, which starts in {workdir}: `cd`,
  `export` and background jobs carry over to the next command."""

_NATIVE_RULES = f"""\
# How to act

Use the `{TOOL_NAME}` tool: each call runs one shell command and returns its exit code and output.
Think briefly, then make a call; every reply must contain at least one call. If you make several
calls in one reply they run in order, and you see all their outputs together afterwards."""

_TEXT_RULES = f"""\
# How to act

Every reply ends with exactly ONE action block: the command to run, in a fence labelled
`{ACTION_LABEL}`, like this:

```{ACTION_LABEL}
ls -la
```

Before the block you may write a short thought. Only this label is an action: other code blocks
(```bash, ```python …) are never run. A reply with no action block, or with more than one, is
not run; you get a note and try again. The command's exit code and output come back in the next
message."""

TASK_PROMPT = """\
# Task

{instruction}

Working directory: {workdir}

Start by looking around; submit when you are done."""

TOOL_DESCRIPTION = ("Run one shell command (bash -lc) in the task's working directory and return its exit code "
                    "and output (stdout and stderr together, cut in the middle when long).")

BASH_TOOL = {
    "type": "function",
    "function": {
        "name": TOOL_NAME,
        "description": TOOL_DESCRIPTION,
        "parameters": {
            "type": "object",
            "properties": {"command": {"type": "string", "description": "the command, as typed at a bash prompt"}},
            "required": ["command"],
            "additionalProperties": False,
        },
    },
}

# format errors: what was wrong (the lead sentence) and how to reply
_TEXT_HOWTO = (f"Reply with a short thought, then exactly one action block:\n\n```{ACTION_LABEL}\n<one command>\n```\n\n"
               f"To finish, run a command whose first output line is {SUBMIT_SENTINEL}.")
_NATIVE_HOWTO = (f"Every reply must call the `{TOOL_NAME}` tool with a `command` string. To finish, run a command "
                 f"whose first output line is {SUBMIT_SENTINEL}.")
CUT_OFF = ("your reply was cut off: it reached the maximum reply length before {what}. Keep your thinking "
           "short and put the action first")


def preamble(setting: str) -> str:
    """The default preamble, or the text file named by the ``prompt`` setting (read once per version)."""
    if setting == "default":
        return PREAMBLE
    return prompts.preamble(setting, text_mode=True, parallel_tool_calls=False)


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "the per-command timeout"
    if seconds >= 120 and seconds % 60 == 0:
        return f"{seconds / 60:g} minutes"
    return f"{seconds:g} seconds"


def limits_text(*, agent_timeout_s: float | None, command_timeout_s: float | None, step_limit: int | None,
                command_limit: int | None, cost_limit: float | None, output_limit: int | None) -> str:
    return prompts.limits_list([
        (agent_timeout_s and duration(agent_timeout_s), "Time: {} for the whole task; then the session ends."),
        (command_timeout_s and duration(command_timeout_s), "One command: at most {}."),
        (step_limit, prompts.REPLIES_LIMIT),
        (command_limit, "Commands: at most {}."),
        (cost_limit, prompts.COST_LIMIT),
        (output_limit, "Output shown per command: about {} characters (head and tail)."),
    ], "The session ends at the task's time limit.")


def system_prompt(preamble_text: str, *, text_mode: bool, workdir: str, command_timeout_s: float | None,
                  limits: str, persistent: bool = False) -> str:
    rules = _TEXT_RULES if text_mode else _NATIVE_RULES
    shell = (_PERSISTENT if persistent else _STATELESS).format(workdir=workdir)
    common = _RULES_COMMON.format(shell=shell, command_timeout=duration(command_timeout_s), limits=limits)
    return f"{preamble_text.strip()}\n\n{rules}\n\n{common}\n"


def task_prompt(instruction: str, workdir: str) -> str:
    return TASK_PROMPT.format(instruction=instruction.strip(), workdir=workdir)


def observation(exit_code: int | None, output: str, *, omitted_chars: int = 0, timed_out: bool = False,
                timeout_s: float | None = None, note: str | None = None) -> str:
    """The fixed template every command result is shown in."""
    if timed_out or exit_code is None:
        head = f"exit code: none (killed: the command ran longer than {duration(timeout_s)})"
    else:
        head = f"exit code: {exit_code}"
    lines = [head]
    if omitted_chars:
        lines.append(f"note: the output was cut; {omitted_chars} characters in the middle are not shown")
    if note:
        lines.append(f"note: {note}")
    lines.append("output:")
    lines.append(output if output.strip() else "(no output)")
    return "\n".join(lines)


def text_format_error(problem: str) -> str:
    return f"Format error: {problem}. Nothing was run.\n\n{_TEXT_HOWTO}"


def native_format_error(problem: str) -> str:
    return f"Format error: {problem}. Nothing was run.\n\n{_NATIVE_HOWTO}"


def bad_arguments(detail: str) -> str:
    return (f"Error: this call was not run: its arguments must be a JSON object with a non-empty \"command\" "
            f"string ({detail}).")


def skipped_after_end() -> str:
    return "Not run: an earlier call of this reply submitted, which ends the session."


def elided(head: str, tail: str, omitted: int) -> str:
    return f"{head}\n[... {omitted} characters of this earlier output elided to fit the context window ...]\n{tail}"
