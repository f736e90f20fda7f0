"""Hidden tests for write-marker (the smoke task)."""

from pathlib import Path


def test_marker_file():
    assert Path("/app/marker.txt").read_text().strip() == "agentrig-ok"
