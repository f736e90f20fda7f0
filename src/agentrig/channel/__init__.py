"""The only code that speaks HTTP to models: ``Channel`` and the doctor."""

from .client import Channel
from .usage import RoleUsage, UsageLedger

__all__ = ["Channel", "RoleUsage", "UsageLedger"]
