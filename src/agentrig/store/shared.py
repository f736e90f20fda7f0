"""Large parts of recorded agent requests, stored once per run instead of once per trial.

Every trial records its agent requests (``Trajectory.agent_requests``); the first one holds the
agent's system prompt (the policy: kilobytes) and the tool schemas, the same for every trial of an
arm. Stored whole, they would triple a τ² trial's stored size. So the store keeps them in a table
of their own, ``shared(sha, value)`` (zlib JSON, content-addressed), and the trial's stored record
holds ``{"$shared": sha}`` in their place:

- a ``tail`` message with role ``system`` whose JSON has at least ``SHARE_MIN`` characters is
  replaced by ``{"$shared": sha}``;
- ``tools`` whose JSON has at least ``SHARE_MIN`` characters become ``[{"$shared": sha}]``.

``share`` does it on a copy of the record at ``Store.append`` (the caller's record is unchanged);
``resolve`` / ``resolve_raw`` put the values back when the store reads records, so every reader
(and every export) sees the requests whole. Part of the storage layer: imports nothing above it.
"""

from __future__ import annotations

import hashlib
import json
import zlib
from collections.abc import Callable
from typing import Any

from agentrig.types import TrialRecord

__all__ = ["SHARE_MIN", "DDL", "share", "resolve", "resolve_raw", "decode_value"]

SHARE_MIN = 1024
REF = "$shared"
DDL = "CREATE TABLE IF NOT EXISTS shared (sha TEXT PRIMARY KEY, value BLOB NOT NULL)"


_COMPRESSED: dict[str, bytes] = {}  # sha -> zlib JSON of values this process shared (the same
# system prompt and tools come back in every trial of an arm: compressed once, not per trial)
_COMPRESSED_MAX = 256


def _ref(value: Any, out: dict[str, bytes]) -> dict[str, str] | None:
    """A reference to ``value`` (its zlib JSON put in ``out``), or None when it is too small to share."""
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    if len(text) < SHARE_MIN:
        return None
    data = text.encode("utf-8")
    sha = hashlib.blake2b(data, digest_size=16).hexdigest()
    if sha not in out:
        blob = _COMPRESSED.get(sha)
        if blob is None:
            if len(_COMPRESSED) >= _COMPRESSED_MAX:
                _COMPRESSED.clear()
            blob = _COMPRESSED[sha] = zlib.compress(data, 6)
        out[sha] = blob
    return {REF: sha}


def share(record: TrialRecord) -> tuple[TrialRecord, dict[str, bytes]]:
    """The record to encode (large parts replaced by references) and the shared values (sha → zlib
    JSON) it refers to. The record itself when nothing is shared."""
    requests = record.trajectory.agent_requests
    if not requests:
        return record, {}
    values: dict[str, bytes] = {}
    changed = []
    for r in requests:
        tail = [(m.get("role") == "system" and _ref(m, values)) or m for m in r.tail]
        ref = _ref(r.tools, values) if r.tools is not None else None
        tools = [ref] if ref is not None else r.tools
        changed.append(r.model_copy(update={"tail": tail, "tools": tools}) if values else r)
    if not values:
        return record, {}
    traj = record.trajectory.model_copy(update={"agent_requests": changed})
    return record.model_copy(update={"trajectory": traj}), values


def decode_value(blob: bytes) -> Any:
    return json.loads(zlib.decompress(blob))


def _is_ref(value: Any) -> bool:
    return isinstance(value, dict) and len(value) == 1 and REF in value


def resolve_raw(data: dict, lookup: Callable[[str], Any]) -> dict:
    """A record as plain JSON data with its references replaced (in place; returned)."""
    for r in (data.get("trajectory") or {}).get("agent_requests") or []:
        r["tail"] = [lookup(m[REF]) if _is_ref(m) else m for m in r.get("tail") or []]
        tools = r.get("tools")
        if isinstance(tools, list) and len(tools) == 1 and _is_ref(tools[0]):
            r["tools"] = lookup(tools[0][REF])
    return data


def resolve(record: TrialRecord, lookup: Callable[[str], Any]) -> TrialRecord:
    """A decoded record with its references replaced (in place; returned)."""
    for r in record.trajectory.agent_requests:
        if any(_is_ref(m) for m in r.tail):
            r.tail = [lookup(m[REF]) if _is_ref(m) else m for m in r.tail]
        if r.tools is not None and len(r.tools) == 1 and _is_ref(r.tools[0]):
            r.tools = lookup(r.tools[0][REF])
    return record
