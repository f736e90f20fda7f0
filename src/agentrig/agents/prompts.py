"""Every text the agents send: system prompts, the text-mode reply format, format-error notes and
the reference agents' lines. All of it is agentrig's own wording.

``settings.prompt`` is ``"default"`` or the path of a text file whose content replaces the
preamble (the policy, and in text mode the tool list and reply format, are still appended).
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from agentrig.errors import ConfigError

# Kept close in substance to what τ²-bench tells its agent (role, follow the policy, text or tools
# per turn, valid JSON), so that scores stay comparable; no extra behavioural hints.
_PREAMBLE = """\
You are a customer-service agent. Help the customer you are talking with, and always act within
the policy below.

On each turn you do one of two things: write a message to the customer, or call tools; never both
in the same turn. {calls} Tool arguments must be valid JSON."""

_ONE_CALL = "Make one tool call at a time and wait for its result before the next."
_PARALLEL = ("When several tool calls do not depend on each other, you may make them together in "
             "one turn.")

_TEXT_PREAMBLE = """\
You are a customer-service agent. Help the customer you are talking with, and always act within
the policy below."""

# Text mode's additions are kept short (the first request must fit small windows: see
# perf/first_request_size.py and docs/tau2.md): the reply format, and a tool list that
# carries τ²'s names, descriptions and argument schemas without pydantic's restated titles.
TEXT_FORMAT = """\
# Reply format

Each reply is exactly ONE JSON object and nothing else, either
{"action": "<tool name>", "arguments": {<the tool's arguments>}} to use a tool, or
{"action": "respond", "content": "<your message>"} to write to the customer.
After a tool action, wait for its result. Messages starting with "Result of" are your tools'
outputs, "Format error" means your last reply could not be read; all others are the customer's."""

EXPECTED_SHAPE = ('{"action": "<tool name>", "arguments": {...}} or '
                  '{"action": "respond", "content": "<your message to the customer>"}')

# reference agents
NOOP_TEXT = "Thank you for your message. I'm sorry, but I am not able to help with this request."
GOLD_ASK_USER = "To go on, please do the following on your side and tell me once it is done:"
GOLD_INFO = "Here is the information about your request:"
GOLD_DONE = "I have completed the steps for your request."
GOLD_ANYTHING_ELSE = "Is there anything else I can help you with?"
GOLD_CLOSING = "Thank you for contacting us. Have a nice day!"


def default_preamble(parallel_tool_calls: bool) -> str:
    return _PREAMBLE.format(calls=_PARALLEL if parallel_tool_calls else _ONE_CALL)


@lru_cache(maxsize=64)
def _read_preamble(path: str, mtime_ns: int, size: int) -> str:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(
            f"agent setting `prompt`: cannot read {path}: {exc} "
            "(fix: point `prompt` at a readable UTF-8 text file, or set it to \"default\")"
        ) from None
    if not text.strip():
        raise ConfigError(
            f"agent setting `prompt`: the file {path} is empty "
            "(fix: write the preamble of the system prompt into it, or set `prompt` to \"default\")"
        )
    return text.strip()


def preamble(setting: str, *, text_mode: bool, parallel_tool_calls: bool) -> str:
    """The preamble named by the ``prompt`` setting (a file is read once per version)."""
    if setting == "default":
        return _TEXT_PREAMBLE if text_mode else default_preamble(parallel_tool_calls)
    path = Path(setting).expanduser()
    try:
        st = path.stat()
    except OSError:
        st = None
    if st is None or not path.is_file():
        raise ConfigError(
            f"agent setting `prompt`: the file {path} does not exist (resolved against {Path.cwd()}) "
            "(fix: give the path of a text file holding the system prompt's preamble, or \"default\")"
        )
    return _read_preamble(str(path.resolve()), st.st_mtime_ns, st.st_size)


def system_prompt(preamble_text: str, policy: str) -> str:
    return f"{preamble_text}\n\n# Policy\n\n{policy.strip()}\n"


def _untitled(schema: object) -> object:
    """A JSON schema without its ``title`` keywords (pydantic's restatement of each name); a
    property that is itself called ``title`` is kept."""
    if isinstance(schema, list):
        return [_untitled(x) for x in schema]
    if not isinstance(schema, dict):
        return schema
    out = {}
    for key, value in schema.items():
        if key == "title" and isinstance(value, str):
            continue
        if key in ("properties", "$defs", "definitions") and isinstance(value, dict):
            out[key] = {name: _untitled(sub) for name, sub in value.items()}
        else:
            out[key] = _untitled(value)
    return out


def tools_section(specs: list) -> str:
    """The tools as text: name, description and the JSON schema of the arguments (compact)."""
    parts = ["# Tools"]
    for s in specs:
        parts += ["", f"## {s.name}", s.description or "(no description)",
                  "Arguments: " + json.dumps(_untitled(s.parameters), ensure_ascii=False, separators=(",", ":"))]
    return "\n".join(parts)


def text_system_prompt(preamble_text: str, tools_text: str, policy: str) -> str:
    return f"{preamble_text}\n\n{TEXT_FORMAT}\n\n{tools_text}\n\n# Policy\n\n{policy.strip()}\n"


def format_error(problem: str) -> str:
    return (f"Format error: {problem}. Your reply must be exactly one JSON object and nothing else: "
            f"{EXPECTED_SHAPE}")


def tool_result(name: str, content: str) -> str:
    return f"Result of {name}: {content}"


# The lines of a prompt's list of limits that the bash and AppWorld code agents share
REPLIES_LIMIT = "Replies: at most {}."
COST_LIMIT = "Cost: at most {:g} USD of model usage."


def limits_list(limits: list[tuple[object, str]], otherwise: str) -> str:
    """A system prompt's list of a trial's limits: one ``- `` line per limit that is set (its text
    formatted with its value), in the order given, or the one line ``otherwise`` when none is."""
    return "\n".join(f"- {text.format(value)}" for value, text in limits if value) or f"- {otherwise}"
