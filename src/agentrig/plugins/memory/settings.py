"""The memory plug-in's settings: an arm's ``plugins = [{ kind = "memory", ... }]`` entry.

    mode               selective | full_bank | always_inject | advisor | retrieval   ("selective")
    interval           a trigger before agent step 0, then every `interval` agent steps  (1, ≥ 1)
    window             agent steps the memory model sees                                 (8, ≥ 1)
    injection          transient_system | user_append                                    ("transient_system")
    retrieval_k        entries shown per step in mode retrieval                          (5, ≥ 1)
    max_output_chars   longer tool arguments / tool results / agent texts in the window
                       are cut to this many characters                                   (1000, ≥ 50)
    max_entry_chars    longer bank entries are cut when saved                            (500, ≥ 20)
    max_reminder_chars longer reminders are cut before they are injected                 (1000, ≥ 20)
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, Field, ValidationError

from agentrig.errors import ConfigError, format_validation_error
from agentrig.types import Strict

MODES = ("selective", "full_bank", "always_inject", "advisor", "retrieval")
INJECTIONS = ("transient_system", "user_append")
DECIDING_MODES = frozenset(("selective", "always_inject", "advisor"))  # modes with the decision phase
BANK_MODES = frozenset(("selective", "full_bank", "always_inject", "retrieval"))  # modes with a bank


class MemorySettings(Strict):
    model_config = ConfigDict(frozen=True)

    mode: Literal["selective", "full_bank", "always_inject", "advisor", "retrieval"] = "selective"
    interval: int = Field(1, ge=1, strict=True)
    window: int = Field(8, ge=1, strict=True)
    injection: Literal["transient_system", "user_append"] = "transient_system"
    retrieval_k: int = Field(5, ge=1, strict=True)
    max_output_chars: int = Field(1000, ge=50, strict=True)
    max_entry_chars: int = Field(500, ge=20, strict=True)
    max_reminder_chars: int = Field(1000, ge=20, strict=True)

    @property
    def placement(self) -> str:
        return "system" if self.injection == "transient_system" else "user_append"


_FIXES = {
    "mode": f"use one of: {', '.join(MODES)}",
    "injection": f"use one of: {', '.join(INJECTIONS)}",
    "interval": "give a whole number >= 1 (1 = before every agent step)",
    "window": "give a whole number >= 1 (agent steps the memory model sees)",
    "retrieval_k": "give a whole number >= 1",
    "max_output_chars": "give a whole number >= 50",
    "max_entry_chars": "give a whole number >= 20",
    "max_reminder_chars": "give a whole number >= 20",
}


def parse_settings(options: dict[str, Any], where: str = "") -> MemorySettings:
    """Validate an arm's memory settings; a ConfigError names the setting and the fix."""
    try:
        return MemorySettings.model_validate(options)
    except ValidationError as exc:
        def line(err: dict) -> str:
            name = ".".join(str(p) for p in err["loc"]) or "(settings)"
            if err["type"] == "extra_forbidden":
                return (f"`{name}`: not a setting of the memory plug-in "
                        f"(fix: use one of: {', '.join(MemorySettings.model_fields)})")
            fix = _FIXES.get(name.split(".")[0], "see docs/memory.md")
            return f"`{name}` = {err.get('input')!r}: {err['msg']} (fix: {fix})"
        head = f"{where}: " if where else ""
        raise ConfigError(format_validation_error(
            exc, f"{head}invalid setting(s) of plug-in kind \"memory\" in the arm's `plugins`:", line)) from None
