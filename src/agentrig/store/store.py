"""The run's SQLite store: one row per finished trial (plus one per model call), append-only.

Layout (schema version ``SCHEMA_VERSION``, marked with ``PRAGMA application_id``):

- ``meta(name, value)`` — JSON values: ``config`` (the snapshot without secrets),
  ``comparability``, ``run_id``, ``created_at``, ``agentrig`` (version) …
- ``trials`` — the key (arm, domain, task_id, trial), the attempt, the verdict's summary columns,
  token totals and retries, and the whole ``TrialRecord`` as zlib-compressed JSON (``record``).
  A partial UNIQUE index on the key ``WHERE valid = 1`` makes a second valid row of the same
  trial impossible; invalid attempts stay as history rows.
- ``shared(sha, value)`` — the large parts of recorded agent requests (system prompts, tool
  schemas), stored once per run and referred to from the trials' records (``store_shared.py``;
  ``records`` and ``raw_records`` put them back).
- ``model_calls`` — one row per ``ModelCall`` of a trial (usage, latency, attempts, retries and
  the cause of each retried attempt). ``retries`` is ``ModelCall.retries`` (``types.retries_of``:
  attempts − 1) in both tables: every view of a run reads it from there.

Durability: the database runs in WAL mode with ``synchronous=NORMAL``. Every ``append`` is one
transaction; when ``COMMIT`` returns, the transaction's pages have been written (``write(2)``) to
the ``-wal`` file, so they live in the operating system's page cache, outside the process. A
crash or SIGKILL of the process therefore loses nothing committed: the next ``open`` replays the
WAL. Only an OS crash or power loss can drop the last few commits (NORMAL skips the fsync per
commit) — and even then the database stays consistent: a transaction is there whole or not at
all. Readers in other processes see every committed trial while the writer keeps going.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from agentrig import __version__
from agentrig.errors import DataError
from agentrig.types import TrialKey, TrialRecord

from agentrig.store import shared as store_shared
from agentrig.store.schema import INSERT_CALL, INSERT_TRIAL, SCHEMA

APPLICATION_ID = 0x41475247  # "AGRG"
# 2: a verdict's reward_info keeps a benchmark's own judgement in ``details`` (τ²'s DB match and
# checks were top-level fields in 1: ``types.RewardInfo`` reads schema-1 records into ``details``,
# so a run written before resumes, analyzes and reports as before; an older agentrig refuses a
# schema-2 store rather than misreading it).
SCHEMA_VERSION = 2
_ZLIB_LEVEL = 3

Key = tuple[str, str, str, int]



@dataclass(frozen=True, slots=True)
class VerdictRow:
    """One stored attempt, without its trajectory (read from columns, the blob is not decoded)."""

    arm: str
    domain: str
    task_id: str
    trial: int
    attempt: int
    valid: bool
    reward: float
    termination: str
    invalid_cause: str | None
    seed: int
    started_at: str
    duration_s: float
    n_messages: int
    n_calls: int
    prompt_tokens: int
    completion_tokens: int
    reasoning_tokens: int
    cached_tokens: int
    retries: int

    @property
    def key(self) -> Key:
        return (self.arm, self.domain, self.task_id, self.trial)


_VERDICT_COLUMNS = ", ".join(
    ("arm", "domain", "task_id", "trial", "attempt", "valid", "reward", "termination",
     "invalid_cause", "seed", "started_at", "duration_s", "n_messages", "n_calls",
     "prompt_tokens", "completion_tokens", "reasoning_tokens", "cached_tokens", "retries"))


def encode_record(record: TrialRecord) -> bytes:
    return zlib.compress(record.model_dump_json().encode("utf-8"), _ZLIB_LEVEL)


def decode_record(blob: bytes) -> TrialRecord:
    return TrialRecord.model_validate_json(zlib.decompress(blob))


def _key_tuple(key: TrialKey | Key) -> Key:
    if isinstance(key, TrialKey):
        return (key.arm, key.domain, key.task_id, key.trial)
    arm, domain, task_id, trial = key
    return (arm, domain, task_id, int(trial))


class Store:
    """An open run store. Use ``Store.open(path)``; close it (or use ``with``) when done.

    One connection, safe to share between threads (appends are serialized by a lock). Several
    processes may read while one writes; two writers wait on each other (busy timeout)."""

    def __init__(self, path: Path, conn: sqlite3.Connection):
        self.path = path
        self._conn = conn
        self._lock = threading.Lock()
        self._shared: dict[str, Any] = {}  # sha → value of the ``shared`` table, as read (store_shared.py)

    # -- opening -----------------------------------------------------------------------------

    @classmethod
    def open(cls, path: str | Path, *, create: bool = True) -> "Store":
        """Open the store at ``path``, creating the file and its schema when it does not exist
        (``create=False``: a missing file is a ``DataError``)."""
        path = Path(path)
        if path.is_dir():
            raise DataError(f"{path}: is a directory, not an agentrig store; "
                            "pass the store file (trials.sqlite in the run directory)")
        if not path.exists():
            if not create:
                raise DataError(f"{path}: no agentrig store there; "
                                "run the experiment first or check the run directory")
            if path.parent.exists() and not path.parent.is_dir():
                raise DataError(f"{path.parent}: is a file, not a run directory; give a directory path "
                                "(--dir or [run] dir), or move that file away")
            path.parent.mkdir(parents=True, exist_ok=True)
        elif path.is_file() and path.stat().st_size == 0 and not (
                create and not (path.parent / "config.json").exists()):
            # never lay a new schema into an existing run's file; a writer may into the empty file a
            # run killed before its first write left (no config snapshot beside it yet)
            raise DataError(f"{path}: is empty (0 bytes), not a readable agentrig store (a copy that failed?); "
                            "restore the file from where it came from, or remove it to start the run anew")
        try:
            conn = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False,
                                   timeout=30.0)
        except sqlite3.Error as exc:
            raise DataError(f"{path}: cannot open the store ({exc}); check the path and its "
                            "permissions") from None
        try:
            cls._prepare(path, conn)
            if create:  # a writer: what it appends is in this schema, so an older reader must refuse it
                if conn.execute("PRAGMA user_version").fetchone()[0] < SCHEMA_VERSION:
                    conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        except BaseException:
            conn.close()
            raise
        return cls(path, conn)

    @staticmethod
    def _prepare(path: Path, conn: sqlite3.Connection) -> None:
        not_store = (f"{path}: is not an agentrig store; pass the store of a run directory, "
                     "or choose a new path for a new run")
        try:
            conn.execute("BEGIN")  # one snapshot: a schema laid out meanwhile is seen whole or not at all
            try:
                app_id = conn.execute("PRAGMA application_id").fetchone()[0]
                version = conn.execute("PRAGMA user_version").fetchone()[0]
                tables = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
            finally:
                if conn.in_transaction:
                    conn.execute("COMMIT")
        except sqlite3.DatabaseError:
            raise DataError(not_store + " (the file is not a SQLite database)") from None
        if app_id == 0 and tables == 0:  # a new (or empty) file: lay out the schema
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("BEGIN IMMEDIATE")
            try:
                # another process may have created it between our look and the lock
                if conn.execute("PRAGMA application_id").fetchone()[0] == 0:
                    for statement in SCHEMA.split(";"):
                        if statement.strip():
                            conn.execute(statement)
                    conn.execute(f"PRAGMA application_id={APPLICATION_ID}")
                    conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
                    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
                    conn.execute("INSERT INTO meta VALUES (?, ?)",
                                 ("store", json.dumps({"schema": SCHEMA_VERSION, "created_at": now,
                                                       "agentrig": __version__})))
                conn.execute("COMMIT")
            except BaseException:  # Ctrl-C may come after the COMMIT: nothing left to roll back then
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            app_id, version = APPLICATION_ID, SCHEMA_VERSION
        if app_id != APPLICATION_ID:
            raise DataError(not_store + " (a SQLite database of something else)")
        if version > SCHEMA_VERSION:
            raise DataError(f"{path}: written by a newer agentrig (store schema {version}, this "
                            f"agentrig reads up to {SCHEMA_VERSION}); upgrade agentrig")
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA foreign_keys=ON")

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- meta --------------------------------------------------------------------------------

    def set_meta(self, name: str, value: dict) -> None:
        text = json.dumps(value, sort_keys=True)
        with self._lock:
            self._conn.execute("INSERT INTO meta VALUES (?, ?) ON CONFLICT (name) "
                               "DO UPDATE SET value = excluded.value", (name, text))

    def get_meta(self, name: str) -> dict | None:
        row = self._conn.execute("SELECT value FROM meta WHERE name = ?", (name,)).fetchone()
        return None if row is None else json.loads(row[0])

    # -- writing -----------------------------------------------------------------------------

    def append(self, record: TrialRecord) -> bool:
        """Store one finished trial in one transaction. Returns False (storing nothing) when the
        record is valid and a valid row of the same key is already stored."""
        key, verdict, calls = record.key, record.verdict, record.trajectory.model_calls
        prompt = completion = reasoning = cached = retries = 0
        call_rows = []
        for idx, call in enumerate(calls):
            usage = call.usage
            prompt += usage.prompt_tokens
            completion += usage.completion_tokens
            reasoning += usage.reasoning_tokens or 0
            cached += usage.cached_tokens or 0
            call_retries = call.retries
            retries += call_retries
            # the causes of the attempts that were retried (one per retry; ``types.retries_of``)
            causes = ",".join(a.cause or "unknown" for a in call.attempts[:-1])
            call_rows.append((idx, call.role, call.purpose, call.turn, call.model,
                              usage.prompt_tokens, usage.completion_tokens, usage.reasoning_tokens,
                              usage.cached_tokens, int(usage.reported), call.latency_s,
                              len(call.attempts), call_retries, causes, call.finish_reason,
                              call.error))
        row = (key.arm, key.domain, key.task_id, key.trial, record.attempt, int(verdict.valid),
               float(verdict.reward), verdict.termination, verdict.invalid_cause, record.run_id,
               record.seed, record.started_at, record.duration_s,
               len(record.trajectory.messages), len(calls), prompt, completion, reasoning, cached,
               retries, None)
        stored, shared = store_shared.share(record)  # the requests' system prompts and tools: once per run
        row = (*row[:-1], encode_record(stored))
        with self._lock:
            conn = self._conn
            conn.execute("BEGIN IMMEDIATE")
            try:
                if shared:
                    conn.execute(store_shared.DDL)  # (a rolled-back transaction takes the table with it)
                    conn.executemany("INSERT OR IGNORE INTO shared VALUES (?, ?)", list(shared.items()))
                try:
                    trial_row = conn.execute(INSERT_TRIAL, row).lastrowid
                except sqlite3.IntegrityError:
                    conn.execute("ROLLBACK")
                    if verdict.valid and self._has_valid(key):
                        return False
                    raise
                conn.executemany(INSERT_CALL, [(trial_row, *r) for r in call_rows])
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
        return True

    def _has_valid(self, key: TrialKey) -> bool:
        return self._conn.execute(
            "SELECT 1 FROM trials WHERE arm = ? AND domain = ? AND task_id = ? AND trial = ? "
            "AND valid = 1", (key.arm, key.domain, key.task_id, key.trial)).fetchone() is not None

    # -- tables of other parts (the resampled steps: store/instability.py) -----------

    def ensure_tables(self, ddl: str) -> None:
        """Create the tables of ``ddl`` (``CREATE TABLE IF NOT EXISTS …`` statements) in one
        transaction; the schema version is unchanged (additive tables older readers ignore)."""
        self.write_many([(stmt, ()) for stmt in ddl.split(";") if stmt.strip()])

    def write_many(self, statements: list[tuple[str, tuple]]) -> None:
        """Run ``(sql, args)`` statements in one transaction."""
        with self._lock:
            conn = self._conn
            conn.execute("BEGIN IMMEDIATE")
            try:
                for sql, args in statements:
                    conn.execute(sql, args)
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise

    def query(self, sql: str, args: tuple | list = ()) -> list[tuple]:
        """Rows of a read-only query (an absent table: [])."""
        try:
            return self._conn.execute(sql, tuple(args)).fetchall()
        except sqlite3.OperationalError as exc:
            if "no such table" in str(exc):
                return []
            raise

    # -- reading -----------------------------------------------------------------------------

    def valid_keys(self, arm: str | None = None) -> set[Key]:
        sql, args = _where("SELECT arm, domain, task_id, trial FROM trials", arm=arm, valid=True)
        return {tuple(r) for r in self._conn.execute(sql, args)}  # type: ignore[misc]

    def attempts(self, key: TrialKey | Key) -> int:
        """How many rows (valid or not) are stored for this trial key."""
        return self._conn.execute(
            "SELECT count(*) FROM trials WHERE arm = ? AND domain = ? AND task_id = ? "
            "AND trial = ?", _key_tuple(key)).fetchone()[0]

    def records(self, arm: str | None = None, valid: bool | None = None, *,
                domain: str | None = None) -> Iterator[TrialRecord]:
        """The stored records in the order they were appended, decoded one at a time."""
        sql, args = _where("SELECT record FROM trials", arm=arm, valid=valid, domain=domain)
        cursor = self._conn.execute(sql + " ORDER BY id", args)
        while batch := cursor.fetchmany(64):
            for (blob,) in batch:
                yield store_shared.resolve(decode_record(blob), self.shared_value)

    def raw_records(self, arm: str, domain: str, task_id: str, trial: int) -> list[dict[str, Any]]:
        """Every stored attempt of one trial key as plain JSON data (no model validation), in the
        order stored: for readers that only show records (the report)."""
        rows = self._conn.execute(
            "SELECT record FROM trials WHERE arm = ? AND domain = ? AND task_id = ? AND trial = ? ORDER BY id",
            (arm, domain, task_id, trial)).fetchall()
        return [store_shared.resolve_raw(json.loads(zlib.decompress(blob)), self.shared_value) for (blob,) in rows]

    def shared_value(self, sha: str) -> Any:
        """A value of the ``shared`` table (``store_shared``), read once per store."""
        value = self._shared.get(sha)
        if value is None:
            row = self._conn.execute("SELECT value FROM shared WHERE sha = ?", (sha,)).fetchone()
            if row is None:
                raise DataError(f"{self.path}: a trial refers to shared value {sha} that the store does not hold; "
                                "the store is damaged")
            value = self._shared[sha] = store_shared.decode_value(row[0])
        return value

    def verdict_rows(self, arm: str | None = None, valid: bool | None = None, *,
                     domain: str | None = None) -> list[VerdictRow]:
        """Light rows for summaries: key, attempt, verdict columns, tokens, retries, duration."""
        sql, args = _where(f"SELECT {_VERDICT_COLUMNS} FROM trials", arm=arm, valid=valid,
                           domain=domain)
        rows = self._conn.execute(sql + " ORDER BY id", args).fetchall()
        return [VerdictRow(r[0], r[1], r[2], r[3], r[4], bool(r[5]), *r[6:]) for r in rows]

    def iter_model_calls(self, arm: str | None = None) -> Iterator[dict[str, Any]]:
        """Every stored model call with its trial's key, streamed (for usage and retry summaries)."""
        sql, args = _where("SELECT t.arm, t.domain, t.task_id, t.trial, t.attempt, t.valid, c.* "
                           "FROM model_calls c JOIN trials t ON t.id = c.trial_row", arm=arm,
                           prefix="t.")
        cursor = self._conn.execute(sql + " ORDER BY c.trial_row, c.idx", args)
        names = [d[0] for d in cursor.description]
        while batch := cursor.fetchmany(512):
            for r in batch:
                yield dict(zip(names, r))

    def model_call_rows(self, arm: str | None = None) -> list[dict[str, Any]]:
        """``iter_model_calls`` as a list."""
        return list(self.iter_model_calls(arm))

    def counts(self) -> dict[str, Any]:
        """Rows, valid and invalid attempts, distinct trial keys, model calls; also per arm."""
        by_arm: dict[str, dict[str, int]] = {}
        for arm, valid, n in self._conn.execute(
                "SELECT arm, valid, count(*) FROM trials GROUP BY arm, valid"):
            entry = by_arm.setdefault(arm, {"valid": 0, "invalid": 0})
            entry["valid" if valid else "invalid"] += n
        keys = self._conn.execute(
            "SELECT count(*) FROM (SELECT DISTINCT arm, domain, task_id, trial FROM trials)"
        ).fetchone()[0]
        calls = self._conn.execute("SELECT count(*) FROM model_calls").fetchone()[0]
        valid = sum(e["valid"] for e in by_arm.values())
        invalid = sum(e["invalid"] for e in by_arm.values())
        return {"rows": valid + invalid, "valid": valid, "invalid": invalid, "keys": keys,
                "model_calls": calls, "arms": by_arm}


def _where(sql: str, *, arm: str | None = None, valid: bool | None = None,
           domain: str | None = None, prefix: str = "") -> tuple[str, list[Any]]:
    clauses, args = [], []
    if arm is not None:
        clauses.append(f"{prefix}arm = ?")
        args.append(arm)
    if domain is not None:
        clauses.append(f"{prefix}domain = ?")
        args.append(domain)
    if valid is not None:
        clauses.append(f"{prefix}valid = ?")
        args.append(int(valid))
    if clauses:
        sql += " WHERE " + " AND ".join(clauses)
    return sql, args
