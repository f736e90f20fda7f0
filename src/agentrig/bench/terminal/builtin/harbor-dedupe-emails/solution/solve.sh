#!/bin/bash
grep -v '^[[:space:]]*#' /app/signups.txt | sed 's/^[[:space:]]*//; s/[[:space:]]*$//' \
  | grep -v '^$' | tr 'A-Z' 'a-z' | LC_ALL=C sort -u > /app/unique_emails.txt
cat /app/unique_emails.txt
