"""Generic exports of a run store: JSONL of ``TrialRecord`` (every stored attempt, valid and
invalid). A benchmark adds its own formats (``Benchmark.export``; τ²'s tau2-bench ``results.json``
is in ``agentrig.bench.tau.export``); they share the helpers below.
"""

from __future__ import annotations

import os
from datetime import datetime, timezone
from pathlib import Path

from agentrig.store.store import Store


# -- JSONL ---------------------------------------------------------------------------------------

def export_jsonl(store: Store, out: Path, arm: str | None = None) -> int:
    """Write every stored attempt (valid and invalid) as one ``TrialRecord`` JSON per line."""
    n = 0
    with _atomic(out) as fh:
        for record in store.records(arm=arm):
            fh.write(record.model_dump_json())
            fh.write("\n")
            n += 1
    return n


# -- helpers ------------------------------------------------------------------------------------

def _parse_time(text: str) -> datetime:
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return datetime.fromtimestamp(0, timezone.utc)


class _atomic:
    """Write to ``path`` through a temporary file renamed into place on success."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")

    def __enter__(self):
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.fh = open(self.tmp, "w", encoding="utf-8")
        return self.fh

    def __exit__(self, exc_type, *rest) -> None:
        self.fh.close()
        if exc_type is None:
            os.replace(self.tmp, self.path)
        else:
            self.tmp.unlink(missing_ok=True)

