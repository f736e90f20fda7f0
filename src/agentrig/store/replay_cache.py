"""``[channel] cache = "replay"``: a trial replays its own answered model calls.

Every answered call of a trial is kept in ``<run dir>/replay.sqlite`` under

    (arm, domain, task_id, trial, request hash, occurrence)

where the request hash covers everything that shapes the answer — the role, its model, wire,
base URL (without credentials), temperature, max_tokens, seed, extra_body, the messages, the
tools and the call's own parameters (tool_choice, parallel_tool_calls, the trial's seed) — and the
occurrence counts how often this attempt of the trial sent that same request before. When the
same trial sends the same request again (a trial replayed after a crash or a kill, an invalid
attempt played again, a rerun for debugging), the stored answer is returned and no request
reaches the endpoint; the call is recorded in the trajectory as usual, with its original usage
and no HTTP attempts (``agentrig usage`` counts 0 requests for it).

pass^k stays honest: the trial index is part of the key, so trial 0 and trial 1 of a task never
share an answer, even when their first requests are identical byte for byte — k trials remain k
independent samples of the endpoint.

An invalid attempt played again: its answered calls up to the fault are replayed (the
conversation is rebuilt exactly as it was), and the call that failed — a fault, a malformed
reply, an answer that showed a silently cut prompt — was never stored, so from there on the
attempt goes to the endpoint. The first answer of a (trial, request, occurrence) is the one kept.

Nothing secret is stored: no key, no header, no base URL credentials — a hash of the request and
the answer (``Completion``) only. The cache works with the local executor (the file is the
driver's); ``executor = "ray"`` with ``cache = "replay"`` is refused when the run starts.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from collections import Counter
from pathlib import Path
from typing import Any

from agentrig.errors import ConfigError
from agentrig.redact import redact_url
from agentrig.types import Completion, TrialKey

CACHE_FILE = "replay.sqlite"

_DDL = """
CREATE TABLE IF NOT EXISTS replay (
    arm TEXT NOT NULL, domain TEXT NOT NULL, task_id TEXT NOT NULL, trial INTEGER NOT NULL,
    request TEXT NOT NULL, occurrence INTEGER NOT NULL,
    role TEXT NOT NULL, completion TEXT NOT NULL, stored_at REAL NOT NULL,
    PRIMARY KEY (arm, domain, task_id, trial, request, occurrence)
)
"""


def request_hash(role: str, rr: Any, messages: list[dict], tools: list[dict] | None,
                 kwargs: dict[str, Any]) -> str:
    """A stable hash of one request as the endpoint would see it (no key, no headers)."""
    doc = {
        "role": role, "model": rr.model, "wire": rr.wire, "base_url": redact_url(rr.base_url.rstrip("/")),
        "temperature": rr.temperature, "max_tokens": rr.max_tokens, "seed": rr.seed, "extra_body": rr.extra_body,
        "messages": messages, "tools": tools, "params": kwargs,
    }
    text = json.dumps(doc, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


class ReplayCache:
    """The run's response cache (one SQLite file, written by the driver only)."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute(_DDL)
        self.hits = 0
        self.stored = 0

    @classmethod
    def for_run(cls, r: Any, run_dir: Path) -> ReplayCache | None:
        """The cache of a run directory when ``[channel] cache = "replay"``; else None."""
        if r.exp.channel.cache != "replay":
            return None
        cls.check(r)
        return cls(Path(run_dir) / CACHE_FILE)

    @staticmethod
    def check(r: Any) -> None:
        """The cache is the driver's file: refused with the Ray executor, before anything is opened."""
        if r.exp.channel.cache == "replay" and r.exp.run.executor != "local":
            raise ConfigError(f"{r.source}: channel.cache = \"replay\" works with run.executor = \"local\" only "
                              "(the cache is a file of the driver's run directory).\n"
                              "  fix: set cache = \"off\" or executor = \"local\"")

    def attach(self, channels: dict[str, Any]) -> None:
        """Every trial played through these channels reads and fills this cache (trial/context.py)."""
        for ch in channels.values():
            ch.replay_cache = self

    @staticmethod
    def _key(key: TrialKey, request: str, occurrence: int) -> tuple:
        return (key.arm, key.domain, key.task_id, key.trial, request, occurrence)

    def get(self, key: TrialKey, request: str, occurrence: int) -> Completion | None:
        row = self._conn.execute(
            "SELECT completion FROM replay WHERE arm = ? AND domain = ? AND task_id = ? AND trial = ? "
            "AND request = ? AND occurrence = ?", self._key(key, request, occurrence)).fetchone()
        if row is None:
            return None
        self.hits += 1
        return Completion.model_validate_json(row[0]).model_copy(update={"latency_s": 0.0})

    def put(self, key: TrialKey, request: str, occurrence: int, completion: Completion) -> None:
        answer = completion.model_copy(update={"attempts": []})
        self._conn.execute("INSERT OR IGNORE INTO replay VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                           (*self._key(key, request, occurrence), completion.role, answer.model_dump_json(),
                            time.time()))
        self.stored += 1

    def count(self) -> int:
        return self._conn.execute("SELECT count(*) FROM replay").fetchone()[0]

    def close(self) -> None:
        self._conn.close()


class TrialReplay:
    """One attempt's view of the cache: counts repeated requests (``occurrence``)."""

    def __init__(self, cache: ReplayCache, key: TrialKey):
        self.cache, self.key = cache, key
        self._seen: Counter[str] = Counter()

    def lookup(self, role: str, rr: Any, messages: list[dict], tools: list[dict] | None,
               kwargs: dict[str, Any]) -> tuple[str, int, Completion | None]:
        request = request_hash(role, rr, messages, tools, kwargs)
        occurrence = self._seen[request]
        self._seen[request] += 1
        return request, occurrence, self.cache.get(self.key, request, occurrence)

    def keep(self, request: str, occurrence: int, completion: Completion) -> None:
        self.cache.put(self.key, request, occurrence, completion)
