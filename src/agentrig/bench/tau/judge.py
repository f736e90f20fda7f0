"""The judge of a trial: every reward component of τ²-bench, as its evaluators (v1.0.x) compute
them, and the reward as the product over the task's ``reward_basis``.

- **Termination first.** A trial that did not end in a scored way (``SCORED_TERMINATIONS``)
  gets reward 0.0, as tau2 scores a premature end. The state components (and the cheap ACTION /
  COMMUNICATE checks) are still computed for analysis; the NL judge is not called.
- **No evaluation criteria**: reward 1.0 whatever happened, as in tau2.
- **DB, ENV_ASSERTION**: ``replay.judge_state`` on the tool calls made during the trial (the
  task's own ``message_history`` is already part of the initial state).
- **ACTION**: each gold action against every tool call of the conversation, the task's history
  included and by either side (tau2 reads ``simulation.messages``, which starts with that
  history), with tau2's ``Action.compare_with_tool_call``: same name, then the arguments named in
  ``compare_args`` compared; when ``compare_args`` is null the keys compared are the *call's*
  own keys (so a call that passes fewer arguments than the gold one can still match, and an
  empty list matches any call of that name). 1.0 when every gold action is matched, 1.0 when
  there are none.
- **COMMUNICATE**: each ``communicate_info`` string, lower-cased, must be a substring of some
  assistant message's text lower-cased with its commas removed (commas are removed from the
  message only, as tau2 does). 1.0 when all are found, 1.0 when there are none.
- **NL_ASSERTION**: see ``judge_nl``. ``nl="auto"`` calls the judge model when one is configured
  (else the component is None, and a ConfigError when the basis needs it); ``nl="basis"`` only when NL_ASSERTION is in the task's reward basis (τ²-bench's own rule: no
  judge cost for the other tasks); ``nl="never"`` never
  calls (a None component is then left out of the product, noted). 1.0 without a call when the
  task has no nl_assertions.

A component with nothing to check keeps τ²-bench's 1.0 (the reward and the tau2 export use it)
and is named in ``RewardInfo.unchecked``: the figures count it in no rate and show "—".

``RewardInfo.notes`` keys: a component name (why it has that value when there was nothing to
check, or why it is None), ``reward`` (how the reward was formed when it is not the plain
product), ``termination`` (the unscored termination), ``criteria`` (``none``: the task has no
evaluation criteria), ``state`` (problems met while setting up the initial state or the gold).
"""

from __future__ import annotations

from typing import Any

from agentrig.errors import ConfigError
from agentrig.types import Message, RewardInfo

from .verdict import (
    COMPONENTS, SCORED_TERMINATIONS, ActionCheck, AssertionCheck, Tau2Details, TextCheck, details_of, reward_info,
)

from .environment import field_of
from .judge_nl import JudgeFailed, judge_nl
from .replay import judge_state

__all__ = ["JudgeFailed", "judge_trial", "tau2_reward_info", "action_matches", "check_actions",
           "check_communicate", "trial_tool_calls", "judge_available", "needs_nl_judge"]

NL_MODES = ("auto", "basis", "never")
DEFAULT_BASIS = ("DB", "COMMUNICATE")  # tau2's default reward_basis (the original τ-bench's)
_SIDES = ("assistant", "user")


# ---- the pieces -----------------------------------------------------------------------------


def trial_tool_calls(messages: list[Message], start: int = 0) -> list[tuple[str, str, dict]]:
    """(requestor, name, arguments) of the tool calls in ``messages[start:]``, in order; calls
    whose arguments were not a JSON object are left out (they never reached the environment)."""
    calls = []
    for m in messages[start:]:
        if m.tool_calls and m.role in _SIDES:
            for c in m.tool_calls:
                if c.arguments is not None:
                    calls.append((m.role, c.name, c.arguments))
    return calls


