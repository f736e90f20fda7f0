#!/usr/bin/env bash
# Debian's chromium for the report's browser test (tests/report opens the report in it), minimal:
# `apt-get install --no-install-recommends chromium`, the packages listed before they are installed.
# Whether to install: under CI (CI=1/true/yes) always, and a failure fails; otherwise
# AGENTRIG_BROWSER=install|skip, or asked on a terminal (no terminal: skipped, the test skips).
# Overridable for tests: CHROMIUM_CMD (the browser's command), APT_GET (the apt-get to call).
set -u
CHROMIUM_CMD="${CHROMIUM_CMD:-chromium}"
APT_GET="${APT_GET:-apt-get}"
command -v "$CHROMIUM_CMD" >/dev/null 2>&1 && exit 0
case "${CI:-}" in 1|true|yes) ci=1;; *) ci=0;; esac
say() { echo "$*" >&2; }
say "chromium is missing: the report's browser test needs it (Debian's chromium, no recommended packages:"
say "  apt-get install --no-install-recommends chromium)."
choice="${AGENTRIG_BROWSER:-ask}"
if [ "$ci" = 1 ]; then choice=install; fi
if [ "$choice" = ask ]; then
    if [ -t 0 ]; then
        read -r -p "install it now? [y/N] " answer
        case "$answer" in y|Y|yes) choice=install;; *) choice=skip;; esac
    else
        choice=skip
    fi
fi
if [ "$choice" != install ]; then
    say "not installed: the report's browser test will skip (AGENTRIG_BROWSER=install make test installs it)"
    exit 0
fi
if [ "$(id -u)" -eq 0 ]; then SUDO=""; elif sudo -n true 2>/dev/null; then SUDO=sudo; else
    say "error: installing chromium needs root or sudo without a password"
    [ "$ci" = 1 ] && exit 1 || exit 0
fi
fail() { say "error: chromium could not be installed"; [ "$ci" = 1 ] && exit 1 || exit 0; }
$SUDO "$APT_GET" update -qq || fail
say "installing these packages:"
$SUDO "$APT_GET" install -s --no-install-recommends chromium 2>/dev/null | sed -n 's/^Inst \([^ ]*\).*/  \1/p' >&2
$SUDO env DEBIAN_FRONTEND=noninteractive "$APT_GET" install -y --no-install-recommends chromium || fail
