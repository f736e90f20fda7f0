"""τ²-bench's telecom domain: the carrier's agent tools and the user's phone (tau2 ``domains/telecom``).

- ``agent_tools.TelecomTools``: 13 agent tools over the carrier db (``db.toml``), plus the
  agent-side task functions (``set_data_usage``, ``suspend_line_for_overdue_bill``, assertions);
- ``user_tools.TelecomUserTools``: the 30 tools of the user's phone over the user db
  (``user_db.toml``), plus the user-side task functions (``user_functions``);
- ``user_device``: the phone's state model; ``sync``: the carrier records -> phone link;
- ``records``: the shapes of both dbs as tau2's models dump them.

Policies: the main policy with the tech-support manual (``default``, tau2's "manual") or with the
tech-support workflow (``workflow``); the engine wraps each part in ``<main_policy>`` /
``<tech_support_policy>`` tags as tau2 does (``data.load_policy``).
"""

from __future__ import annotations

from ...domain import DomainSpec
from .agent_tools import TelecomTools
from .records import normalize_db, normalize_user_db
from .sync import sync
from .user_tools import TelecomUserTools

_MANUAL = ("main_policy.md", "tech_support_manual.md")
_WORKFLOW = ("main_policy.md", "tech_support_workflow.md")

DOMAIN = DomainSpec(
    name="telecom",
    agent_toolkit=TelecomTools,
    db_files=("db.toml", "db.json"),
    user_toolkit=TelecomUserTools,
    user_db_files=("user_db.toml", "user_db.json"),
    policies={"default": _MANUAL, "manual": _MANUAL, "workflow": _WORKFLOW},
    sync=sync,
    normalize_db=normalize_db,
    normalize_user_db=normalize_user_db,
)

__all__ = ["DOMAIN", "TelecomTools", "TelecomUserTools", "sync"]
