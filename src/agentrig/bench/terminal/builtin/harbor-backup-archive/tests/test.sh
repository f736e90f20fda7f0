#!/bin/bash
# Unpacks the backup into a scratch directory and compares it with the expected file list and
# contents; reward 1 only when every check holds.
mkdir -p /logs/verifier
fail() { echo "FAIL: $*"; echo 0 > /logs/verifier/reward.txt; exit 0; }

ARCHIVE=/app/backup/site.tar.gz
[ -f "$ARCHIVE" ] || fail "no archive at $ARCHIVE"
gzip -t "$ARCHIVE" 2>/dev/null || fail "not gzip-compressed"
SCRATCH=$(mktemp -d)
tar -xzf "$ARCHIVE" -C "$SCRATCH" || fail "cannot unpack"

got=$(cd "$SCRATCH" && find . -type f | LC_ALL=C sort | tr '\n' ' ')
want=$(tr '\n' ' ' < /tests/expected_files.txt)
[ "$got" = "$want" ] || fail "files in archive: $got; expected: $want"

(cd "$SCRATCH" && sha256sum -c --quiet /tests/expected_sha256.txt) || fail "content differs"
# the site itself must be untouched (the .log files and the cache included)
(cd /app && sha256sum -c --quiet /tests/site_sha256.txt) || fail "/app/site was modified"

echo "PASS"
echo 1 > /logs/verifier/reward.txt
