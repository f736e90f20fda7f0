"""The mock domain: tools, results, errors, assertion functions, schemas (real tau2 data), and
the user side τ²-bench v1.0.1 has (the notification inbox of user_db.json)."""

from __future__ import annotations

import json

import pytest

from agentrig.bench.tau.domains import get_domain
from agentrig.bench.tau.environment import Environment

SPEC = get_domain("mock")


@pytest.fixture()
def env(tau2_root):
    return Environment.fresh(SPEC, tau2_root / "domains" / "mock")


def test_tools_schemas_and_flags():
    specs = {s.name: s for s in SPEC.agent_toolkit.tool_specs()}
    assert list(specs) == ["create_task", "get_users", "update_task_status", "transfer_to_human_agents"]
    assert {n for n, s in specs.items() if s.write} == {"create_task", "update_task_status"}
    create = specs["create_task"].parameters
    assert create["required"] == ["user_id", "title"]
    assert create["properties"]["description"]["default"] is None
    assert create["properties"]["description"]["type"] == "string"
    assert specs["update_task_status"].parameters["properties"]["status"]["enum"] == ["pending", "completed"]
    user = {s.name: s for s in SPEC.user_toolkit.tool_specs()}
    assert list(user) == ["check_notifications", "dismiss_notification"]
    assert {n for n, s in user.items() if s.write} == {"dismiss_notification"}
    assert user["check_notifications"].parameters["properties"] == {}
    assert user["dismiss_notification"].parameters["required"] == ["notification_id"]
    assert user["dismiss_notification"].parameters["properties"]["notification_id"]["type"] == "string"


def test_create_task(env):
    out = env.call("assistant", "create_task", {"user_id": "user_1", "title": "Meeting"})
    assert out.text == '{"task_id": "task_2", "title": "Meeting", "description": null, "status": "pending"}'
    db = env.agent_state()
    assert db["users"]["user_1"]["tasks"] == ["task_1", "task_2"]
    out = env.call("assistant", "create_task", {"user_id": "user_1", "title": "B", "description": None})
    assert json.loads(out.text)["task_id"] == "task_3"
    out = env.call("assistant", "create_task", {"user_id": "user_1", "title": "C", "description": "d"})
    assert out.result == {"task_id": "task_4", "title": "C", "description": "d", "status": "pending"}
    assert env.call("assistant", "create_task", {"user_id": "user_9", "title": "x"}).text == "Error: User user_9 not found"
    assert env.call("assistant", "create_task", {"user_id": "user_1"}).text == (
        "Error: MockTools.create_task() missing 1 required positional argument: 'title'"
    )


def test_create_task_id_is_count_based_like_tau2(env):
    # ids are "task_<number of tasks + 1>": after a gap the next id overwrites an existing task
    db = env.agent_state()
    db["tasks"]["task_3"] = {"task_id": "task_3", "title": "t3", "description": None, "status": "completed"}
    env.call("assistant", "create_task", {"user_id": "user_1", "title": "new"})
    assert db["tasks"]["task_3"]["title"] == "new" and db["tasks"]["task_3"]["status"] == "pending"


def test_get_users_and_update_status(env):
    assert json.loads(env.call("assistant", "get_users", {}).text) == [
        {"user_id": "user_1", "name": "Test User", "tasks": ["task_1"]}
    ]
    out = env.call("assistant", "update_task_status", {"task_id": "task_1", "status": "completed"})
    assert json.loads(out.text)["status"] == "completed"
    assert env.agent_state()["tasks"]["task_1"]["status"] == "completed"
    assert env.call("assistant", "update_task_status", {"task_id": "task_7", "status": "completed"}).text == (
        "Error: Task task_7 not found"
    )
    bad = env.call("assistant", "update_task_status", {"task_id": "task_1", "status": "done"})
    assert bad.error and "status" in bad.text


def test_assertion_functions(env):
    assert env.run_function("assistant", "assert_task_status", {"task_id": "task_1", "expected_status": "pending"})
    assert not env.run_function("assistant", "assert_number_of_tasks", {"user_id": "user_1", "expected_number": 2})
    assert env.run_function("assistant", "assert_number_of_tasks", {"user_id": "user_1", "expected_number": 1})
    assert not env.has_tool("assert_task_status")  # functions for tasks, not tools for the agent
    assert env.call("assistant", "assert_task_status", {"task_id": "task_1", "expected_status": "x"}).text == (
        "Error: Tool 'assert_task_status' not found."
    )


