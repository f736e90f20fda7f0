"""Test helpers that are real parts, knowing no benchmark: a fake OpenAI-compatible endpoint on
127.0.0.1 (``fake_endpoint``: faults, personalities, wires), the scripted-responder base that each
benchmark's scripted endpoint builds on (``_scripted``: role headers, doctor probes, 400s, the
played-actions count, memory replies; ``_noise``: seeded wrong actions), and ``store_watch`` (a run
watched from the outside). The scripted endpoints themselves live with their benchmarks
(``bench/tau/scripted``, ``bench/terminal/scripted``, ``bench/appworld/scripted``).

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
