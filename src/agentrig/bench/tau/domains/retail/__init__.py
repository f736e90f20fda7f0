"""τ²-bench's retail domain: products, users and orders (tau2 ``domains/retail``)."""

from __future__ import annotations

from ...domain import DomainSpec
from .models import normalize
from .tools import RetailTools

DOMAIN = DomainSpec(
    name="retail",
    agent_toolkit=RetailTools,
    db_files=("db.json",),
    policies={"default": ("policy.md",)},
    normalize_db=normalize,
)

__all__ = ["DOMAIN", "RetailTools"]
