"""Generic exports of a run store: JSONL of ``TrialRecord`` (every stored attempt, valid and
invalid). A benchmark adds its own formats (``Benchmark.export``; τ²'s tau2-bench ``results.json``
is in ``agentrig.bench.tau.export``); they share the helpers below.
"""

from __future__ import annotations

import os
from datetime import datetime, timezone
from pathlib import Path

from agentrig.errors import ConfigError
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

_FILE_SUFFIXES = (".json", ".jsonl", ".yaml", ".yml", ".txt", ".csv")


def out_file(out_path: Path | None, fmt: str, example: str) -> Path | None:
    """``--out`` of a format written to one file (``jsonl``, ``tau2``): refused when it names a
    directory (a ConfigError naming the option and a file to give instead)."""
    if out_path is not None and Path(out_path).is_dir():
        raise ConfigError(f"--out {out_path}: --format {fmt} writes one file, and this is a directory; "
                          f"name a file in it instead (e.g. --out {Path(out_path) / example})")
    return out_path


def out_dir(out_path: Path | None, fmt: str, layout: str) -> Path | None:
    """``--out`` of a format written as a directory tree (``layout`` says what goes in it): refused
    when it is an existing file, or a path that does not exist yet and ends like a file name
    (``…/results.json``) — a ConfigError naming the option and the directory to give instead."""
    if out_path is None:
        return None
    path = Path(out_path)
    if path.exists() and not path.is_dir():
        raise ConfigError(f"--out {path}: --format {fmt} writes a directory ({layout}), and this is a file; "
                          f"give a directory (e.g. --out {path.parent / fmt})")
    if not path.exists() and path.suffix.lower() in _FILE_SUFFIXES:
        raise ConfigError(f"--out {path}: --format {fmt} writes a directory ({layout}), not one file; "
                          f"give the directory (e.g. --out {path.parent})")
    return path


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

