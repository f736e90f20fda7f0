"""τ²-bench's airline domain: flights, users and reservations (tau2 ``domains/airline``)."""

from __future__ import annotations

from ...domain import DomainSpec
from .models import normalize
from .tools import AirlineTools

DOMAIN = DomainSpec(
    name="airline",
    agent_toolkit=AirlineTools,
    db_files=("db.json",),
    policies={"default": ("policy.md",)},
    normalize_db=normalize,
)

__all__ = ["DOMAIN", "AirlineTools"]
