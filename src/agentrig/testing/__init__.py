"""Test helpers that are real parts: a fake OpenAI-compatible endpoint on 127.0.0.1
(``fake_endpoint``), and the scripted endpoints built on it that play each task's gold or solution
(``gold_endpoint``, ``solution_endpoint``, ``appworld_endpoint``; their common part: ``_scripted``).

Names are loaded on first use so ``python -m agentrig.testing.fake_endpoint`` runs cleanly.
"""

from __future__ import annotations

from typing import Any

__all__ = ["FakeEndpoint", "Fault", "RecordedRequest", "ThreadedFakeEndpoint"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from . import fake_endpoint

        return getattr(fake_endpoint, name)
    raise AttributeError(f"module 'agentrig.testing' has no attribute {name!r}")
