"""τ²-bench's mock domain: users and their tasks, and the user's notification inbox (tau2
``domains/mock`` at v1.0.1).

Agent side, ``db.json``: ``{"tasks": {task_id: Task}, "users": {user_id: User}}`` with
``Task = {task_id, title, description (null when absent), status ("pending" | "completed")}`` and
``User = {user_id, name, tasks: [task_id]}``.

User side, ``user_db.json`` (tau2's ``MockUserDB``): ``{"notifications": {notification_id:
Notification}}`` with ``Notification = {notification_id, message, status ("unread" | "read",
default "unread"), task_id (null when absent)}``. The user's tools are ``check_notifications``
(read) and ``dismiss_notification`` (a write: marks it "read"); tasks call ``add_notification``
(initialization actions) and ``assert_notification_status`` (env assertions) on that side. The
two sides are not synced. A data root without ``user_db.json`` (older tau2-bench data) starts
with an empty inbox.
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


# ---- the user side -------------------------------------------------------------------------------

NotificationStatus = Literal["unread", "read"]


def _notification(notification_id: str, message: str, status: str = "unread", task_id: str | None = None) -> dict:
    return {"notification_id": notification_id, "message": message, "status": status, "task_id": task_id}


def normalize_user(user_db: dict) -> dict:
    """Field order and defaults of tau2's ``MockUserDB.model_dump()`` (unknown keys dropped)."""
    notifications = {
        k: _notification(n.get("notification_id"), n.get("message"), n.get("status") or "unread", n.get("task_id"))
        for k, n in ((user_db or {}).get("notifications") or {}).items()
    }
    return {"notifications": notifications}


def empty_inbox() -> dict:
    return {"notifications": {}}


class MockUserTools(Toolkit):
    """The user's notification inbox (tau2's ``MockUserTools``)."""

    db: dict

    @tool
    def check_notifications(self) -> list:
        """Show every notification in your inbox, read or not."""
        return list(self.db["notifications"].values())

    @tool(write=True)
    def dismiss_notification(self, notification_id: str) -> str:
        """Dismiss a notification, which marks it as read.

        Args:
            notification_id: ID of the notification to dismiss.
        """
        notifications = self.db["notifications"]
        if notification_id not in notifications:
            raise ToolError(f"Notification {notification_id} not found")
        notifications[notification_id]["status"] = "read"
        return f"Notification {notification_id} dismissed"

    # ---- functions for tasks' initialization actions and env assertions (not tools) -----------

    def add_notification(self, notification_id: str, message: str, task_id: str | None = None) -> dict:
        """Put a new unread notification in the inbox (replacing one with the same id)."""
        record = _notification(notification_id, message, "unread", task_id)
        self.db["notifications"][notification_id] = record
        return record

    def assert_notification_status(self, notification_id: str, expected_status: str) -> bool:
        """Whether the notification has the expected status."""
        notifications = self.db["notifications"]
        if notification_id not in notifications:
            raise ToolError(f"Notification {notification_id} not found")
        return notifications[notification_id]["status"] == expected_status


DOMAIN = DomainSpec(
    name="mock",
    agent_toolkit=MockTools,
    db_files=("db.json",),
    user_toolkit=MockUserTools,
    user_db_files=("user_db.json",),
    policies={"default": ("policy.md",)},
    default_user_db=empty_inbox,
    normalize_db=normalize,
    normalize_user_db=normalize_user,
)
