#!/bin/bash
set -e
cd /app/project
find . | sort
# directories that are empty before we start must survive the final sweep
find . -type d -empty | sort > /tmp/empty_before
find . -type f \( -name '*.tmp' -o -name '*.bak' \) -print -delete
find . -depth -type d -name __pycache__ -print -exec rm -rf {} +
find . -depth -mindepth 1 -type d -empty | sort | comm -23 - /tmp/empty_before | while read -r d; do
    rmdir "$d" && echo "removed $d"
done
# a parent may have become empty only after its child went
find . -depth -mindepth 1 -type d -empty | sort | comm -23 - /tmp/empty_before | xargs -r rmdir
find . | sort
