"""Domain state: parse each db file once per process, hand every trial its own copy, cheaply.

``load_db(path)`` parses ``db.json`` / ``db.toml`` the first time it sees a file (keyed by the
resolved path, its mtime and size, and the normalizer), keeps a ``marshal`` blob of the result
and returns a fresh, independent copy per call; ``shared_db(path)`` keeps the parsed file itself
(read only), made from the blob when there is one and the blob from it when it comes first. ``marshal.loads`` of airline's 7 MB db takes ~10 ms
with the cyclic garbage collector paused (it is, for the duration of the copy: a copy allocates
~10^5 containers, and letting the collector run in the middle triples the cost); ``copy.deepcopy``
takes ~1 s, ``json.loads`` ~40 ms.

``record_diff`` / ``equal_to_diff`` compare a state with a pristine base at the level of records
(``db[collection][key]``): the gold state of a task is kept as the few records its gold actions
changed, not as a second 7 MB copy.
"""

from __future__ import annotations

import gc
import json
import functools
import marshal
import os
import pickle
import threading
import tomllib
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

from agentrig.errors import DataError

Normalizer = Callable[[dict], dict]

_lock = threading.Lock()
# resolved path -> (stamp, {normalizer: blob}); blob = (kind, bytes)
_blobs: dict[str, tuple[tuple, dict[Any, tuple[str, bytes]]]] = {}
# (resolved path, normalizer) -> (stamp, shared read-only state)
_shared: dict[tuple[str, Any], tuple[tuple, dict]] = {}


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector (re-entrant). Around work whose big temporaries are
    freed before it ends (a copy of a state judged and dropped), this saves the collector's
    passes over ~10^5 fresh containers; the state data itself has no reference cycles."""
    was_enabled = gc.isenabled()
    if was_enabled:
        gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _dump(obj: Any) -> tuple[str, bytes]:
    try:
        return "m", marshal.dumps(obj)
    except ValueError:  # a type marshal cannot hold (e.g. a TOML datetime)
        return "p", pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)


def _load(blob: tuple[str, bytes]) -> Any:
    kind, data = blob
    with gc_paused():
        return marshal.loads(data) if kind == "m" else pickle.loads(data)


def fresh_copy(obj: Any) -> Any:
    """An independent deep copy of plain data (dicts, lists, scalars; anything picklable)."""
    if obj is None or isinstance(obj, (str, int, float, bool)):
        return obj
    return _load(_dump(obj))


def parse_db_file(path: Path) -> dict:
    """Parse a db file (.json or .toml) into plain data; a malformed file is a DataError."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise DataError(f"{path}: cannot read the db file ({exc.strerror or exc}); check the data root") from exc
    suffix = path.suffix.lower()
    try:
        if suffix == ".json":
            data = json.loads(raw)
        elif suffix == ".toml":
            data = tomllib.loads(raw.decode("utf-8"))
        else:
            raise DataError(f"{path}: unsupported db file type {suffix!r}; expected .json or .toml")
    except (json.JSONDecodeError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: malformed db file: {exc}; restore it from tau2-bench's data") from exc
    if not isinstance(data, dict):
        raise DataError(f"{path}: the db file must hold an object at the top level, got {type(data).__name__}")
    return data


def _stamp(path: str) -> tuple:
    try:
        st = os.stat(path)
    except OSError as exc:
        raise DataError(f"{path}: db file not found ({exc.strerror or exc}); check the data root") from exc
    return (st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=1024)
def _resolved(path: str) -> str:
    return str(Path(path).resolve())


def _parse(resolved: str, normalize: Normalizer | None) -> dict:
    """The file parsed and normalized, the collector paused (the ~10^5 containers it makes are all
    alive at the end: a collection in the middle would only walk them)."""
    with gc_paused():
        data = parse_db_file(Path(resolved))
        return normalize(data) if normalize is not None else data


def _blob_for(path: Path, normalize: Normalizer | None) -> tuple[str, bytes]:
    key = _resolved(str(path))
    stamp = _stamp(key)
    with _lock:
        entry = _blobs.get(key)
        if entry is not None and entry[0] == stamp and normalize in entry[1]:
            return entry[1][normalize]
    with _lock:
        shared = _shared.get((key, normalize))
    # the shared state is the parsed file, unchanged (read only): its blob is the file's
    data = shared[1] if shared is not None and shared[0] == stamp else _parse(key, normalize)
    blob = _dump(data)
    with _lock:
        entry = _blobs.get(key)
        if entry is None or entry[0] != stamp:
            entry = (stamp, {})
            _blobs[key] = entry
        entry[1][normalize] = blob
    return blob


class CowTable(dict):
    """One table (id -> record) of a trial's state over the shared pristine table: a record is
    copied the first time the trial reads it BY KEY (``t[k]``, ``t.get(k)``) — tools fetch a
    record by key before they change it — and scans (``values()``, ``items()``, iteration) see
    the pristine record until then. So a trial copies the few records it touches instead of the
    whole db, and its end state is compared with the gold record by record only where either
    side changed something (``equal_to_diff``). Tools must not change a record they reached by a
    scan (none does: scans are searches; ``tests/bench/tau/test_cow_state.py`` checks that the
    pristine state is untouched after every task of the data is played)."""

    __slots__ = ("_base", "_own")

    def __init__(self, base: dict):
        dict.__init__(self, base)
        self._base = base
        self._own: set = set()  # keys whose value is the trial's own (copied, set or deleted)

    def __getitem__(self, key):
        value = dict.__getitem__(self, key)
        if key not in self._own:
            value = fresh_copy(value)
            dict.__setitem__(self, key, value)
            self._own.add(key)
        return value

    def get(self, key, default=None):
        return self[key] if dict.__contains__(self, key) else default

    def __setitem__(self, key, value) -> None:
        self._own.add(key)
        dict.__setitem__(self, key, value)

    def __delitem__(self, key) -> None:
        self._own.add(key)
        dict.__delitem__(self, key)

    def pop(self, key, *default):
        if dict.__contains__(self, key):
            value = self[key]
            del self[key]
            return value
        if default:
            return default[0]
        raise KeyError(key)

    def setdefault(self, key, default=None):
        if dict.__contains__(self, key):
            return self[key]
        self[key] = default
        return default

    def update(self, *args, **kwargs) -> None:
        for key, value in dict(*args, **kwargs).items():
            self[key] = value

    def materialize(self) -> dict:
        """A plain dict with the trial's own records and copies of all the others."""
        return {k: (v if k in self._own else fresh_copy(v)) for k, v in dict.items(self)}

    def __reduce__(self):  # copies and pickles are plain dicts
        return (dict, (self.materialize(),))


def cow_state(base: dict) -> dict:
    """A trial's state over a shared pristine state (see CowTable): tables are CowTables, any other
    top-level value a copy."""
    return {k: CowTable(v) if isinstance(v, dict) else fresh_copy(v) for k, v in base.items()}


def materialize(state: dict | None) -> dict | None:
    """The same state with every CowTable turned into a plain dict of independent records."""
    if state is None:
        return None
    return {k: v.materialize() if isinstance(v, CowTable) else v for k, v in state.items()}


def load_db(path: Path, normalize: Normalizer | None = None) -> dict:
    """A fresh, independent copy of the (normalized) db file; parsed once per process."""
    return _load(_blob_for(path, normalize))


def shared_db(path: Path, normalize: Normalizer | None = None) -> dict:
    """The pristine state of a db file, shared: READ ONLY (a base for ``record_diff``)."""
    key = (_resolved(str(path)), normalize)
    stamp = _stamp(key[0])
    with _lock:
        entry = _shared.get(key)
        if entry is not None and entry[0] == stamp:
            return entry[1]
    with _lock:
        blobs = _blobs.get(key[0])
    if blobs is not None and blobs[0] == stamp and normalize in blobs[1]:
        data = _load(blobs[1][normalize])
    else:  # the parsed file itself: no copy of it to make
        data = _parse(key[0], normalize)
    with _lock:
        _shared[key] = (stamp, data)
    return data


def clear_cache() -> None:
    """Forget every parsed file (tests; a long process after the data changed)."""
    with _lock:
        _blobs.clear()
        _shared.clear()


# ---- record-level diffs -------------------------------------------------------------------------

_MISSING = object()


class StateDiff:
    """How a state differs from a base, by top-level key and, for dict values, by record.

    ``records[k]`` = ({record_key: copied record}, {removed record keys}) for a top-level dict
    value; ``whole[k]`` = a copied value (or ``_MISSING`` when the key is gone) otherwise.
    """

    __slots__ = ("records", "whole")

    def __init__(self) -> None:
        self.records: dict[str, tuple[dict, set]] = {}
        self.whole: dict[str, Any] = {}

    @property
    def empty(self) -> bool:
        return not self.records and not self.whole

    def changed_keys(self) -> list[str]:
        return sorted({*self.records, *self.whole})


def record_diff(base: dict | None, state: dict | None) -> StateDiff:
    """The difference of ``state`` from ``base`` (records copied, so later changes do not leak)."""
    diff = StateDiff()
    if base is None or state is None:
        diff.whole["<root>"] = fresh_copy(state)
        return diff
    for k in base.keys() | state.keys():
        b = base.get(k, _MISSING)
        s = state.get(k, _MISSING)
        if isinstance(s, CowTable) and s._base is b:  # only the records the trial touched can differ
            changed = {}
            removed = set()
            for rk in s._own:
                rv = dict.get(s, rk, _MISSING)
                if rv is _MISSING:
                    if rk in b:
                        removed.add(rk)
                elif b.get(rk, _MISSING) != rv:
                    changed[rk] = rv
            if changed or removed:
                diff.records[k] = (fresh_copy(changed), removed)
            continue
        if b is not _MISSING and s is not _MISSING and b == s:
            continue
        if isinstance(b, dict) and isinstance(s, dict):
            get = b.get
            changed = {rk: rv for rk, rv in s.items() if get(rk, _MISSING) != rv}
            removed = b.keys() - s.keys()
            diff.records[k] = (fresh_copy(changed), removed)
        else:
            diff.whole[k] = _MISSING if s is _MISSING else fresh_copy(s)
    return diff


def equal_to_diff(state: dict | None, base: dict | None, diff: StateDiff) -> bool:
    """Whether ``state`` equals ``base`` with ``diff`` applied (dict ``==`` semantics)."""
    if "<root>" in diff.whole:
        return state == diff.whole["<root>"]
    if state is None or base is None:
        return state is base
    keys = (base.keys() | {k for k, v in diff.whole.items() if v is not _MISSING}) - {
        k for k, v in diff.whole.items() if v is _MISSING
    }
    if state.keys() != keys:
        return False
    for k, s in state.items():
        if k in diff.whole:
            if s != diff.whole[k]:
                return False
            continue
        b = base[k]
        rec = diff.records.get(k)
        if isinstance(s, CowTable) and s._base is b:
            if not _cow_equal(s, b, rec):
                return False
            continue
        if rec is None:
            if s != b:
                return False
            continue
        changed, removed = rec
        if not isinstance(s, dict):
            return False
        if len(s) != len(b.keys() - removed | changed.keys()):
            return False
        for rk, rv in s.items():
            want = changed.get(rk, _MISSING)
            if want is _MISSING:
                if rk in removed:
                    return False
                want = b.get(rk, _MISSING)
                if want is _MISSING:
                    return False
            if rv != want:
                return False
    return True


def apply_diff(base: dict | None, diff: StateDiff) -> dict | None:
    """A fresh full state: ``base`` with ``diff`` applied."""
    if "<root>" in diff.whole:
        return fresh_copy(diff.whole["<root>"])
    state = fresh_copy(base)
    for k, v in diff.whole.items():
        if v is _MISSING:
            state.pop(k, None)
        else:
            state[k] = fresh_copy(v)
    for k, (changed, removed) in diff.records.items():
        target = state.setdefault(k, {})
        for rk in removed:
            target.pop(rk, None)
        target.update(fresh_copy(changed))
    return state


def _cow_equal(s: CowTable, b: dict, rec: tuple[dict, set] | None) -> bool:
    """A CowTable over ``b`` against ``b`` with the gold's changes ``rec`` applied: only the keys
    either side touched can differ."""
    changed, removed = rec if rec is not None else ({}, set())
    if len(s) != len(b.keys() - removed | changed.keys()):
        return False
    for rk in removed:
        if dict.__contains__(s, rk):
            return False
    for rk in changed:
        if not dict.__contains__(s, rk):
            return False
    for rk in s._own | changed.keys():
        have = dict.get(s, rk, _MISSING)
        want = changed.get(rk, _MISSING)
        if want is _MISSING:
            want = b.get(rk, _MISSING)
        if have is _MISSING or want is _MISSING:
            if have is not want:
                return False
        elif have != want:
            return False
    return True
