"""Hidden tests for word-frequency."""

from pathlib import Path

EXPECTED = ["11 the", "5 at", "4 tide", "3 boats", "3 harbour"]


def _lines():
    return [" ".join(line.split()) for line in Path("/app/top_words.txt").read_text().splitlines() if line.strip()]


def test_five_lines():
    assert len(_lines()) == 5


def test_counts_and_order():
    assert _lines() == EXPECTED


def test_tie_broken_alphabetically():
    # boats, harbour and rain all occur three times: rain is the one left out
    assert "3 rain" not in _lines()
