#!/bin/bash
# Builds the task's repository (run once at build time).
set -eu
export GIT_AUTHOR_NAME="Dana Example" GIT_AUTHOR_EMAIL="dana@example.invalid"
export GIT_COMMITTER_NAME="Dana Example" GIT_COMMITTER_EMAIL="dana@example.invalid"
export GIT_AUTHOR_DATE="2024-03-01T10:00:00Z" GIT_COMMITTER_DATE="2024-03-01T10:00:00Z"
mkdir -p /app/site && cd /app/site
git init -q -b main
git config user.name "Dana Example"
git config user.email "dana@example.invalid"
mkdir -p config pages
printf '# Site\nA small static site.\n' > README.md
printf '[server]\nport = 8081\nworkers = 3\n\n[cache]\nttl_seconds = 420\n' > config/settings.ini
printf '<h1>Home</h1>\n' > pages/index.html
git add -A && git commit -q -m "Initial site"
printf '<h1>About</h1>\n' > pages/about.html
git add -A && git commit -q -m "Add about page"
git rm -q config/settings.ini
printf 'Cleanup of old files.\n' >> README.md
git add -A && git commit -q -m "Tidy up old files"
printf '<h1>Contact</h1>\n' > pages/contact.html
git add -A && git commit -q -m "Add contact page"
printf '<h1>Home</h1>\n<p>Welcome.</p>\n' > pages/index.html
git add -A && git commit -q -m "Welcome text"
