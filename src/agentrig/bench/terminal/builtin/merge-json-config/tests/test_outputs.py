"""Hidden tests for merge-json-config."""

import hashlib
import json
from pathlib import Path

C = Path("/app/config")
EXPECTED = {
    "service": {"name": "ledger", "port": 8000, "workers": 8},
    "database": {"host": "db.internal", "pool": {"min": 1, "max": 20}, "options": ["ssl", "readonly"]},
    "features": {"audit_log": False},
    "log_level": "warning",
    "region": "eu-west",
}
INPUT_SHA256 = {"defaults.json": "ff59359ec83f78328de9b64600d4ba0122394e9eb1948c7ae05beb8c7c34834c", "production.json": "f5e63d43cc4b3db74358303dfd745e35e29616eb0ebeeb6ce2fcab56993c74c2"}


def test_effective_config():
    assert json.loads((C / "effective.json").read_text()) == EXPECTED


def test_lists_replaced_not_concatenated():
    got = json.loads((C / "effective.json").read_text())
    assert got["database"]["options"] == ["ssl", "readonly"]


def test_inputs_unchanged():
    for name, digest in INPUT_SHA256.items():
        assert hashlib.sha256((C / name).read_bytes()).hexdigest() == digest, name
