"""One trial's environment: the agent's and the user's toolkits over their own copy of the state.

Mirrors tau2-bench's ``tau2.environment.environment.Environment``:

- a new environment syncs the two sides once (``DomainSpec.sync``), as tau2's constructor does;
- ``call`` is tau2's ``get_response``: dispatch by requestor ("assistant" -> agent toolkit,
  "user" -> user toolkit), every failure is an ``Error: ...`` result, and after a call that did not
  fail the two sides are synced (``DomainSpec.sync``);
- ``call(..., sync=False)`` is tau2's ``make_tool_call`` (used for gold actions: no sync);
- ``run_function`` is ``run_env_function_call`` (initialization actions, env assertions: any
  method of the toolkit of that side, tool or not; then sync);
- ``set_state(task)`` applies a task's ``initial_state`` as tau2's ``set_state`` does:
  ``initialization_data`` deep-merged into each side's state (dicts merged key by key, anything
  else replaced, then re-normalized as tau2 re-validates its model), ``initialization_actions``
  run in order, then the tool calls of ``message_history`` replayed (tool names neither side has
  are skipped, and so are tools that do not change state; each replayed result is compared with
  the recorded one), then a final sync.

State is plain data (``dict`` parsed from the db file): ``agent_state()`` / ``user_state()``.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from agentrig.errors import DataError

from .data import HOW_TO_SET
from .domain import DomainSpec
from .state import cow_state, fresh_copy, load_db, materialize, shared_db
from .toolkit import Toolkit, ToolOutcome

log = logging.getLogger(__name__)

REQUESTORS = ("assistant", "user")


def field_of(obj: Any, name: str, default: Any = None) -> Any:
    """Read a task field from a pydantic model or from the raw dict of tasks.json."""
    if obj is None:
        return default
    if isinstance(obj, dict):
        return obj.get(name, default)
    return getattr(obj, name, default)


def _plain(obj: Any) -> Any:
    if hasattr(obj, "model_dump"):
        return obj.model_dump()
    return obj


def deep_merge(target: dict, update: dict) -> dict:
    """Merge ``update`` into ``target`` in place like addict's ``Dict.update`` (tau2's
    ``update_pydantic_model_with_dict``): a key whose old and new values are both dicts is merged
    recursively, any other value (lists included) replaces the old one."""
    for key, value in update.items():
        old = target.get(key)
        if isinstance(old, dict) and isinstance(value, dict):
            deep_merge(old, value)
        else:
            target[key] = fresh_copy(value)
    return target


def find_db_file(directory: Path, names: tuple[str, ...], *, what: str, required: bool) -> Path | None:
    for name in names:
        candidate = Path(directory) / name
        if candidate.is_file():
            return candidate
    if required:
        raise DataError(
            f"{directory}: no {what} file (looked for {', '.join(names) or 'nothing'}).\n"
            f"  fix: use a tau2-bench data root holding domains/<name>/: {HOW_TO_SET}"
        )
    return None


class EnvFunctionError(DataError):
    """A task names an environment function that cannot be run on this domain."""


class Environment:
    def __init__(self, spec: DomainSpec, db: dict, user_db: dict | None = None):
        self.spec = spec
        self.agent: Toolkit = spec.agent_toolkit(db)
        self.user: Toolkit | None = None
        if spec.user_toolkit is not None:
            if user_db is None and spec.default_user_db is not None:
                user_db = spec.default_user_db()
            self.user = spec.user_toolkit(user_db)
        # problems met while applying a task's initial state (strict=False keeps going)
        self.init_problems: list[str] = []
        self.sync()  # tau2's Environment syncs the sides when it is built

    # ---- construction --------------------------------------------------------------------------

    @staticmethod
    def db_paths(spec: DomainSpec, domain_dir: Path | None = None) -> tuple[Path, Path | None]:
        """The agent-side and user-side db files of a domain (user side None when it has none)."""
        directory = spec.builtin_dir or domain_dir
        if directory is None:
            raise DataError(
                f"domain {spec.name!r}: no data directory given (pass the data root's domains/{spec.name})"
            )
        db_path = find_db_file(directory, spec.db_files, what="db", required=True)
        user_path = None
        if spec.user_toolkit is not None and spec.user_db_files:
            user_path = find_db_file(
                directory, spec.user_db_files, what="user db", required=spec.default_user_db is None
            )
        return db_path, user_path

    @classmethod
    def fresh(cls, spec: DomainSpec, domain_dir: Path | None = None, *,
              copy_on_write: bool = False) -> "Environment":
        """A new environment over fresh copies of the domain's db files (parsed once per process).

        ``copy_on_write``: for a domain with no user side, the agent's state is a copy-on-write
        view of the shared pristine state (``state.CowTable``): a trial copies only the records
        it reads by key. Used by the episode; the gold replay and the judge's replay copy."""
        db_path, user_path = cls.db_paths(spec, domain_dir)
        if copy_on_write and spec.user_toolkit is None and spec.sync is None:
            return cls(spec, cow_state(shared_db(db_path, spec.normalize_db)), None)
        db = load_db(db_path, spec.normalize_db)
        user_db = load_db(user_path, spec.normalize_user_db) if user_path is not None else None
        return cls(spec, db, user_db)

    # ---- tools ---------------------------------------------------------------------------------

    def _toolkit(self, side: str) -> Toolkit | None:
        if side == "assistant":
            return self.agent
        if side == "user":
            return self.user
        raise ValueError(f"Invalid environment type: {side}")

    def has_tool(self, name: str) -> bool:
        return self.agent.has_tool(name) or (self.user is not None and self.user.has_tool(name))

    def is_mutating(self, name: str) -> bool:
        """tau2's ``is_mutating_tool``: the agent side's flag first, then the user side's; a name
        neither side has counts as mutating."""
        for toolkit in (self.agent, self.user):
            if toolkit is not None and toolkit.has_tool(name):
                return toolkit.is_write(name)
        return True

    def sync(self) -> None:
        if self.spec.sync is not None and self.user is not None:
            self.spec.sync(self.agent, self.user)

    def call(self, requestor: str, name: str, arguments: dict | None, *, sync: bool = True) -> ToolOutcome:
        """One tool call by the agent ("assistant") or the user; never raises."""
        if requestor == "user":
            if self.user is None:
                return ToolOutcome("Error: User tools not available", True)
            outcome = self.user.call(name, arguments)
        elif requestor == "assistant":
            outcome = self.agent.call(name, arguments)
        else:
            return ToolOutcome(f"Error: Invalid requestor: {requestor}", True)
        if sync and not outcome.error:
            try:
                self.sync()
            except Exception as exc:  # tau2 turns a failing sync into the call's error, too
                return ToolOutcome(f"Error: {exc}", True)
        return outcome

    def run_function(self, env_type: str, func_name: str, arguments: dict | None = None) -> Any:
        """Run any method of one side's toolkit (initialization actions, assertions), then sync.

        Raises ``EnvFunctionError`` when the side or the function does not exist, and whatever
        the function raises otherwise (tau2 lets both through as well)."""
        try:
            toolkit = self._toolkit(env_type)
        except ValueError as exc:
            raise EnvFunctionError(f"{exc} (expected 'assistant' or 'user')") from None
        if toolkit is None:
            raise EnvFunctionError(
                f"domain {self.spec.name!r} has no {env_type} tools, so '{func_name}' cannot run on that side"
            )
        func = getattr(toolkit, func_name, None)
        if func is None or func_name.startswith("_") or not callable(func):
            raise EnvFunctionError(f"Function {func_name} not found in {env_type} tools of domain {self.spec.name!r}")
        result = func(**(arguments or {}))
        self.sync()
        return result

    def assertion_outcome(self, assertion: Any) -> tuple[bool, str | None]:
        """(passed, problem): tau2's ``run_env_assertion`` with ``raise_assertion_error=False``.

        A function that fails or returns a non-bool counts as a failed assertion here (tau2
        raises there and the evaluation of the trial stops)."""
        env_type = field_of(assertion, "env_type")
        func_name = field_of(assertion, "func_name")
        expected = field_of(assertion, "assert_value", True)
        try:
            result = self.run_function(env_type, func_name, field_of(assertion, "arguments") or {})
        except Exception as exc:
            return False, f"{func_name}: {type(exc).__name__}: {exc}"
        if not isinstance(result, bool):
            return False, f"{func_name} returned {type(result).__name__} instead of bool"
        return result == expected, None

    def check_assertion(self, assertion: Any) -> bool:
        return self.assertion_outcome(assertion)[0]

    # ---- state ---------------------------------------------------------------------------------

    def agent_state(self, *, copy: bool = False) -> dict:
        """The agent-side state, same structure as the db file (live unless ``copy=True``)."""
        return fresh_copy(self.agent.db) if copy else self.agent.db

    def user_state(self, *, copy: bool = False) -> dict | None:
        if self.user is None:
            return None
        return fresh_copy(self.user.db) if copy else self.user.db

    def _merge_into(self, side: str, data: dict) -> None:
        toolkit = self._toolkit(side)
        normalize = self.spec.normalize_db if side == "assistant" else self.spec.normalize_user_db
        if toolkit.db is None:
            toolkit.db = {}
        # the merge and the re-normalization walk the whole state: give it its own records first
        merged = deep_merge(materialize(toolkit.db), _plain(data))
        if normalize is not None:
            merged = normalize(merged)
        toolkit.db = merged

    def set_state(self, task: Any, *, strict: bool = False) -> None:
        """Apply ``task.initial_state``. A problem (an action that fails, a replayed result that
        differs from the recorded one) raises ``DataError`` when ``strict``, else it is logged and
        kept in ``init_problems`` and the rest is applied (tau2 stops with an exception)."""
        task_id = field_of(task, "id", "?")
        initial = field_of(task, "initial_state")
        if initial is None:
            return

        def problem(text: str) -> None:
            text = f"task {task_id}: initial_state: {text}"
            if strict:
                raise DataError(text)
            log.info(text)
            self.init_problems.append(text)

        data = field_of(initial, "initialization_data")
        if data is not None:
            agent_data = field_of(data, "agent_data")
            user_data = field_of(data, "user_data")
            if agent_data is not None:
                self._merge_into("assistant", agent_data)
            if user_data is not None:
                if self.user is None:
                    problem(f"initialization_data.user_data given, but domain {self.spec.name!r} has no user side")
                else:
                    self._merge_into("user", user_data)

        for i, action in enumerate(field_of(initial, "initialization_actions") or []):
            func_name = field_of(action, "func_name")
            try:
                self.run_function(field_of(action, "env_type"), func_name, field_of(action, "arguments") or {})
            except Exception as exc:
                problem(f"initialization_actions[{i}] {func_name}: {type(exc).__name__}: {exc}")

        try:
            pairs = tool_calls_of_history(field_of(initial, "message_history") or [])
        except ValueError as exc:
            problem(f"message_history: {exc}")
            pairs = []
        for call, recorded in pairs:
            name = field_of(call, "name")
            if not self.has_tool(name) or not self.is_mutating(name):
                continue
            outcome = self.call(field_of(call, "requestor") or "assistant", name, field_of(call, "arguments") or {})
            if _content(outcome.text) != _content(field_of(recorded, "content")):
                problem(
                    f"message_history: replayed {name} returned {outcome.text!r}, "
                    f"recorded {field_of(recorded, 'content')!r}"
                )
        self.sync()


def _content(text: Any) -> Any:
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text


def tool_calls_of_history(messages: list) -> list[tuple[Any, Any]]:
    """Pair every tool call of an assistant/user message with the tool message that follows it
    (tau2's ``get_actions_from_messages``); a malformed history is a ValueError."""
    pairs: list[tuple[Any, Any]] = []
    i = 0
    n = len(messages)
    while i < n:
        message = messages[i]
        i += 1
        role = field_of(message, "role")
        if role == "tool":
            raise ValueError("a tool message that does not follow a tool call")
        calls = field_of(message, "tool_calls") if role in REQUESTORS else None
        for call in calls or []:
            if i >= n:
                raise ValueError(f"tool call {field_of(call, 'id')!r} has no tool message after it")
            reply = messages[i]
            i += 1
            if field_of(reply, "role") != "tool":
                raise ValueError(f"tool call {field_of(call, 'id')!r} is followed by a {field_of(reply, 'role')} message")
            if field_of(call, "id") != field_of(reply, "id"):
                raise ValueError(f"tool call id {field_of(call, 'id')!r} does not match tool message id {field_of(reply, 'id')!r}")
            pairs.append((call, reply))
    return pairs
