"""The NL_ASSERTION component: one model call through the ``judge`` role grades a conversation
against a task's ``nl_assertions``, the way tau2-bench's ``NLAssertionsEvaluator`` does.

What the judge sees mirrors tau2: every message of the trial (the task's own history included),
as ``role: text``; messages without text (pure tool calls) add nothing, as tau2 shows them only
as an empty ``None``. The prompt is our own wording. It asks for
``{"results": [{"expectedOutcome", "reasoning", "metExpectation"}]}``; the assertions are sent as
a JSON array between ``<expected_outcomes>`` tags in the last user message (scripted endpoints
in tests and the offline demo read them from there).

The answer is parsed leniently (code fences and text around the JSON are tolerated) and matched
to the assertions by order (by the repeated ``expectedOutcome`` text when the count differs). An
answer that cannot be used gets one more call with a correction; a second unusable answer raises
``JudgeFailed`` — the episode then marks the trial invalid, never failed.
"""

from __future__ import annotations

import json
import re
from typing import Any

from agentrig.errors import InfrastructureFault
from agentrig.types import Message

from .verdict import TextCheck

OPEN_TAG = "<expected_outcomes>"
CLOSE_TAG = "</expected_outcomes>"
PURPOSE = "judge.nl"

_SYSTEM = """You are grading a recorded conversation between a customer-service AI agent and a \
customer. The conversation may include tool results the agent received (lines starting with \
"tool:"). You are also given a list of expected outcomes.

For every expected outcome, decide on its own whether the conversation shows that the agent \
achieved it. Base each decision only on what the conversation contains; when the evidence is \
missing or ambiguous, the outcome is not met.

Reply with a single JSON object and nothing else, shaped like this:
{"results": [{"expectedOutcome": "<the outcome, copied>", "reasoning": "<one or two sentences>", \
"metExpectation": true}]}
Give exactly one entry per expected outcome, in the order they are listed; metExpectation is \
the JSON boolean true or false."""

_RETRY = """Your previous reply could not be read as the JSON object that was asked for \
({problem}). Grade the same conversation again and reply with only the JSON object \
{{"results": [...]}}: one entry per expected outcome below, in this order, each with \
"expectedOutcome", "reasoning" and a boolean "metExpectation".

{tagged}"""

_FENCE = re.compile(r"```[a-zA-Z0-9_-]*\s*\n?(.*?)```", re.DOTALL)


class JudgeFailed(InfrastructureFault):
    """The judge model's answers could not be read twice in a row (the trial is invalid)."""


def transcript(messages: list[Message]) -> str:
    """The conversation as the judge sees it: one ``role: text`` entry per message with text."""
    return "\n".join(f"{m.role}: {m.content}" for m in messages if m.content)


def tagged_assertions(assertions: list[str]) -> str:
    return f"{OPEN_TAG}{json.dumps(list(assertions), ensure_ascii=False)}{CLOSE_TAG}"


def request_messages(messages: list[Message], assertions: list[str]) -> list[dict]:
    user = (
        "Conversation:\n"
        f"{transcript(messages)}\n\n"
        "Expected outcomes, as a JSON array of strings:\n"
        f"{tagged_assertions(assertions)}"
    )
    return [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": user}]


# ---- parsing --------------------------------------------------------------------------------


def _json_candidates(text: str) -> list[Any]:
    """JSON values found in a reply: the whole text, the insides of code fences, then every
    object that starts at a ``{`` (text around it ignored)."""
    found: list[Any] = []
    chunks = [text.strip()] + [m.group(1).strip() for m in _FENCE.finditer(text)]
    decoder = json.JSONDecoder()
    for chunk in chunks:
        try:
            found.append(json.loads(chunk))
            continue
        except ValueError:
            pass
        start = chunk.find("{")
        while start != -1:
            try:
                value, end = decoder.raw_decode(chunk, start)
            except ValueError:
                start = chunk.find("{", start + 1)
                continue
            found.append(value)
            start = chunk.find("{", end)
    return found


def _as_bool(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    return None


def _results_of(value: Any) -> list | None:
    if isinstance(value, dict) and isinstance(value.get("results"), list):
        return value["results"]
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        return value
    return None


def _norm(text: Any) -> str:
    return " ".join(str(text).split()).strip().lower()


def parse_answer(text: str | None, assertions: list[str]) -> tuple[list[TextCheck] | None, str]:
    """(checks, problem): the checks in the order of ``assertions``, or None and what was wrong."""
    if not text or not text.strip():
        return None, "the reply was empty"
    results = None
    for value in _json_candidates(text):
        results = _results_of(value)
        if results is not None:
            break
    if results is None:
        return None, 'no JSON object with a "results" list was found'
    graded: list[tuple[str, bool, str]] = []
    for i, item in enumerate(results):
        met = _as_bool(item.get("metExpectation")) if isinstance(item, dict) else None
        if met is None:
            return None, f'results[{i}] has no boolean "metExpectation"'
        reasoning = item.get("reasoning")
        graded.append((_norm(item.get("expectedOutcome", "")), met, "" if reasoning is None else str(reasoning)))
    if len(graded) == len(assertions):
        ordered = graded
    else:  # the model skipped or added entries: match them by the outcome text it repeated
        by_text = {}
        for entry in graded:
            by_text.setdefault(entry[0], entry)
        ordered = [by_text.get(_norm(a)) for a in assertions]
        if any(e is None for e in ordered):
            return None, f"{len(graded)} results for {len(assertions)} expected outcomes"
    checks = [TextCheck(text=a, met=e[1], justification=e[2]) for a, e in zip(assertions, ordered)]
    return checks, ""


# ---- the call -------------------------------------------------------------------------------


async def judge_nl(ctx: Any, assertions: list[str]) -> list[TextCheck]:
    """Grade ``assertions`` on the trial's conversation through the ``judge`` role (at most two
    calls, both recorded as ``ModelCall(purpose="judge.nl")``). ChannelErrors propagate."""
    assertions = [str(a) for a in assertions]
    messages = request_messages(ctx.trajectory.messages, assertions)
    done, _ = await ctx.complete("judge", messages, purpose=PURPOSE)
    checks, problem = parse_answer(done.message.content, assertions)
    if checks is not None:
        return checks
    retry = messages + [
        {"role": "assistant", "content": done.message.content or ""},
        {"role": "user", "content": _RETRY.format(problem=problem, tagged=tagged_assertions(assertions))},
    ]
    done, _ = await ctx.complete("judge", retry, purpose=PURPOSE)
    checks, problem2 = parse_answer(done.message.content, assertions)
    if checks is not None:
        return checks
    model = done.model or "the judge model"
    raise JudgeFailed(
        f"{model} gave no usable NL-assertion verdict in two calls ({problem}; then {problem2}); "
        "check that [roles.judge] names a model that follows JSON instructions"
    )
