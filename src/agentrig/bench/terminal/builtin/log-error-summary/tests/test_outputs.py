"""Hidden tests for log-error-summary."""

import json
from pathlib import Path


def _summary():
    return json.loads(Path("/app/error_summary.json").read_text())


def test_errors_by_service_includes_rotated_file():
    # api: 2 in api.log + 1 in the rotated file; worker: 1; billing: 1 (rotated file only);
    # the WARN line that mentions "ERROR" in its message is not an ERROR line
    assert _summary()["errors_by_service"] == {"api": 3, "worker": 1, "billing": 1}


def test_first_error():
    assert _summary()["first_error"] == "2024-06-01T23:58:40Z"


def test_busiest_service():
    # api: 6 + 4 lines, worker: 7, billing: 2 + 1
    assert _summary()["busiest_service"] == "api"
