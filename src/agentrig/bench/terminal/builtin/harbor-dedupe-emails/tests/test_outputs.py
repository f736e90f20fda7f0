"""Hidden tests for harbor-dedupe-emails."""

from pathlib import Path

EXPECTED = [
    "alice@example.org",
    "bob@example.org",
    "carol.w@example.net",
    "dave+news@example.com",
    "erin@example.com",
]


def test_unique_sorted_lowercase():
    assert Path("/app/unique_emails.txt").read_text().splitlines() == EXPECTED


def test_no_trailing_spaces_or_blank_lines():
    for line in Path("/app/unique_emails.txt").read_text().splitlines():
        assert line and line == line.strip()