def test_transfer(env):
    assert env.call("assistant", "transfer_to_human_agents", {"summary": "s"}).text == "Transfer successful"


# ---- the user side: tau2's MockUserTools over user_db.json --------------------------------------

NOTIF_1 = {"notification_id": "notif_1", "message": "Task 'Test task' has been assigned to you.",
           "status": "unread", "task_id": "task_1"}


def test_user_db_is_the_inbox_of_user_db_json(env, tau2_root):
    raw = json.loads((tau2_root / "domains" / "mock" / "user_db.json").read_text())
    assert env.user_state() == raw == {"notifications": {"notif_1": NOTIF_1}}


def test_check_notifications_lists_the_inbox(env):
    out = env.call("user", "check_notifications", {})
    assert not out.error
    # a list of model dumps, json.dumps with the default separators (tau2's to_json_str)
    assert out.text == json.dumps([NOTIF_1])
    assert not env.is_mutating("check_notifications")


def test_dismiss_notification_marks_it_read(env):
    assert env.is_mutating("dismiss_notification")
    out = env.call("user", "dismiss_notification", {"notification_id": "notif_1"})
    assert (out.error, out.text) == (False, "Notification notif_1 dismissed")
    assert env.user_state()["notifications"]["notif_1"] == {**NOTIF_1, "status": "read"}
    assert json.loads(env.call("user", "check_notifications", {}).text)[0]["status"] == "read"
    # dismissing again is no error (it stays read)
    assert env.call("user", "dismiss_notification", {"notification_id": "notif_1"}).text == "Notification notif_1 dismissed"
    assert env.call("user", "dismiss_notification", {"notification_id": "notif_9"}).text == (
        "Error: Notification notif_9 not found")
    assert env.call("user", "dismiss_notification", {}).text == (
        "Error: MockUserTools.dismiss_notification() missing 1 required positional argument: 'notification_id'")
    assert env.agent_state()["tasks"]["task_1"]["status"] == "pending"  # the sides are not synced


def test_add_notification_and_its_assertion(env):
    added = env.run_function("user", "add_notification", {"notification_id": "n2", "message": "hello"})
    assert added == {"notification_id": "n2", "message": "hello", "status": "unread", "task_id": None}
    assert list(env.user_state()["notifications"]) == ["notif_1", "n2"]
    assert env.run_function("user", "assert_notification_status", {"notification_id": "n2", "expected_status": "unread"})
    env.call("user", "dismiss_notification", {"notification_id": "n2"})
    assert env.run_function("user", "assert_notification_status", {"notification_id": "n2", "expected_status": "read"})
    assert not env.run_function("user", "assert_notification_status", {"notification_id": "n2", "expected_status": "unread"})
    with pytest.raises(Exception, match="Notification n9 not found"):
        env.run_function("user", "assert_notification_status", {"notification_id": "n9", "expected_status": "read"})
    # adding an existing id replaces it with a fresh unread notification
    env.run_function("user", "add_notification", {"notification_id": "n2", "message": "again", "task_id": "task_1"})
    assert env.user_state()["notifications"]["n2"] == {
        "notification_id": "n2", "message": "again", "status": "unread", "task_id": "task_1"}
    # these are functions for tasks, not tools for the user
    assert env.call("user", "add_notification", {"notification_id": "x", "message": "m"}).text == (
        "Error: Tool 'add_notification' not found.")


def test_user_db_normalized_like_tau2_and_optional(tmp_path, tau2_root):
    d = tmp_path / "mock"
    d.mkdir()
    (d / "db.json").write_text((tau2_root / "domains" / "mock" / "db.json").read_text())
    # a notification without status / task_id gets tau2's defaults, fields in the model's order
    (d / "user_db.json").write_text(json.dumps({"notifications": {"a": {"message": "m", "notification_id": "a"}}}))
    env = Environment.fresh(SPEC, d)
    assert list(env.user_state()["notifications"]["a"].items()) == [
        ("notification_id", "a"), ("message", "m"), ("status", "unread"), ("task_id", None)]
    # older tau2-bench data has no user_db.json: the inbox starts empty (MockUserDB's default)
    (d / "user_db.json").unlink()
    env = Environment.fresh(SPEC, d)
    assert env.user_state() == {"notifications": {}}
    assert env.call("user", "check_notifications", {}).text == "[]"
