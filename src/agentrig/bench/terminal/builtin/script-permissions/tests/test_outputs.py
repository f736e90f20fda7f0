"""Hidden tests for script-permissions."""

import stat
from pathlib import Path

SCRIPT = Path("/app/bin/make_report.sh")
TOKEN = Path("/app/data/api_token.txt")


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_script_is_executable_by_owner():
    mode = _mode(SCRIPT)
    assert mode & stat.S_IXUSR, oct(mode)
    assert mode & stat.S_IRUSR and mode & stat.S_IRGRP and mode & stat.S_IROTH, oct(mode)
    assert not mode & (stat.S_IWGRP | stat.S_IWOTH), oct(mode)


def test_script_unchanged():
    assert "report: data files" in SCRIPT.read_text()


def test_report_written_by_script():
    lines = Path("/app/report.txt").read_text().splitlines()
    assert lines[0] == "report: data files"
    assert "api_token.txt 19" in lines
    assert "counts.csv 17" in lines


def test_token_mode_is_600():
    assert _mode(TOKEN) == 0o600, oct(_mode(TOKEN))


def test_token_unchanged():
    assert TOKEN.read_text() == "tok_3f9a7c21e8d4b6\n"
