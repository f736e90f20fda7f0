"""Gold replay and judging of state, the way tau2-bench's ``EnvironmentEvaluator`` does it.

- **gold state**: a fresh environment, the task's initial state, then every gold action in order
  through ``make_tool_call`` (no sync between them; an action that fails is logged and skipped).
- **predicted state**: a fresh environment, the initial state, then the trajectory's tool calls
  replayed: only calls of tools that change state (``@tool(write=True)``, tau2's
  ``mutates_state``), errored ones included (they fail again the same way, after the same partial
  changes); names neither side has are skipped. Each replayed call syncs the sides.
- **DB component**: 1.0 only when the agent-side states are equal AND the user-side states are
  equal (a side a domain does not have counts as equal). Plain ``==`` on the dicts: the same
  verdict as tau2's comparison of sorted-key JSON hashes of its model dumps, because every field
  has one type there.
- **ENV_ASSERTION component**: the product over the task's env assertions, run on the predicted
  state.
- a task without evaluation criteria, or with neither actions nor env assertions, is not judged
  on state (both components 1.0), as in tau2.

The gold state of a task is computed once per process and kept as the records it changed
(``state.record_diff``), keyed by domain, data directory, task and db file version.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from pydantic import BaseModel, Field, PrivateAttr

from .domain import DomainSpec
from .environment import Environment, field_of
from .state import StateDiff, apply_diff, equal_to_diff, fresh_copy, gc_paused, record_diff, shared_db

log = logging.getLogger(__name__)


class ActionResult(BaseModel):
    action_id: str | None = None
    name: str
    requestor: str
    error: bool
    text: str


class AssertionResult(BaseModel):
    env_type: str
    func_name: str
    passed: bool
    problem: str | None = None  # the function failed or did not return a bool


class StateJudgement(BaseModel):
    db_match: bool
    agent_db_match: bool
    user_db_match: bool
    env_assertions: list[bool] = Field(default_factory=list)
    assertion_details: list[AssertionResult] = Field(default_factory=list)
    db_reward: float
    env_reward: float
    # False when the task gives nothing to judge state by (no criteria / no actions nor assertions)
    evaluated: bool = True
    # ids of state-changing gold actions that failed: newer tau2-bench then refuses to certify a
    # DB match (db_check=None); v1.0.x, whose data this is, scores it like any other
    gold_write_errors: list[str] = Field(default_factory=list)
    init_problems: list[str] = Field(default_factory=list)


class GoldReplay(BaseModel):
    domain: str
    task_id: str
    actions: list[ActionResult]
    # the env assertions as tau2's evaluator runs them on the gold trajectory (predicted state)
    env_assertions: list[bool]
    judgement: StateJudgement
    init_problems: list[str] = Field(default_factory=list)
    _gold: Any = PrivateAttr(default=None)

    @property
    def agent_state(self) -> dict:
        """The final gold state of the agent side (a fresh copy, same structure as the db file)."""
        return apply_diff(self._gold.agent_base, self._gold.agent_diff)

    @property
    def user_state(self) -> dict | None:
        """The final gold state of the user side (None when the domain has none)."""
        return fresh_copy(self._gold.user_state)

    @property
    def ok(self) -> bool:
        """No gold action failed and every env assertion holds."""
        return not any(a.error for a in self.actions) and all(self.env_assertions)


@dataclass(frozen=True)
class GoldState:
    """The gold end state of a task: the agent side as a diff from the pristine db (plus the
    pristine db it is relative to), the user side in full (small), the failed gold writes."""

    agent_base: dict
    agent_diff: StateDiff
    user_state: dict | None
    write_errors: tuple[str, ...]


_gold_lock = threading.Lock()
_gold_cache: dict[tuple, GoldState] = {}


def clear_gold_cache() -> None:
    with _gold_lock:
        _gold_cache.clear()


def _plain(obj: Any) -> Any:
    return obj.model_dump(mode="json") if hasattr(obj, "model_dump") else obj


def _file_stamp(path: Path | None) -> tuple | None:
    if path is None:
        return None
    st = os.stat(path)
    return (str(Path(path).resolve()), st.st_mtime_ns, st.st_size)


def _gold_key(spec: DomainSpec, domain_dir: Path | None, task: Any) -> tuple:
    db_path, user_path = Environment.db_paths(spec, domain_dir)
    criteria = field_of(task, "evaluation_criteria")
    fingerprint = json.dumps(
        [_plain(field_of(task, "initial_state")), [_plain(a) for a in field_of(criteria, "actions") or []]],
        sort_keys=True,
        default=str,
    )
    return (spec.name, _file_stamp(db_path), _file_stamp(user_path), field_of(task, "id"), fingerprint)


def _actions(task: Any) -> list:
    return list(field_of(field_of(task, "evaluation_criteria"), "actions") or [])


def _play_gold(spec: DomainSpec, domain_dir: Path | None, task: Any) -> tuple[Environment, list[ActionResult], list[str]]:
    env = Environment.fresh(spec, domain_dir, copy_on_write=True)
    env.set_state(task)
    results: list[ActionResult] = []
    write_errors: list[str] = []
    for action in _actions(task):
        name = field_of(action, "name")
        requestor = field_of(action, "requestor") or "assistant"
        mutating = env.is_mutating(name)
        outcome = env.call(requestor, name, field_of(action, "arguments") or {}, sync=False)
        results.append(
            ActionResult(
                action_id=field_of(action, "action_id"), name=name, requestor=requestor,
                error=outcome.error, text=outcome.text,
            )
        )
        if outcome.error:
            log.info("task %s: gold action %s (%s) failed: %s", field_of(task, "id"),
                     field_of(action, "action_id"), name, outcome.text)
            if mutating:
                write_errors.append(str(field_of(action, "action_id")))
    return env, results, write_errors


def _remember_gold(key: tuple, spec: DomainSpec, domain_dir: Path | None, env: Environment,
                   write_errors: list[str]) -> GoldState:
    db_path, _ = Environment.db_paths(spec, domain_dir)
    base = shared_db(db_path, spec.normalize_db)
    gold = GoldState(
        agent_base=base,
        agent_diff=record_diff(base, env.agent_state()),
        user_state=fresh_copy(env.user_state()),
        write_errors=tuple(write_errors),
    )
    with _gold_lock:
        _gold_cache[key] = gold
    return gold


def gold_state(spec: DomainSpec, domain_dir: Path | None, task: Any) -> GoldState:
    key = _gold_key(spec, domain_dir, task)
    with _gold_lock:
        gold = _gold_cache.get(key)
    if gold is None:
        with gc_paused():
            env, _, write_errors = _play_gold(spec, domain_dir, task)
            gold = _remember_gold(key, spec, domain_dir, env, write_errors)
            del env
    return gold


def _unpack(call: Any) -> tuple[str, str, dict]:
    if isinstance(call, (tuple, list)):
        requestor, name, arguments = call
    else:
        requestor = field_of(call, "requestor") or "assistant"
        name = field_of(call, "name")
        arguments = field_of(call, "arguments")
    return requestor, name, arguments or {}


def gold_calls(task: Any) -> list[tuple[str, str, dict]]:
    """The gold actions of a task as (requestor, name, arguments) tool calls."""
    return [
        (field_of(a, "requestor") or "assistant", field_of(a, "name"), field_of(a, "arguments") or {})
        for a in _actions(task)
    ]


def judge_state(
    spec: DomainSpec,
    domain_dir: Path | None,
    task: Any,
    tool_calls: Iterable[Any],
    *,
    end_env: Environment | None = None,
) -> StateJudgement:
    """Judge the end state of a trajectory: DB and ENV_ASSERTION components, as tau2 does.

    ``end_env``: the trial's own environment at its end. For a domain without a sync rule it IS
    the state tau2 rebuilds (the same initial state, then the same calls in the same order; the
    calls tau2 leaves out of its replay are the ones that do not change state), so it is judged
    directly instead of copying and replaying the db again (half of a trial's CPU on airline and
    retail). Domains with a sync rule (telecom) are always replayed, as tau2 does.

    ``tool_calls`` are the calls made during the trial, in order — ``(requestor, name,
    arguments)`` tuples or objects with those attributes — NOT including the task's own
    ``message_history`` (the initial state replays that)."""
    if end_env is not None and spec.sync is None:
        return _judge_state(spec, domain_dir, task, tool_calls, end_env)
    with gc_paused():  # the predicted state is a big temporary
        return _judge_state(spec, domain_dir, task, tool_calls)


def _judge_state(spec: DomainSpec, domain_dir: Path | None, task: Any, tool_calls: Iterable[Any],
                 end_env: Environment | None = None) -> StateJudgement:
    criteria = field_of(task, "evaluation_criteria")
    assertions = field_of(criteria, "env_assertions")
    if criteria is None or (field_of(criteria, "actions") is None and assertions is None):
        return StateJudgement(
            db_match=True, agent_db_match=True, user_db_match=True, db_reward=1.0, env_reward=1.0,
            evaluated=False,
        )
    gold = gold_state(spec, domain_dir, task)
    if end_env is not None:
        env = end_env
    else:
        env = Environment.fresh(spec, domain_dir)
        env.set_state(task)
        for call in tool_calls:
            requestor, name, arguments = _unpack(call)
            if not env.has_tool(name) or not env.is_mutating(name):
                continue
            env.call(requestor, name, arguments)
    agent_match = equal_to_diff(env.agent_state(), gold.agent_base, gold.agent_diff)
    user_match = env.user_state() == gold.user_state
    details = []
    for a in assertions or []:
        passed, problem = env.assertion_outcome(a)
        details.append(AssertionResult(
            env_type=str(field_of(a, "env_type")), func_name=str(field_of(a, "func_name")),
            passed=passed, problem=problem,
        ))
    env_reward = 1.0
    for d in details:
        env_reward *= 1.0 if d.passed else 0.0
    db_match = agent_match and user_match
    return StateJudgement(
        db_match=db_match,
        agent_db_match=agent_match,
        user_db_match=user_match,
        env_assertions=[d.passed for d in details],
        assertion_details=details,
        db_reward=1.0 if db_match else 0.0,
        env_reward=env_reward,
        gold_write_errors=list(gold.write_errors),
        init_problems=list(env.init_problems),
    )


def replay_gold(spec: DomainSpec, domain_dir: Path | None, task: Any) -> GoldReplay:
    """Play a task's gold actions on a fresh environment (as tau2 builds its gold state) and judge
    the gold trajectory (as tau2's evaluator would judge an agent that made exactly those calls)."""
    with gc_paused():
        return _replay_gold(spec, domain_dir, task)


def _replay_gold(spec: DomainSpec, domain_dir: Path | None, task: Any) -> GoldReplay:
    key = _gold_key(spec, domain_dir, task)
    env, results, write_errors = _play_gold(spec, domain_dir, task)
    gold = _remember_gold(key, spec, domain_dir, env, write_errors)
    init_problems = list(env.init_problems)
    del env  # freed here, while the collector is paused: nothing big is left for it to scan
    judgement = judge_state(spec, domain_dir, task, gold_calls(task))
    replay = GoldReplay(
        domain=spec.name,
        task_id=str(field_of(task, "id")),
        actions=results,
        env_assertions=judgement.env_assertions,
        judgement=judgement,
        init_problems=init_problems,
    )
    replay._gold = gold
    return replay
