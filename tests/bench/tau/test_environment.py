"""Environment: dispatch by requestor, sync, run_function / assertions, set_state (real data)."""

from __future__ import annotations

import json

import pytest

from agentrig.bench.tau.data import load_tasks
from agentrig.bench.tau.domain import DomainSpec
from agentrig.bench.tau.domains import available_domains, get_domain
from agentrig.bench.tau.environment import EnvFunctionError, Environment, deep_merge, tool_calls_of_history
from agentrig.bench.tau.toolkit import Toolkit, ToolError, tool
from agentrig.errors import ConfigError, DataError

MOCK = get_domain("mock")


# ---- a two-sided domain written for these tests ------------------------------------------------

class Office(Toolkit):
    @tool(write=True)
    def suspend(self, line_id: str) -> dict:
        """Suspend a line.

        Args:
            line_id: The line.
        """
        if line_id not in self.db["lines"]:
            raise ToolError(f"Line {line_id} not found")
        self.db["lines"][line_id]["status"] = "suspended"
        return self.db["lines"][line_id]

    @tool
    def line(self, line_id: str) -> dict:
        """Show a line.

        Args:
            line_id: The line.
        """
        return self.db["lines"][line_id]

    def set_status(self, line_id: str, status: str) -> None:
        self.db["lines"][line_id]["status"] = status

    def assert_status(self, line_id: str, expected: str) -> bool:
        return self.db["lines"][line_id]["status"] == expected

    def not_a_bool(self) -> str:
        return "yes"


class Phone(Toolkit):
    @tool
    def status_bar(self) -> str:
        """Look at the status bar."""
        return "service" if self.db["phone"]["line_active"] else "no service"

    @tool(write=True)
    def reboot(self) -> int:
        """Reboot the phone."""
        self.db["phone"]["reboots"] += 1
        return self.db["phone"]["reboots"]

    def assert_service(self) -> bool:
        return self.db["phone"]["line_active"]


SYNCS: list[str] = []


def _sync(agent: Office, user: Phone) -> None:
    SYNCS.append("sync")
    user.db["phone"]["line_active"] = agent.db["lines"]["L1"]["status"] == "active"


def _two_sided(tmp_path):
    d = tmp_path / "phoneco"
    d.mkdir()
    (d / "db.json").write_text(json.dumps({"lines": {"L1": {"status": "active"}, "L2": {"status": "active"}}}))
    (d / "user_db.json").write_text(json.dumps({"phone": {"line_active": True, "reboots": 0}}))
    spec = DomainSpec(name="phoneco", agent_toolkit=Office, db_files=("db.json",), user_toolkit=Phone,
                      user_db_files=("user_db.json",), sync=_sync)
    SYNCS.clear()
    return spec, d


def test_dispatch_by_requestor_and_sync(tmp_path):
    spec, d = _two_sided(tmp_path)
    env = Environment.fresh(spec, d)
    assert SYNCS == ["sync"]  # built: synced once, as tau2's constructor does
    assert env.call("user", "status_bar", {}).text == "service"
    assert SYNCS == ["sync", "sync"]
    out = env.call("assistant", "suspend", {"line_id": "L1"})
    assert out.result == {"status": "suspended"} and len(SYNCS) == 3
    assert env.user_state()["phone"]["line_active"] is False  # synced after the call
    assert env.call("user", "status_bar", {}).text == "no service"
    # a bare int result is shown the way tau2 shows it: as a JSON string
    assert env.call("user", "reboot", {}).text == '"1"'
    n = len(SYNCS)
    # errors do not sync; neither does a call with sync=False (tau2's make_tool_call)
    assert env.call("assistant", "suspend", {"line_id": "L9"}).text == "Error: Line L9 not found"
    assert env.call("assistant", "status_bar", {}).text == "Error: Tool 'status_bar' not found."
    assert env.call("robot", "status_bar", {}).text.startswith("Error: Invalid requestor")
    env.call("user", "reboot", {}, sync=False)
    assert len(SYNCS) == n
    assert env.is_mutating("suspend") and env.is_mutating("reboot") and not env.is_mutating("line")
    assert env.is_mutating("no_such_tool") and not env.has_tool("no_such_tool")


