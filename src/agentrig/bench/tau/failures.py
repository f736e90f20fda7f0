"""τ²'s failure taxonomy: why a valid trial failed, from its trajectory and the task's gold actions.

``classify(record, task, spec)`` gives each FAILED VALID trial (reward below 1) a ``FailureLabel``:
every class whose rule matches (``classes``, in precedence order), the first of them as
``primary`` and the rest as ``secondary``; ``other`` when none matches. Successes and invalid
trials get None.

Gold actions are matched against the tool calls of the whole conversation (the task's own
message history included, by either side) exactly as the judge's ACTION check does
(``judge.action_matches``: same tool name, then the ``compare_args`` — or, when those
are null, the call's own keys — equal). An action is a *write* when its requestor's toolkit
(``spec.agent_toolkit`` / ``spec.user_toolkit``) flags the tool as state-changing. The actions
that count below are the gold writes, plus the gold reads when ACTION is in the task's reward
basis and the ACTION component failed (otherwise a read with other arguments is no error by the
benchmark's rules).

Classes (id — label — rule):

- ``ran_out`` — Ran out — the trial ended by ``max_steps``, ``too_many_errors`` or ``timeout``
  (τ²-bench scores such an end 0 whatever the state), or a Python agent's arm limit at its proxy
  or Codex / Claude Code's (``limits_exceeded``: ``step_limit``, ``token_limit``, ``cost_limit``).
- ``format_errors`` — Format errors — a text-mode agent's replies could not be read as one action
  ``max_format_errors`` times in a row (termination ``too_many_format_errors``; scored 0). Not a
  limit reached: the fix is the other ``tool_mode`` (native tool calls where the server honours
  them) or a stronger model, not more steps.
- ``context_overflow`` — Context overflow — the conversation outgrew the model's context window
  in the middle of the trial (termination ``context_overflow``; scored 0). The fix is a longer
  window or a more compact prompt, not a better agent.
- ``extra_write`` — Extra write — a state-changing call of the trial itself (after the task's
  history; arguments a JSON object; its result not an error) that matches no gold action and is
  not one of the first ``u`` non-matching calls of a tool that has ``u`` unmatched gold actions
  (those count as wrong arguments instead). Typically a policy violation.
- ``early_stop`` — Early stop — a counted gold write was never attempted (its tool never called)
  and the conversation was ended by the agent (``agent_transfer``, ``agent_stop``), by a
  participant failing (``agent_error``, ``user_error``), or by the user with ``###TRANSFER###`` or
  ``###OUT-OF-SCOPE###`` (a ``###STOP###`` means the user thought it was done: the agent missed
  something, see missing_action).
- ``wrong_arguments`` — Wrong arguments — a counted gold action is unmatched although its tool
  was called (with other arguments).
- ``partial_compound`` — Partial compound request — the task has two or more gold writes and
  some, not all, of them are matched.
- ``missing_action`` — Missing action — a counted gold action whose tool was never called.
- ``communication_miss`` — Communication miss — the state is right (DB and ENV_ASSERTION each
  1.0 or not computed), COMMUNICATE is in the reward basis and failed: a ``communicate_info``
  item was not said.
- ``judged_behaviour`` — Judged behaviour — NL_ASSERTION is in the basis and the judge found an
  assertion not met.
- ``other`` — Other — none of the above (``components`` names the failing reward components,
  e.g. a DB mismatch no gold action explains).

Precedence (primary = the first matching class in this order), root causes before symptoms:
``ran_out`` first, because the limit alone zeroes the reward and usually causes the rest (the
gold writes never came); ``context_overflow`` and ``format_errors`` likewise (the end each names
zeroes the reward);
``extra_write`` next, because an unwanted state change is the most
serious behaviour (harm to the user, a policy broken) and also spoils the DB; ``early_stop``
before the action classes, because a transfer / a broken conversation explains why actions are
missing; then ``wrong_arguments`` (the agent knew what to do and did it wrong: the most specific
action fault), ``partial_compound`` (a multi-part request half done — more specific than one
action missing), ``missing_action``; the state-right classes last: ``communication_miss`` (cheap,
string-level), ``judged_behaviour`` (a model's opinion, least certain); ``other`` when nothing
matches.

``evidence`` gives short texts per matching class (the gold action ``name(args)``, the extra
call, the unmet communicate item or assertion, the termination), at most ``EVIDENCE_MAX`` each.

The counting (``taxonomy``, ``taxonomy_groups``) and the label models are generic
(``agentrig.analysis.failures``); ``taxonomy`` / ``taxonomy_groups`` here count over τ²'s classes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from agentrig.analysis import failures as generic
from agentrig.analysis.failures import EVIDENCE_MAX, Taxonomy, TaxonomyGroup
from agentrig.types import FailureLabel

from .verdict import details_of
from agentrig.analysis.reliability import is_success
from agentrig.types import TrialKey, TrialRecord


__all__ = ["CLASSES", "RAN_OUT", "FORMAT_ERRORS", "FailureLabel", "classify", "taxonomy", "taxonomy_groups",
           "EVIDENCE_MAX"]

CLASSES: dict[str, str] = {
    "ran_out": "Ran out",
    "context_overflow": "Context overflow",
    "format_errors": "Format errors",
    "extra_write": "Extra write",
    "early_stop": "Early stop",
    "wrong_arguments": "Wrong arguments",
    "partial_compound": "Partial compound request",
    "missing_action": "Missing action",
    "communication_miss": "Communication miss",
    "judged_behaviour": "Judged behaviour",
    "other": "Other",
}
RAN_OUT = ("max_steps", "too_many_errors", "timeout", "limits_exceeded")
FORMAT_ERRORS = "too_many_format_errors"  # the termination of the format_errors class
_AGENT_OR_BROKEN_END = ("agent_transfer", "agent_stop", "agent_error", "user_error")
_USER_EARLY_TOKENS = ("###TRANSFER###", "###OUT-OF-SCOPE###")
_TEXT_MAX = 200


# ---- helpers --------------------------------------------------------------------------------


def _cut(text: str) -> str:
    return text if len(text) <= _TEXT_MAX else text[: _TEXT_MAX - 1] + "…"


def _call_text(name: str, arguments: dict) -> str:
    try:
        args = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False, sort_keys=True)}" for k, v in arguments.items())
    except (TypeError, ValueError):
        args = repr(arguments)
    return _cut(f"{name}({args})")


def _is_write(spec: Any, requestor: str, name: str) -> bool:
    toolkit = spec.user_toolkit if requestor == "user" else spec.agent_toolkit
    return bool(toolkit is not None and toolkit.has_tool(name) and toolkit.is_write(name))


def _failed(value: float | None) -> bool:
    return value is not None and not is_success(value)


def _add(evidence: dict[str, list[str]], cls: str, text: str) -> None:
    items = evidence.setdefault(cls, [])
    if len(items) < EVIDENCE_MAX:
        items.append(_cut(text))


# ---- classification -------------------------------------------------------------------------


def classify(record: TrialRecord, task: Any, spec: Any) -> FailureLabel | None:
    """The failure classes of one trial (None for a success or an invalid trial)."""
    from agentrig.bench.tau.judge import action_matches  # the judge's modules: only when a trial failed

    verdict = record.verdict
    if not verdict.valid or is_success(verdict.reward):
        return None
    info = verdict.reward_info
    comps = info.components if info is not None else {}
    basis = list(info.reward_basis) if info is not None else [str(b) for b in task.reward_basis]
    failing = [c for c in basis if _failed(comps.get(c))]
    termination = verdict.termination
    traj = record.trajectory
    messages = traj.messages
    evidence: dict[str, list[str]] = {}
    found: set[str] = set()

    # every call of the conversation (for gold matching, as the judge), and the trial's own ones
    calls_by_name: dict[str, list[dict]] = {}
    own: list[tuple[str, str, dict, str]] = []  # (requestor, name, arguments, call id)
    errored: set[str] = set()
    for idx, m in enumerate(messages):
        if m.role == "tool":
            if m.error and m.tool_call_id is not None:
                errored.add(m.tool_call_id)
            continue
        if not m.tool_calls or m.role not in ("assistant", "user"):
            continue
        for c in m.tool_calls:
            if c.arguments is None:
                continue
            calls_by_name.setdefault(c.name, []).append(c.arguments)
            if idx >= traj.history_len:
                own.append((m.role, c.name, c.arguments, c.id))

    if termination in RAN_OUT:
        found.add("ran_out")
        _add(evidence, "ran_out", termination)
    if termination == FORMAT_ERRORS:
        found.add("format_errors")
        n = traj.counters.get("format_errors")
        _add(evidence, "format_errors", termination + (f" ({n} unusable replies)" if n else ""))
    if termination == "context_overflow":
        found.add("context_overflow")
        stop = next((e for e in traj.events if e.kind == "context_overflow"), None)
        _add(evidence, "context_overflow", str(stop.data.get("detail") or termination) if stop else termination)

    # gold actions
    gold = task.gold_actions
    action_counts = _failed(comps.get("ACTION")) and "ACTION" in basis
    writes_total = writes_matched = 0
    unmatched_by_name: dict[str, int] = {}
    never_tried_write = False
    for a in gold:
        write = _is_write(spec, a.requestor, a.name)
        tried = calls_by_name.get(a.name, ())
        matched = any(action_matches(a.arguments, a.compare_args, args) for args in tried)
        if write:
            writes_total += 1
            writes_matched += matched
        if matched:
            continue
        unmatched_by_name[a.name] = unmatched_by_name.get(a.name, 0) + 1
        if not (write or action_counts):
            continue
        if tried:
            found.add("wrong_arguments")
            _add(evidence, "wrong_arguments", a.call_text())
        else:
            found.add("missing_action")
            _add(evidence, "missing_action", a.call_text())
            never_tried_write = never_tried_write or write
    if writes_total >= 2 and 0 < writes_matched < writes_total:
        found.add("partial_compound")
        _add(evidence, "partial_compound", f"{writes_matched} of {writes_total} gold writes done")

    # extra writes: successful state-changing calls of the trial that match no gold action
    budget = dict(unmatched_by_name)  # non-matching calls of a gold tool explained as wrong args
    for requestor, name, args, call_id in own:
        if call_id in errored or not _is_write(spec, requestor, name):
            continue
        if any(a.name == name and action_matches(a.arguments, a.compare_args, args) for a in gold):
            continue
        if budget.get(name, 0) > 0:
            budget[name] -= 1
            continue
        found.add("extra_write")
        _add(evidence, "extra_write", ("user: " if requestor == "user" else "") + _call_text(name, args))

    # the conversation ended before the gold writes
    ended = termination in RAN_OUT or termination in ("context_overflow", FORMAT_ERRORS)
    if never_tried_write and not ended:
        early = termination in _AGENT_OR_BROKEN_END
        if not early and termination == "user_stop":
            last_user = next((m for m in reversed(messages) if m.role == "user"), None)
            text = last_user.text if last_user is not None else ""
            early = any(tok in text for tok in _USER_EARLY_TOKENS)
        if early:
            found.add("early_stop")
            _add(evidence, "early_stop", termination)

    # state right, but something not said / not behaved
    state_ok = not _failed(comps.get("DB")) and not _failed(comps.get("ENV_ASSERTION"))
    if info is not None and state_ok and "COMMUNICATE" in basis and _failed(comps.get("COMMUNICATE")):
        found.add("communication_miss")
        for chk in details_of(info).communicate_checks:
            if not chk.met:
                _add(evidence, "communication_miss", chk.text)
    if info is not None and "NL_ASSERTION" in basis and _failed(comps.get("NL_ASSERTION")):
        found.add("judged_behaviour")
        for chk in details_of(info).nl_assertions:
            if not chk.met:
                _add(evidence, "judged_behaviour", chk.text)

    classes = [c for c in CLASSES if c in found]
    if not classes:
        classes = ["other"]
        _add(evidence, "other", "failing: " + (", ".join(failing) if failing else f"none (termination {termination})"))
    return FailureLabel(primary=classes[0], secondary=classes[1:], classes=classes, components=failing,
                        termination=termination, evidence=evidence)


# ---- counting over τ²'s classes -------------------------------------------------------------


def taxonomy(labels: Iterable[tuple[TrialKey, FailureLabel]], examples: int = 3) -> Taxonomy:
    return generic.taxonomy(labels, examples, classes=CLASSES)


def taxonomy_groups(labels: Iterable[tuple[TrialKey, FailureLabel]], examples: int = 3) -> list[TaxonomyGroup]:
    return generic.taxonomy_groups(labels, examples, classes=CLASSES)
