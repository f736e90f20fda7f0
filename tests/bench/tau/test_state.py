"""state.py: parse once per file version, independent cheap copies, record-level diffs."""

from __future__ import annotations

import datetime
import json
import os

import pytest

from agentrig.bench.tau import state
from agentrig.bench.tau.state import (
    apply_diff,
    equal_to_diff,
    fresh_copy,
    load_db,
    parse_db_file,
    record_diff,
    shared_db,
)
from agentrig.errors import DataError


def _write(path, data):
    path.write_text(json.dumps(data))
    return path


def test_copies_are_equal_and_independent(tmp_path):
    path = _write(tmp_path / "db.json", {"users": {"u1": {"tags": ["a"], "n": 1}}})
    a, b = load_db(path), load_db(path)
    assert a == b and a is not b
    a["users"]["u1"]["tags"].append("b")
    assert b["users"]["u1"]["tags"] == ["a"]
    assert load_db(path)["users"]["u1"]["tags"] == ["a"]


def test_parsed_once_per_file_version(tmp_path):
    path = _write(tmp_path / "db.json", {"v": 1})
    assert load_db(path) == {"v": 1}
    st = os.stat(path)
    # same size and mtime: the cached parse is served (the file is not read again)
    path.write_text(json.dumps({"v": 2}))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert load_db(path) == {"v": 1}
    # a new version of the file is parsed again
    path.write_text(json.dumps({"v": 33}))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10_000_000))
    assert load_db(path) == {"v": 33}


def test_normalizer_applied_once_and_cached_per_normalizer(tmp_path):
    path = _write(tmp_path / "db.json", {"x": 1})
    calls = []

    def norm(db):
        calls.append(1)
        return {**db, "normalized": True}

    assert load_db(path, norm) == {"x": 1, "normalized": True}
    assert load_db(path, norm) == {"x": 1, "normalized": True}
    assert load_db(path) == {"x": 1}
    assert len(calls) == 1


def test_toml_with_datetimes_falls_back_to_pickle(tmp_path):
    path = tmp_path / "db.toml"
    path.write_text('[device]\nwhen = 2025-01-20T14:30:00\nlevel = 80\n')
    a = load_db(path)
    assert a == {"device": {"when": datetime.datetime(2025, 1, 20, 14, 30), "level": 80}}
    a["device"]["level"] = 1
    assert load_db(path)["device"]["level"] == 80


def test_bad_files_are_data_errors(tmp_path):
    bad = tmp_path / "db.json"
    bad.write_text("{not json")
    with pytest.raises(DataError, match="db.json: malformed db file"):
        load_db(bad)
    with pytest.raises(DataError, match="not found"):
        load_db(tmp_path / "missing.json")
    lst = _write(tmp_path / "list.json", [1, 2])
    with pytest.raises(DataError, match="object at the top level"):
        parse_db_file(lst)
    other = tmp_path / "db.yaml"
    other.write_text("a: 1")
    with pytest.raises(DataError, match="unsupported db file type"):
        parse_db_file(other)


def test_real_airline_db_copies_are_independent(tau2_root):
    path = tau2_root / "domains" / "airline" / "db.json"
    copies = [load_db(path) for _ in range(3)]  # parsed once per process, then copied
    assert copies[0] == copies[2] and copies[0] is not copies[2]
    first_user = next(iter(copies[0]["users"]))
    copies[0]["users"][first_user]["name"] = "changed"
    assert copies[1]["users"][first_user]["name"] != "changed" and load_db(path) == copies[2]


def test_fresh_copy():
    obj = {"a": [1, {"b": 2}], "c": (1, 2)}
    c = fresh_copy(obj)
    assert c == obj
    c["a"][1]["b"] = 3
    assert obj["a"][1]["b"] == 2
    assert fresh_copy(5) == 5 and fresh_copy(None) is None


def test_record_diff_roundtrip(tau2_root):
    path = tau2_root / "domains" / "airline" / "db.json"
    base = shared_db(path)
    assert shared_db(path) is base
    s = load_db(path)
    assert record_diff(base, s).empty
    s["users"]["mia_li_3668"]["membership"] = "regular"
    s["reservations"]["NEW001"] = {"reservation_id": "NEW001"}
    del s["reservations"]["4WQ150"]
    d = record_diff(base, s)
    assert d.changed_keys() == ["reservations", "users"]
    assert equal_to_diff(s, base, d)
    assert apply_diff(base, d) == s
    # the diff holds copies: changing the state afterwards does not change the diff
    s["users"]["mia_li_3668"]["membership"] = "gold"
    assert not equal_to_diff(s, base, d)
    s["users"]["mia_li_3668"]["membership"] = "regular"
    assert equal_to_diff(s, base, d)
    for change in (
        lambda x: x["flights"]["HAT001"].update(origin="XXX"),  # a record outside the diff
        lambda x: x["reservations"].pop("NEW001"),  # an added record missing
        lambda x: x["reservations"].update({"4WQ150": {}}),  # a removed record back
        lambda x: x.update(extra={}),  # a new top-level key
    ):
        t = fresh_copy(s)
        change(t)
        assert not equal_to_diff(t, base, d)


def test_record_diff_whole_values_and_none():
    base = {"plans": [1, 2], "n": 1}
    s = {"plans": [1, 3], "n": 1}
    d = record_diff(base, s)
    assert d.changed_keys() == ["plans"]
    assert equal_to_diff(s, base, d) and not equal_to_diff(base, base, d)
    assert equal_to_diff(None, None, record_diff(None, None))
    assert state.apply_diff(base, d) == s