def test_run_function_and_assertions(tmp_path):
    spec, d = _two_sided(tmp_path)
    env = Environment.fresh(spec, d)
    env.run_function("assistant", "set_status", {"line_id": "L1", "status": "barred"})
    assert env.user_state()["phone"]["line_active"] is False  # run_function syncs, as tau2's does
    a = {"env_type": "assistant", "func_name": "assert_status", "arguments": {"line_id": "L1", "expected": "barred"}}
    assert env.check_assertion(a)
    assert not env.check_assertion({**a, "assert_value": False})
    assert env.check_assertion({"env_type": "user", "func_name": "assert_service", "arguments": {}, "assert_value": False})
    passed, problem = env.assertion_outcome({"env_type": "assistant", "func_name": "not_a_bool", "arguments": {}})
    assert not passed and "instead of bool" in problem
    passed, problem = env.assertion_outcome({"env_type": "assistant", "func_name": "nope", "arguments": {}})
    assert not passed and "not found" in problem
    with pytest.raises(EnvFunctionError, match="Function nope not found"):
        env.run_function("assistant", "nope", {})
    with pytest.raises(EnvFunctionError, match="expected 'assistant' or 'user'"):
        env.run_function("robot", "assert_service", {})


def test_states_are_plain_and_copyable(tmp_path):
    spec, d = _two_sided(tmp_path)
    env = Environment.fresh(spec, d)
    snap = env.agent_state(copy=True)
    env.call("assistant", "suspend", {"line_id": "L2"})
    assert snap["lines"]["L2"]["status"] == "active"
    assert env.agent_state()["lines"]["L2"]["status"] == "suspended"
    assert Environment.fresh(spec, d).agent_state()["lines"]["L2"]["status"] == "active"


def test_missing_db_file_is_a_data_error(tmp_path):
    with pytest.raises(DataError, match="no db file"):
        Environment.fresh(MOCK, tmp_path)


def test_user_side_missing_in_airline(tau2_root):
    env = Environment.fresh(get_domain("airline"), tau2_root / "domains" / "airline")
    assert env.user is None and env.user_state() is None
    assert env.call("user", "get_user_details", {"user_id": "x"}).text == "Error: User tools not available"
    with pytest.raises(EnvFunctionError, match="no user tools"):
        env.run_function("user", "add_notification", {})


def test_mock_has_a_user_side(tau2_root):
    """τ²-bench v1.0.1's mock domain has a user side: the notification inbox of user_db.json."""
    env = Environment.fresh(MOCK, tau2_root / "domains" / "mock")
    assert env.user_state()["notifications"]["notif_1"]["status"] == "unread"
    assert env.call("user", "dismiss_notification", {"notification_id": "notif_1"}).text == "Notification notif_1 dismissed"
    assert env.user_state()["notifications"]["notif_1"]["status"] == "read"
    # the sides are separate: the agent cannot call the user's tools, nor the user the agent's
    assert env.call("assistant", "check_notifications", {}).text == "Error: Tool 'check_notifications' not found."
    assert env.call("user", "get_users", {}).text == "Error: Tool 'get_users' not found."


# ---- set_state on the real mock tasks ----------------------------------------------------------

def _task(tau2_root, task_id):
    return next(t for t in load_tasks(tau2_root, "mock") if t.id == task_id)


def test_initialization_data_is_deep_merged(tau2_root):
    env = Environment.fresh(MOCK, tau2_root / "domains" / "mock")
    env.set_state(_task(tau2_root, "update_task_with_initialization_data"))
    db = env.agent_state()
    assert db["users"]["user_1"] == {"user_id": "user_1", "name": "Test User", "tasks": ["task_1", "task_2"]}
    assert db["tasks"]["task_1"]["title"] == "Test task"
    assert db["tasks"]["task_2"] == {"task_id": "task_2", "title": "Project Review",
                                     "description": "Review Q4 project status", "status": "pending"}
    assert env.init_problems == []