def action_matches(gold_args: dict, compare_args: list[str] | None, call_args: dict) -> bool:
    """tau2's ``Action.compare_with_tool_call`` on arguments (the names are already equal)."""
    if compare_args is None:  # the call's own keys: each must be in the gold with the same value
        return all(k in gold_args and gold_args[k] == v for k, v in call_args.items())
    for k in compare_args:
        in_call, in_gold = k in call_args, k in gold_args
        if in_call != in_gold or (in_call and call_args[k] != gold_args[k]):
            return False
    return True


def _write_flag(spec: Any, requestor: str, name: str) -> bool | None:
    toolkit = spec.user_toolkit if requestor == "user" else spec.agent_toolkit
    if toolkit is None or not toolkit.has_tool(name):
        return None
    return toolkit.is_write(name)


def check_actions(spec: Any, gold_actions: list, messages: list[Message]) -> list[ActionCheck]:
    by_name: dict[str, list[dict]] = {}
    for _, name, arguments in trial_tool_calls(messages):
        by_name.setdefault(name, []).append(arguments)
    checks = []
    for action in gold_actions:
        name = field_of(action, "name")
        gold_args = field_of(action, "arguments") or {}
        compare = field_of(action, "compare_args")
        requestor = field_of(action, "requestor") or "assistant"
        matched = any(action_matches(gold_args, compare, args) for args in by_name.get(name, ()))
        checks.append(ActionCheck(
            action_id=field_of(action, "action_id"), requestor=requestor, name=name, arguments=gold_args,
            compare_args=compare, write=_write_flag(spec, requestor, name), matched=matched,
        ))
    return checks


def check_communicate(infos: list[str], messages: list[Message]) -> list[TextCheck]:
    said = [(m.turn, m.content.lower().replace(",", "")) for m in messages
            if m.role == "assistant" and m.content and m.content.strip()]
    checks = []
    for info in infos:
        needle = str(info).lower()
        turn = next((t for t, text in said if needle in text), None)
        checks.append(TextCheck(
            text=info, met=turn is not None,
            justification=(f"found in the agent's message at turn {turn}" if turn is not None
                           else "not found in any of the agent's messages"),
        ))
    return checks


def judge_available(ctx: Any) -> bool:
    """A judge model is configured for this trial (``[roles.judge]`` or the [channel] model)."""
    return ctx.channel is not None and bool(ctx.channel.role("judge").model)


def needs_nl_judge(task: Any) -> bool:
    """The task's reward cannot be computed without the NL judge: NL_ASSERTION is in its basis
    and it has nl_assertions (a runner can check this before it starts)."""
    criteria = field_of(task, "evaluation_criteria")
    if criteria is None or not field_of(criteria, "nl_assertions"):
        return False
    basis = field_of(criteria, "reward_basis")
    return "NL_ASSERTION" in [str(b) for b in (DEFAULT_BASIS if basis is None else basis)]


# ---- the judge ------------------------------------------------------------------------------


