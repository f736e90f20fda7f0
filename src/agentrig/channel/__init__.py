"""The only code that speaks HTTP to models: ``Channel`` and the doctor.

``Channel`` (and with it the OpenAI SDK, a third of a second to import) is loaded on first use,
so that code needing only the usage types (the analysis, the report) starts quickly."""

from typing import TYPE_CHECKING, Any

from .usage import RoleUsage, UsageLedger

if TYPE_CHECKING:
    from .client import Channel

__all__ = ["Channel", "RoleUsage", "UsageLedger"]


def __getattr__(name: str) -> Any:
    if name == "Channel":
        from .client import Channel

        return Channel
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
