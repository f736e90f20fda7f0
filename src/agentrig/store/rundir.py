"""A run directory on disk: its file names, opening one to play into (``open_run``) and opening one
that `agentrig run` wrote (``open_run_dir``, for the readers: analyze, compare, report…).

``open_run`` first claims the directory (store/owner.py: it is made, checked, and locked for this
process's lifetime; a directory another run holds is refused naming the holder); ``open_run_dir``
takes no lock, so readers are never blocked by a run in progress.

``open_run`` is the one place where a run's snapshots are compared and written: the comparability
snapshot (what makes two trials comparable; run/snapshot.py builds it from the experiment) is
compared with the stored one (``differences``: an arm, a task, a domain or a role present on one
side only is an addition, not a difference — more trials, still comparable), an incomparable
directory is refused (or, with ``force``, the next of ``dir-2``, ``dir-3`` … is used), and the
config snapshot is written to the store's ``config`` meta and ``config.json`` (``write_config``).
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from agentrig.errors import DataError

from agentrig.store.owner import Owner, RunDirBusy, claim, reader_dir
from agentrig.store.store import Store

STORE_FILE = "trials.sqlite"
CONFIG_FILE = "config.json"
# containers whose children may appear or disappear between runs ("*" matches any name)
ADDITIVE = {("arms",), ("tasks",), ("domains",), ("domains", "*", "policies"), ("arms", "*", "roles")}


def open_run_dir(run_dir: Path) -> tuple[Store, dict]:
    """A run directory's store (read-only use) and its configuration snapshot."""
    run_dir = reader_dir(Path(run_dir), STORE_FILE)
    path = run_dir / STORE_FILE
    if not path.is_file():
        if (run_dir / "smoke" / STORE_FILE).is_file():
            raise DataError(f"{run_dir}: no trials played yet, only a smoke check (`agentrig run --smoke`); "
                            f"its trials are a run directory of their own: {run_dir / 'smoke'}")
        raise DataError(f"{run_dir}: not a run directory (no {STORE_FILE}); give the directory "
                        "`agentrig run` printed")
    store = Store.open(path, create=False)
    config = store.get_meta("config")
    if config is None:
        cfg_file = run_dir / CONFIG_FILE
        if not cfg_file.is_file():
            smoke = (store.get_meta("run") or {}).get("smoke")
            store.close()
            if smoke:
                raise DataError(f"{run_dir}: a smoke check's store written by an older agentrig, without the "
                                "configuration snapshot a reader needs; run `agentrig run EXPERIMENT --smoke` again")
            raise DataError(f"{run_dir}: the run's configuration snapshot is missing ({CONFIG_FILE})")
        config = json.loads(cfg_file.read_text(encoding="utf-8"))
    return store, config


# ------------------------------------------------------------------------- comparing snapshots


_ABSENT = object()


def _show(value: Any) -> str:
    if value is _ABSENT:
        return "(absent)"
    text = json.dumps(value, sort_keys=True, ensure_ascii=False)
    return text if len(text) <= 80 else text[:79] + "…"


def _additive(path: tuple[str, ...]) -> bool:
    for pattern in ADDITIVE:
        if len(pattern) == len(path) and all(p == "*" or p == q for p, q in zip(pattern, path)):
            return True
    return False


def differences(old: dict, new: dict) -> list[str]:
    """``field: old → new`` for every compared value that changed."""
    out: list[str] = []

    def walk(a: Any, b: Any, path: tuple[str, ...]) -> None:
        if isinstance(a, dict) and isinstance(b, dict):
            additive = _additive(path)
            for k in sorted(set(a) | set(b)):
                if k in a and k in b:
                    walk(a[k], b[k], path + (k,))
                elif not additive:
                    out.append(f"{'.'.join(path + (k,))}: {_show(a.get(k, _ABSENT))} → {_show(b.get(k, _ABSENT))}")
        elif a != b:
            out.append(f"{'.'.join(path) or '(all)'}: {_show(a)} → {_show(b)}")

    walk(old, new, ())
    return out


