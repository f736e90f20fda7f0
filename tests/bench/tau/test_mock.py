"""The mock domain: tools, results, errors, assertion functions, schemas (real tau2 data)."""

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
    assert SPEC.user_toolkit is None  # tau2's mock environment has no user side


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
