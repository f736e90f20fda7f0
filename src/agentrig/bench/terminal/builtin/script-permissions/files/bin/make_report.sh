#!/bin/bash
# Writes a short report of the files under /app/data.
set -eu
{
  echo "report: data files"
  for f in /app/data/*; do
    printf '%s %s\n' "$(basename "$f")" "$(wc -c < "$f")"
  done
} > /app/report.txt