def merged(old: dict, new: dict) -> dict:
    """The stored snapshot after a comparable rerun: the old one with the new additions."""
    def walk(a: Any, b: Any, path: tuple[str, ...]) -> Any:
        if isinstance(a, dict) and isinstance(b, dict) and _additive(path):
            out = dict(a)
            for k, v in b.items():
                out[k] = walk(a[k], v, path + (k,)) if k in a else v
            return out
        if isinstance(a, dict) and isinstance(b, dict):
            return {k: walk(a[k], b[k], path + (k,)) if k in a else b[k] for k in b}
        return a
    return walk(old, new, ())


# ---------------------------------------------------------------------- opening one to play into


@dataclass
class Run:
    dir: Path
    store: Store
    run_id: str
    created: bool  # a new run (nothing stored before)
    note: str | None = None  # e.g. why --force chose another directory, or a takeover from a killed run
    owner: Owner | None = None  # the directory's lock, held until ``close``

    def close(self) -> None:
        try:
            self.store.close()
        finally:
            if self.owner is not None:
                self.owner.release()


def new_run_id(name: str) -> str:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return f"{name}-{stamp}-{secrets.token_hex(3)}"


def write_config(directory: Path, store: Store, config: dict[str, Any]) -> None:
    """The config snapshot, in the store's ``config`` meta and in ``config.json`` beside it."""
    store.set_meta("config", config)
    (Path(directory) / CONFIG_FILE).write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n",
                                               encoding="utf-8")


def _candidates(base: Path):
    yield base
    n = 2
    while True:
        yield base.with_name(f"{base.name}-{n}")
        n += 1


def _incomparable(directory: Path, store_file: str, comparability: dict[str, Any]) -> list[str]:
    """The differences of a directory another process holds (read without its lock), if any."""
    if not (directory / store_file).is_file():
        return []
    store = Store.open(directory / store_file, create=False)
    try:
        old = store.get_meta("comparability")
    finally:
        store.close()
    return differences(old, comparability) if old is not None else []


def open_run(base: Path, *, name: str, comparability: dict[str, Any], config_for: Callable[[str], dict[str, Any]],
             refusal: Callable[[Path, list[str]], Exception], force: bool = False,
             store_file: str = STORE_FILE) -> Run:
    """Open (or create) the run directory ``base`` to play into, holding its owner lock until
    ``Run.close``; refuses an incomparable one, and one another process holds (``RunDirBusy``).

    ``config_for(run_id)`` gives the config snapshot to write; ``refusal(directory, diffs)`` the
    error to raise for an incomparable directory. With ``force``, the first of ``base``,
    ``base-2``, ``base-3`` … that is new or holds a comparable run is used (so rerunning with
    --force resumes the forced run)."""
    first_diffs: list[str] | None = None
    for directory in _candidates(Path(base)):
        try:
            owner = claim(directory, f"agentrig run ({name})")
        except RunDirBusy:
            if not force:
                raise
            diffs = _incomparable(directory, store_file, comparability)
            if not diffs:  # the held directory is the one to use: refused
                raise
            first_diffs = first_diffs if first_diffs is not None else diffs
            continue
        try:
            store = Store.open(directory / store_file)
        except BaseException:
            owner.release()
            raise
        try:
            old = store.get_meta("comparability")
            diffs = differences(old, comparability) if old is not None else []
            if diffs:
                if not force:
                    raise refusal(directory, diffs)
                first_diffs = first_diffs if first_diffs is not None else diffs
                store.close()
                owner.release()
                continue
            run_meta = store.get_meta("run") or {}
            run_id = run_meta.get("run_id") or new_run_id(name)
            now = datetime.now(timezone.utc).isoformat(timespec="seconds")
            if not run_meta:
                store.set_meta("run", {"run_id": run_id, "name": name, "created_at": now})
            store.set_meta("comparability", merged(old, comparability) if old is not None else comparability)
            write_config(directory, store, config_for(run_id))
        except BaseException:
            store.close()
            owner.release()
            raise
        notes = [owner.stale_note()]
        if directory != Path(base):
            what = "a new run" if old is None else "the comparable run there"
            notes.append(f"the configuration differs from the run in {base} ({len(first_diffs or [])} "
                         f"difference(s)); --force: using {what} in {directory}")
        note = "\n".join(n for n in notes if n) or None
        return Run(directory, store, run_id, created=old is None, note=note, owner=owner)
    raise AssertionError("unreachable")  # pragma: no cover