async def judge_trial(ctx: Any, termination: str, *, nl: str = "auto") -> RewardInfo:
    """Judge one finished trial: every component of τ²-bench's reward, and the reward."""
    if nl not in NL_MODES:
        raise ConfigError(f"nl judge mode {nl!r} is unknown; use one of {', '.join(NL_MODES)}")
    task, spec = ctx.task, ctx.bench.spec
    traj = ctx.trajectory
    messages = traj.messages
    criteria = field_of(task, "evaluation_criteria")
    scored = termination in SCORED_TERMINATIONS
    notes: dict[str, str] = {}
    comps: dict[str, float | None] = {}
    unchecked: list[str] = []  # nothing to check: τ²-bench's 1.0, but not computed (RewardInfo)

    # DB and ENV_ASSERTION
    state = judge_state(spec, ctx.bench.domain_dir, task, trial_tool_calls(messages, traj.history_len),
                        end_env=ctx.bench.env)
    comps["DB"], comps["ENV_ASSERTION"] = state.db_reward, state.env_reward
    if not state.evaluated:
        why = "the task has no evaluation criteria" if criteria is None else "the task has no gold actions nor env assertions"
        notes["DB"] = notes["ENV_ASSERTION"] = f"{why}: the state is not judged (1.0)"
        unchecked += ["DB", "ENV_ASSERTION"]
    elif not (field_of(criteria, "env_assertions") or []):
        notes["ENV_ASSERTION"] = "no env_assertions to check (1.0)"
        unchecked.append("ENV_ASSERTION")
    problems = list(state.init_problems) + [f"gold action {a} failed" for a in state.gold_write_errors]
    if problems:
        notes["state"] = "; ".join(problems)[:2000]
    assertions = []
    for spec_a, result in zip(field_of(criteria, "env_assertions") or [], state.assertion_details):
        assertions.append(AssertionCheck(
            env_type=result.env_type, func_name=result.func_name, arguments=field_of(spec_a, "arguments") or {},
            assert_value=field_of(spec_a, "assert_value", True), message=field_of(spec_a, "message"),
            met=result.passed, problem=result.problem,
        ))

    # ACTION
    gold_actions = field_of(criteria, "actions") or []
    action_checks = check_actions(spec, gold_actions, messages) if gold_actions else []
    comps["ACTION"] = 1.0 if all(c.matched for c in action_checks) else 0.0
    if not gold_actions:
        notes["ACTION"] = "no gold actions to match (1.0)"
        unchecked.append("ACTION")

    # COMMUNICATE
    infos = field_of(criteria, "communicate_info") or []
    comm_checks = check_communicate(infos, messages) if infos else []
    comps["COMMUNICATE"] = 1.0 if all(c.met for c in comm_checks) else 0.0
    if not infos:
        notes["COMMUNICATE"] = "no communicate_info to find (1.0)"
        unchecked.append("COMMUNICATE")

    # NL_ASSERTION
    basis = []
    if criteria is not None:
        raw_basis = field_of(criteria, "reward_basis")
        basis = [str(b) for b in (DEFAULT_BASIS if raw_basis is None else raw_basis)]
    nl_checks: list[TextCheck] = []
    nl_items = field_of(criteria, "nl_assertions") or []
    if not nl_items:
        comps["NL_ASSERTION"] = 1.0
        notes["NL_ASSERTION"] = "no nl_assertions to judge (1.0)"
        unchecked.append("NL_ASSERTION")
    elif not scored:
        comps["NL_ASSERTION"] = None
        notes["NL_ASSERTION"] = "not judged: the trial ended without being scored"
    elif nl == "never":
        comps["NL_ASSERTION"] = None
        notes["NL_ASSERTION"] = "not judged (nl='never')"
    elif nl == "basis" and "NL_ASSERTION" not in basis:
        comps["NL_ASSERTION"] = None
        notes["NL_ASSERTION"] = "not judged: NL_ASSERTION is not in this task's reward_basis (nl='basis')"
    elif judge_available(ctx):
        try:
            nl_checks = await judge_nl(ctx, nl_items)
            comps["NL_ASSERTION"] = 1.0 if all(c.met for c in nl_checks) else 0.0
        except JudgeFailed as exc:
            if "NL_ASSERTION" in basis:
                raise  # the reward depends on it: the trial is invalid
            comps["NL_ASSERTION"] = None  # outside the basis: the reward does not depend on it
            notes["NL_ASSERTION"] = f"not judged: the judge's answers were unusable ({exc})"[:500]
    elif "NL_ASSERTION" in basis:
        raise ConfigError(
            f"task {field_of(task, 'id')} ({spec.name}) has NL_ASSERTION in its reward_basis, which needs a "
            "judge model: set `[roles.judge] model` (or a [channel] model) in the experiment file"
        )
    else:
        comps["NL_ASSERTION"] = None
        notes["NL_ASSERTION"] = "not judged: no [roles.judge] model is set"

    # the reward
    if not scored:
        reward = 0.0
        notes["termination"] = termination
        notes["reward"] = f"the trial ended by {termination}, which τ²-bench scores 0 (premature termination)"
    elif criteria is None:
        reward = 1.0
        notes["criteria"] = "none"
        notes["reward"] = "the task has no evaluation criteria: τ²-bench gives 1.0"
    else:
        reward, skipped = 1.0, []
        for name in basis:
            value = comps.get(name)
            if value is None:
                skipped.append(name)
                continue
            reward *= value
        if skipped:
            notes["reward"] = f"{', '.join(skipped)} not computed, left out of the product"
    return reward_info(
        reward=reward, reward_basis=basis, components={c: comps.get(c) for c in COMPONENTS},
        notes=notes, unchecked=unchecked,
        details=Tau2Details(db_match=state.db_match, agent_db_match=state.agent_db_match,
                            user_db_match=state.user_db_match, env_assertions=assertions,
                            action_checks=action_checks, communicate_checks=comm_checks, nl_assertions=nl_checks),
    )