def test_deep_merge_semantics():
    target = {"a": {"x": 1, "y": [1, 2]}, "b": 1}
    update = {"a": {"y": [3], "z": {"k": 1}}, "b": {"n": 2}}
    deep_merge(target, update)
    assert target == {"a": {"x": 1, "y": [3], "z": {"k": 1}}, "b": {"n": 2}}
    update["a"]["z"]["k"] = 99
    assert target["a"]["z"]["k"] == 1  # merged values are copies


def test_initialization_actions_run(tau2_root):
    env = Environment.fresh(MOCK, tau2_root / "domains" / "mock")
    env.set_state(_task(tau2_root, "update_task_with_initialization_actions"))
    assert env.agent_state()["tasks"]["task_2"]["title"] == "Project Review"


def test_message_history_tool_calls_are_replayed(tau2_root):
    task = _task(tau2_root, "update_task_with_message_history")
    env = Environment.fresh(MOCK, tau2_root / "domains" / "mock")
    env.set_state(task, strict=True)  # the replayed result matches the recorded one
    assert env.agent_state()["tasks"]["task_2"]["description"] == "Review Q4 project status"
    assert env.agent_state()["users"]["user_1"]["tasks"] == ["task_1", "task_2"]


def test_message_history_mismatch_and_failures(tau2_root):
    task = _task(tau2_root, "update_task_with_message_history").model_copy(deep=True)
    task.initial_state.message_history[2]["content"] = '{"task_id": "task_9"}'
    env = Environment.fresh(MOCK, tau2_root / "domains" / "mock")
    env.set_state(task)
    assert len(env.init_problems) == 1 and "replayed create_task returned" in env.init_problems[0]
    assert "task_2" in env.agent_state()["tasks"]  # the state change is applied anyway
    with pytest.raises(DataError, match="update_task_with_message_history"):
        Environment.fresh(MOCK, tau2_root / "domains" / "mock").set_state(task, strict=True)


def test_user_side_initialization_action_runs(tau2_root):
    task = _task(tau2_root, "update_task_with_user_tools")
    env = Environment.fresh(MOCK, tau2_root / "domains" / "mock")
    env.user_state()["notifications"] = {}  # so that the action's effect shows
    env.set_state(task, strict=True)
    assert env.user_state() == {"notifications": {"notif_1": {
        "notification_id": "notif_1", "message": "Task 'Test task' has been assigned to you.",
        "status": "unread", "task_id": "task_1"}}}


def test_read_only_and_unknown_history_calls_are_not_replayed(tau2_root):
    history = [
        {"role": "assistant", "tool_calls": [
            {"id": "a", "name": "get_users", "arguments": {}},
            {"id": "b", "name": "hallucinated_tool", "arguments": {}},
        ]},
        {"role": "tool", "id": "a", "content": "not what get_users says"},
        {"role": "tool", "id": "b", "content": "Error: Tool 'hallucinated_tool' not found."},
    ]
    task = {"id": "t", "initial_state": {"message_history": history}}
    env = Environment.fresh(MOCK, tau2_root / "domains" / "mock")
    env.set_state(task, strict=True)
    assert env.init_problems == []


def test_malformed_history():
    with pytest.raises(ValueError, match="does not follow a tool call"):
        tool_calls_of_history([{"role": "tool", "id": "x", "content": ""}])
    with pytest.raises(ValueError, match="does not match"):
        tool_calls_of_history([{"role": "assistant", "tool_calls": [{"id": "a", "name": "n", "arguments": {}}]},
                               {"role": "tool", "id": "b", "content": ""}])
    with pytest.raises(ValueError, match="no tool message"):
        tool_calls_of_history([{"role": "user", "tool_calls": [{"id": "a", "name": "n", "arguments": {}}]}])


def test_domain_registry():
    names = available_domains()
    assert names[:2] == ["airline", "mock"] or {"airline", "mock"} <= set(names)
    assert get_domain("airline").name == "airline"
    with pytest.raises(ConfigError, match="unknown domain 'nope'.*airline"):
        get_domain("nope")
    with pytest.raises(ConfigError):
        get_domain("../etc")
