"""Hidden tests for git-restore-file."""

import subprocess

REPO = "/app/site"
SETTINGS = "[server]\nport = 8081\nworkers = 3\n\n[cache]\nttl_seconds = 420\n"
OLD_SUBJECTS = ["Welcome text", "Add contact page", "Tidy up old files", "Add about page", "Initial site"]


def git(*args: str) -> str:
    return subprocess.run(["git", "-C", REPO, *args], check=True, capture_output=True, text=True).stdout


def test_file_restored_in_head():
    assert git("show", "HEAD:config/settings.ini") == SETTINGS


def test_one_new_commit_with_message():
    subjects = git("log", "--format=%s", "main").splitlines()
    assert subjects[0] == "Restore settings.ini"
    assert subjects[1:] == OLD_SUBJECTS


def test_history_not_rewritten():
    # the old commits keep their original dates and author: they are the same commits
    lines = git("log", "--format=%an|%ad", "--date=iso-strict", "main").splitlines()[1:]
    assert len(lines) == 5
    assert all(line.startswith("Dana Example|2024-03-01T10:00:00") for line in lines)


def test_other_files_unchanged():
    changed = git("diff", "--name-only", "HEAD~1", "HEAD").split()
    assert changed == ["config/settings.ini"]


def test_working_tree_clean():
    assert git("status", "--porcelain") == ""
