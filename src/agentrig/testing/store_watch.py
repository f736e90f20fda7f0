"""Watching a run another process plays: how many valid trials its store holds so far (tests and
the acceptance protocols wait on it before they kill a runner or an endpoint)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

__all__ = ["valid_count"]


def valid_count(db: Path) -> int:
    """Valid trials in a run's store as another process writes it (0 before it exists)."""
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1)
        try:
            return conn.execute("SELECT count(*) FROM trials WHERE valid = 1").fetchone()[0]
        finally:
            conn.close()
    except sqlite3.Error:
        return 0
