"""Hidden tests for clean-temp-files: the leftovers are gone and nothing else is."""

from pathlib import Path

P = Path("/app/project")

KEPT_FILES = {
    "src/app/main.py": 'print("main")\n',
    "src/lib/helper.py": "def helper():\n    return 1\n",
    "docs/guide.md": "notes\n",
    "docs/notes.tmp.txt": "keep me: .tmp is not the suffix\n",
    "backup.bak.d/README": "keep me too\n",
    "settings.bak.json": "settings\n",
    "data/table.csv": "rows\n",
    ".config": "hidden keep\n",
}
KEPT_DIRS = {"src", "src/app", "src/lib", "docs", "logs", "logs/empty_on_purpose", "backup.bak.d",
             "data"}
GONE = ["src/lib/helper.py.bak", "docs/drafts/intro.md.tmp", "scratch/session.tmp", "scratch/upload 2.tmp",
        ".tmp", "src/app/__pycache__", "data/cache/__pycache__", "docs/drafts", "scratch", "data/cache"]


def test_leftovers_deleted():
    still_there = [g for g in GONE if (P / g).exists()]
    assert still_there == []


def test_other_files_kept_unchanged():
    for rel, content in KEPT_FILES.items():
        assert (P / rel).is_file(), rel
        assert (P / rel).read_text() == content, rel


def test_nothing_else_deleted_or_added():
    files = {str(p.relative_to(P)) for p in P.rglob("*") if p.is_file()}
    dirs = {str(p.relative_to(P)) for p in P.rglob("*") if p.is_dir()}
    assert files == set(KEPT_FILES)
    assert dirs == KEPT_DIRS


def test_already_empty_directory_kept():
    assert (P / "logs/empty_on_purpose").is_dir()
