"""Our own small domain, shipped inside the package: Spoke & Sprocket, a bicycle rental and repair
shop. Its data (``data/``: db.json, policy.md, tasks.json, split_tasks.json) is in tau2-bench's
file formats, so the engine plays it exactly like airline or retail. Small, fast and
deterministic: the shop's "today" is a field of the db, never the clock.
"""

from __future__ import annotations

from pathlib import Path

from ...domain import DomainSpec
from .tools import BikeshopTools

DATA_DIR = Path(__file__).parent / "data"

DOMAIN = DomainSpec(
    name="bikeshop",
    agent_toolkit=BikeshopTools,
    db_files=("db.json",),
    policies={"default": ("policy.md",)},
    builtin_dir=DATA_DIR,
)

__all__ = ["DOMAIN", "DATA_DIR", "BikeshopTools"]
