#!/bin/bash
set -e
cd /app/site
git log --oneline --stat | head -30
# the commit that deleted the file, then its content one commit earlier
gone=$(git log --format=%H --diff-filter=D -n 1 -- config/settings.ini)
git checkout "${gone}^" -- config/settings.ini
git -c user.name="Oracle" -c user.email="oracle@example.invalid" commit -q -m "Restore settings.ini"
git status --short
git log --oneline | head -3
