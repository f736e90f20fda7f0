"""Every text the AppWorld code agent sends: system prompt, task prompt, observations, notes.

All of it is agentrig's own wording (AppWorld's own agents and prompts live in its repository's
experiments, not in its package, and are not used). The arm's ``prompt`` file replaces the
preamble; the rules of the tool mode, how to finish and the limits are always appended.
"""

from __future__ import annotations

from agentrig.agents import prompts as shared

TOOL_NAME = "execute"
CODE_LABELS = ("python", "py")
FAILED = "Execution failed"  # AppWorld's own prefix of a failed execution's output

PREAMBLE = """\
You are an assistant who completes everyday tasks for your supervisor by writing Python code that
calls the APIs of their apps (email, notes, music, payments, shopping, files, phone …). You work
step by step: run a little code, read what it prints, decide the next step, until the task is done.
Nobody will answer questions: find everything you need through the APIs."""

_RULES_COMMON = """\
# The environment

- The code runs in a Python session that keeps its variables between executions. The apps are
  reached through the object `apis`: `apis.<app>.<api>(**arguments)`, e.g.
  `apis.supervisor.show_profile()`. Calls return plain Python data (dicts and lists).
- Look up what exists before using it: `apis.api_docs.show_app_descriptions()`,
  `apis.api_docs.show_api_descriptions(app_name="...")` and
  `apis.api_docs.show_api_doc(app_name="...", api_name="...")` (parameters and responses).
- Your supervisor's accounts, passwords, addresses and cards come from the `supervisor` app
  (`apis.supervisor.show_account_passwords()` …). Most apps need `login` first; pass the
  `access_token` it returns to the other calls.
- Print what you need to see; long outputs are cut. Results that come in pages (`page_index`)
  must be read page by page until a page is empty.
- A failed execution shows "Execution failed" and its traceback: read it, fix the code, go on.
- Today's date and time are the task's (the clock is set to them).

# Finishing

When the task is done, call `apis.supervisor.complete_task()`; if the task asks a question, pass the
answer: `apis.supervisor.complete_task(answer=<the answer, short: a number, a name, yes/no>)`.
That ends the task: nothing runs after it, so check your work first. Change nothing the task does
not ask for.

# Limits

{limits}"""

_NATIVE_RULES = f"""\
# How to act

Use the `{TOOL_NAME}` tool: each call runs a block of Python code and returns what it printed (or
the error). Think briefly, then make a call; every reply must contain a call."""

_TEXT_RULES = """\
# How to act

Every reply ends with exactly ONE block of Python code in a fence labelled `python`, like this:

```python
print(apis.api_docs.show_app_descriptions())
```

Before the block you may write a short thought. A reply with no such block, or more than one, is
not run; you get a note and try again. What the code printed comes back in the next message."""

TASK_PROMPT = """\
# Task

My name is {name}. My email is {email} and my phone number is {phone}.

{instruction}

(Task date and time: {datetime}.)"""

EXECUTE_TOOL = {
    "type": "function",
    "function": {
        "name": TOOL_NAME,
        "description": ("Run a block of Python code in the task's session (the object `apis` reaches the apps) and "
                        "return what it printed, or the error and its traceback."),
        "parameters": {
            "type": "object",
            "properties": {"code": {"type": "string", "description": "the Python code to run"}},
            "required": ["code"],
            "additionalProperties": False,
        },
    },
}

CUT_OFF = ("your reply was cut off: it reached the maximum reply length before {what}. Keep your thinking "
           "short and put the code first")
_TEXT_HOWTO = "Reply with a short thought, then exactly one block:\n\n```python\n<code>\n```"
_NATIVE_HOWTO = f"Every reply must call the `{TOOL_NAME}` tool with a `code` string."


def preamble(setting: str) -> str:
    if setting == "default":
        return PREAMBLE
    return shared.preamble(setting, text_mode=True, parallel_tool_calls=False)


def limits_text(*, step_limit: int | None, execution_limit: int | None, cost_limit: float | None,
                output_limit: int | None, execute_timeout_s: float | None) -> str:
    return shared.limits_list([
        (step_limit, shared.REPLIES_LIMIT),
        (execution_limit, "Code executions: at most {}."),
        (execute_timeout_s, "One execution: at most {:g} seconds."),
        (cost_limit, shared.COST_LIMIT),
        (output_limit, "Output shown per execution: about {} characters (head and tail)."),
    ], "None beyond the task's time.")


def system_prompt(preamble_text: str, *, text_mode: bool, limits: str) -> str:
    rules = _TEXT_RULES if text_mode else _NATIVE_RULES
    return f"{preamble_text.strip()}\n\n{rules}\n\n{_RULES_COMMON.format(limits=limits)}\n"


def task_prompt(task: object) -> str:
    sup = getattr(task, "supervisor", {}) or {}
    name = " ".join(x for x in (sup.get("first_name"), sup.get("last_name")) if x) or "(see apis.supervisor.show_profile())"
    return TASK_PROMPT.format(name=name, email=sup.get("email", "?"), phone=sup.get("phone_number", "?"),
                              instruction=getattr(task, "instruction", "").strip(),
                              datetime=getattr(task, "datetime", "") or "?")


def guide(limits: str) -> str:
    """The environment, how to finish and the limits, as the system prompt has them (for a user's
    Python agent, whose system prompt is its own)."""
    return _RULES_COMMON.format(limits=limits) + "\n"


def observation(output: str, omitted_chars: int = 0) -> str:
    text = output if output.strip() else "(no output)"
    if omitted_chars:
        text += f"\n[note: the output was cut; {omitted_chars} characters in the middle are not shown]"
    return text


def text_format_error(problem: str) -> str:
    return f"Format error: {problem}. Nothing was run.\n\n{_TEXT_HOWTO}"


def native_format_error(problem: str) -> str:
    return f"Format error: {problem}. Nothing was run.\n\n{_NATIVE_HOWTO}"


def bad_arguments(detail: str) -> str:
    return f"Error: this call was not run: its arguments must be a JSON object with a non-empty \"code\" string ({detail})."


def skipped_after_end() -> str:
    return "Not run: an earlier call of this reply completed the task, which ends the session."
