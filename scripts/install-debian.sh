#!/usr/bin/env bash
# Debian packages the test suite (and the demo) needs, installed minimally and said first:
#   scripts/install-debian.sh [--with-recommends] WHAT COMMAND... -- PACKAGE...
# WHAT names the feature in messages and the variable that decides (browser → AGENTRIG_BROWSER,
# containers → AGENTRIG_CONTAINERS, docker → AGENTRIG_DOCKER, mmdebstrap → AGENTRIG_MMDEBSTRAP); nothing is done when every
# COMMAND is already on PATH. Otherwise `apt-get install --no-install-recommends PACKAGE...` (with
# --with-recommends, their recommended packages too: podman's and mmdebstrap's helpers), the
# packages listed before they are installed. Whether to install: under CI (CI=1/true/yes) always,
# and a failure fails; otherwise AGENTRIG_<WHAT>=install|skip, AGENTRIG_SYSTEM=install|skip for all
# of them, or asked on a terminal (no terminal: skipped, and the tests that need it skip).
# Overridable for tests: APT_GET (the apt-get to call); CHROMIUM_CMD (the browser's command, kept
# for the browser's callers).
set -u
recommends=--no-install-recommends
if [ "${1:-}" = --with-recommends ]; then recommends=""; shift; fi
what="${1:?usage: install-debian.sh WHAT COMMAND... -- PACKAGE...}"; shift
cmds=(); while [ $# -gt 0 ] && [ "$1" != -- ]; do cmds+=("$1"); shift; done
[ "${1:-}" = -- ] && shift
pkgs=("$@")
[ ${#pkgs[@]} -gt 0 ] || { echo "install-debian.sh: no packages named after --" >&2; exit 2; }
APT_GET="${APT_GET:-apt-get}"
missing=()
for c in "${cmds[@]}"; do command -v "$c" >/dev/null 2>&1 || missing+=("$c"); done
[ ${#missing[@]} -eq 0 ] && exit 0
case "${CI:-}" in 1|true|yes) ci=1;; *) ci=0;; esac
var="AGENTRIG_$(echo "$what" | tr '[:lower:]-' '[:upper:]_')"
say() { echo "$*" >&2; }
case "$what" in
  browser)    why="the report's browser test needs it";;
  containers) why="the container sandbox's tests (podman with runc) and the services' network (slirp4netns) need them";;
  mmdebstrap) why="terminal tasks' base images are built from packages with it";;
  docker)     why="the docker sandbox's tests need Debian's Docker daemon (they start it themselves)";;
  *)          why="the tests need it";;
esac
if [ -n "$recommends" ]; then how="no recommended packages"; else how="with their recommended packages"; fi
say "${missing[*]} missing: $why (Debian's ${pkgs[*]}, $how:"
say "  apt-get install${recommends:+ $recommends} ${pkgs[*]})."
choice="${!var:-${AGENTRIG_SYSTEM:-ask}}"
if [ "$ci" = 1 ]; then choice=install; fi
if [ "$choice" = ask ]; then
    if [ -t 0 ]; then
        read -r -p "install now? [y/N] " answer
        case "$answer" in y|Y|yes) choice=install;; *) choice=skip;; esac
    else
        choice=skip
    fi
fi
if [ "$choice" != install ]; then
    say "not installed: the tests that need it will skip ($var=install make test installs it)"
    exit 0
fi
if [ "$(id -u)" -eq 0 ]; then SUDO=""; elif sudo -n true 2>/dev/null; then SUDO=sudo; else
    say "error: installing ${pkgs[*]} needs root or sudo without a password"
    [ "$ci" = 1 ] && exit 1 || exit 0
fi
fail() { say "error: ${pkgs[*]} could not be installed"; [ "$ci" = 1 ] && exit 1 || exit 0; }
$SUDO "$APT_GET" update -qq || fail
say "installing these packages:"
$SUDO "$APT_GET" install -s $recommends "${pkgs[@]}" 2>/dev/null | sed -n 's/^Inst \([^ ]*\).*/  \1/p' >&2
$SUDO env DEBIAN_FRONTEND=noninteractive "$APT_GET" install -y $recommends "${pkgs[@]}" || fail
