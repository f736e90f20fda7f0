"""τ²-bench's mock domain: users and their tasks (tau2 ``domains/mock``).

State is ``db.json``: ``{"tasks": {task_id: Task}, "users": {user_id: User}}`` with
``Task = {task_id, title, description (null when absent), status ("pending" | "completed")}`` and
``User = {user_id, name, tasks: [task_id]}``. tau2's mock environment has no user side (its
``user_db.json`` is not used), so initialization actions and assertions on the "user" side fail.
"""

from __future__ import annotations

from typing import Literal

from ..domain import DomainSpec
from ..toolkit import Toolkit, ToolError, tool

TaskStatus = Literal["pending", "completed"]


def _task_record(task_id: str, title: str, description: str | None, status: str) -> dict:
    return {"task_id": task_id, "title": title, "description": description, "status": status}


def normalize(db: dict) -> dict:
    """Field order and defaults of tau2's ``MockDB.model_dump()`` (unknown keys dropped)."""
    tasks = {
        k: _task_record(t.get("task_id"), t.get("title"), t.get("description"), t.get("status"))
        for k, t in (db.get("tasks") or {}).items()
    }
    users = {
        k: {"user_id": u.get("user_id"), "name": u.get("name"), "tasks": list(u.get("tasks") or [])}
        for k, u in (db.get("users") or {}).items()
    }
    return {"tasks": tasks, "users": users}


class MockTools(Toolkit):
    """Tools of the mock domain."""

    db: dict

    @tool(write=True)
    def create_task(self, user_id: str, title: str, description: str = None) -> dict:  # type: ignore[assignment]
        """Create a new task for a user.

        Args:
            user_id: ID of the user the task is created for.
            title: Title of the new task.
            description: Description of the task (optional).
        """
        users = self.db["users"]
        if user_id not in users:
            raise ToolError(f"User {user_id} not found")
        tasks = self.db["tasks"]
        task_id = f"task_{len(tasks) + 1}"
        task = _task_record(task_id, title, description, "pending")
        tasks[task_id] = task
        users[user_id]["tasks"].append(task_id)
        return task

    @tool
    def get_users(self) -> list:
        """List every user in the database."""
        return list(self.db["users"].values())

    @tool(write=True)
    def update_task_status(self, task_id: str, status: TaskStatus) -> dict:
        """Set the status of a task.

        Args:
            task_id: ID of the task to change.
            status: The task's new status.
        """
        tasks = self.db["tasks"]
        if task_id not in tasks:
            raise ToolError(f"Task {task_id} not found")
        task = tasks[task_id]
        task["status"] = status
        return task

    # ---- functions for tasks' initialization actions and env assertions (not tools) -----------

    def assert_number_of_tasks(self, user_id: str, expected_number: int) -> bool:
        """Whether the user has exactly ``expected_number`` tasks."""
        users = self.db["users"]
        if user_id not in users:
            raise ToolError(f"User {user_id} not found")
        return len(users[user_id]["tasks"]) == expected_number

    def assert_task_status(self, task_id: str, expected_status: TaskStatus) -> bool:
        """Whether the task has the expected status."""
        tasks = self.db["tasks"]
        if task_id not in tasks:
            raise ToolError(f"Task {task_id} not found")
        return tasks[task_id]["status"] == expected_status

    @tool
    def transfer_to_human_agents(self, summary: str) -> str:
        """Hand the conversation over to a human agent, with a summary of the user's issue.
        Do this only when the user explicitly asks for a human agent, or when the policy and the
        available tools do not let you solve the user's issue.

        Args:
            summary: A summary of the user's issue.
        """
        return "Transfer successful"


DOMAIN = DomainSpec(
    name="mock",
    agent_toolkit=MockTools,
    db_files=("db.json",),
    policies={"default": ("policy.md",)},
    normalize_db=normalize,
)
