#!/bin/bash
# Builds /app/project (run once at build time).
set -eu
P=/app/project
mkdir -p "$P/src/app/__pycache__" "$P/src/lib" "$P/docs/drafts" "$P/scratch" "$P/logs/empty_on_purpose" \
         "$P/backup.bak.d" "$P/data/cache/__pycache__"
printf 'print("main")\n' > "$P/src/app/main.py"
printf 'compiled\n' > "$P/src/app/__pycache__/main.cpython-311.pyc"
printf 'def helper():\n    return 1\n' > "$P/src/lib/helper.py"
printf 'old helper\n' > "$P/src/lib/helper.py.bak"
printf 'notes\n' > "$P/docs/guide.md"
printf 'half-written\n' > "$P/docs/drafts/intro.md.tmp"
printf 'swap\n' > "$P/scratch/session.tmp"
printf 'partial\n' > "$P/scratch/upload 2.tmp"
printf 'keep me: .tmp is not the suffix\n' > "$P/docs/notes.tmp.txt"
printf 'keep me too\n' > "$P/backup.bak.d/README"
printf 'settings\n' > "$P/settings.bak.json"
printf 'cached\n' > "$P/data/cache/__pycache__/x.pyc"
printf 'rows\n' > "$P/data/table.csv"
printf '' > "$P/.tmp"
printf 'hidden keep\n' > "$P/.config"