# ---- tau2-bench's results.json reward_info ---------------------------------------------------

# tool types tau2 gives tools that are neither read nor write (its @is_tool(ToolType....))
_TOOL_TYPES = {"think": "think", "calculate": "generic", "transfer_to_human_agents": "generic"}
_BREAKDOWN_ORDER = ("DB", "ENV_ASSERTION", "ACTION", "NL_ASSERTION", "COMMUNICATE")


def _tool_type(check: ActionCheck) -> str | None:
    if check.write is None:
        return None
    if check.write:
        return "write"
    return _TOOL_TYPES.get(check.name, "read")


def _note(info: RewardInfo, key: str, when: bool = True) -> dict | None:
    text = info.notes.get(key)
    return {"note": text} if text and when else None


def tau2_reward_info(info: RewardInfo, task: Any = None) -> dict:
    """``info`` as the ``reward_info`` object of a tau2-bench results.json (field names and
    nulls as tau2 writes them). ``task`` (optional) supplies each gold action's ``info`` text."""
    empty = dict(db_check=None, env_assertions=None, action_checks=None, nl_assertions=None,
                 communicate_checks=None, reward_basis=None, reward_breakdown=None)
    if "termination" in info.notes or "criteria" in info.notes:
        return {"reward": info.reward, **empty, "info": {"note": info.notes.get("reward", "")}}
    d = details_of(info)
    gold = list(field_of(field_of(task, "evaluation_criteria"), "actions") or []) if task is not None else []
    actions = []
    for i, c in enumerate(d.action_checks):
        extra = field_of(gold[i], "info") if i < len(gold) and field_of(gold[i], "name") == c.name else None
        actions.append({
            "action": {"action_id": c.action_id, "requestor": c.requestor, "name": c.name,
                       "arguments": c.arguments, "info": extra, "compare_args": c.compare_args},
            "action_match": c.matched, "action_reward": 1.0 if c.matched else 0.0, "tool_type": _tool_type(c),
        })
    basis = set(info.reward_basis)
    nl_judged = info.components.get("NL_ASSERTION") is not None
    if d.nl_assertions:
        nl = [{"nl_assertion": c.text, "met": c.met, "justification": c.justification or ""}
              for c in d.nl_assertions]
    else:
        nl = [] if "NL_ASSERTION" in basis and nl_judged else None
    db_reward = info.components.get("DB")
    return {
        "reward": info.reward,
        "db_check": {"db_match": bool(d.db_match), "db_reward": 1.0 if db_reward is None else db_reward},
        "env_assertions": [
            {"env_assertion": {"env_type": a.env_type, "func_name": a.func_name, "arguments": a.arguments,
                               "assert_value": a.assert_value, "message": a.message},
             "met": a.met, "reward": 1.0 if a.met else 0.0}
            for a in d.env_assertions
        ],
        "action_checks": actions or None,
        "nl_assertions": nl,
        "communicate_checks": [
            {"info": c.text, "met": c.met, "justification": c.justification or ""} for c in d.communicate_checks
        ] or None,
        "reward_basis": list(info.reward_basis),
        "reward_breakdown": {c: info.components[c] for c in _BREAKDOWN_ORDER
                             if c in basis and info.components.get(c) is not None},
        "info": {
            "env": _note(info, "DB"),
            "nl": _note(info, "NL_ASSERTION", "NL_ASSERTION" in basis),
            "communicate": _note(info, "COMMUNICATE"),
            "action": _note(info, "ACTION"),
        },
    }
