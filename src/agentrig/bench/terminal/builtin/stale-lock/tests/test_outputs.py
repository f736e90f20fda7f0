"""Hidden tests for stale-lock."""

from pathlib import Path


def test_status_written():
    assert Path("/app/status.txt").read_text() == "collector=ok\nchecks=1\n"


def test_lock_released():
    assert not Path("/app/run/collect.lock").exists()


def test_collector_not_edited():
    text = Path("/app/tools/collect.sh").read_text()
    assert 'while [ -e "$LOCK" ]; do' in text and "sleep 1" in text
