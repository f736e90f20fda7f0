#!/usr/bin/env bash
# A Docker daemon for the docker sandbox (and its tests), started only when none answers:
#   scripts/start-dockerd.sh [DIR]
# Prints `DOCKER_HOST=unix://…` of the daemon that answers (the one DOCKER_HOST names, the system's
# at /var/run/docker.sock, or agentrig's own) and, when this script started it, `started PID`.
# agentrig's own keeps everything under DIR (default ${XDG_CACHE_HOME:-~/.cache}/agentrig/dockerd):
# data-root DIR/data (its images: the imported base images stay for the next start), exec-root
# DIR/exec, pidfile DIR/dockerd.pid, socket DIR/docker.sock, log DIR/dockerd.log. Storage overlay2,
# vfs where the kernel refuses overlay (DOCKERD_STORAGE overrides); the runtime is runc (Debian's
# docker.io); dockerd runs its own containerd. agentrig finds this socket by itself when DOCKER_HOST
# is unset and there is no /var/run/docker.sock (sandbox/engine.py). Stop it with `kill PID` (the tests'
# session fixture stops only a daemon it started: tests/dockerd.py). Exit 1, said on stderr, when
# dockerd is missing or does not answer within 60 s. DOCKERD_FLAGS: more flags for dockerd (the
# tests' second daemon: --bridge=none --iptables=false, leaving the first one's network alone).
# agentrig's own daemon is experimental (--experimental): `docker build --squash` exists, so a build
# with the host's package-index settings leaves no copy of them in any layer (docs/terminal.md).
set -u
dir="${1:-${XDG_CACHE_HOME:-$HOME/.cache}/agentrig/dockerd}"
client="${DOCKER_CLIENT:-docker}"
answers() { timeout 20 "$client" -H "$1" version --format '{{.Server.Version}}' >/dev/null 2>&1; }
if [ -n "${DOCKER_HOST:-}" ] && answers "$DOCKER_HOST"; then echo "DOCKER_HOST=$DOCKER_HOST"; exit 0; fi
if [ -S /var/run/docker.sock ] && answers unix:///var/run/docker.sock; then
    echo "DOCKER_HOST=unix:///var/run/docker.sock"; exit 0
fi
sock="unix://$dir/docker.sock"
if [ -S "$dir/docker.sock" ] && answers "$sock"; then echo "DOCKER_HOST=$sock"; exit 0; fi
command -v dockerd >/dev/null 2>&1 || {
    echo "start-dockerd.sh: no dockerd on PATH (Debian: apt-get install docker.io; make containers installs it)" >&2
    exit 1
}
[ "$(id -u)" -eq 0 ] || { echo "start-dockerd.sh: dockerd needs root (this is uid $(id -u))" >&2; exit 1; }
mkdir -p "$dir/data" "$dir/exec"
storage="${DOCKERD_STORAGE:-}"
if [ -z "$storage" ]; then  # overlay2 where the kernel mounts overlayfs over DIR's filesystem
    probe="$(mktemp -d "$dir/overlay-probe.XXXXXX")"
    mkdir -p "$probe/l" "$probe/u" "$probe/w" "$probe/m"
    if mount -t overlay overlay -o "lowerdir=$probe/l,upperdir=$probe/u,workdir=$probe/w" "$probe/m" 2>/dev/null; then
        umount "$probe/m"; storage=overlay2
    else
        storage=vfs
    fi
    rm -rf "$probe"
fi
rm -f "$dir/docker.sock"
# setsid: the daemon outlives this script and is not in its caller's process group (a Ctrl-C of
# the tests does not take it down mid-teardown); its PID is the one dockerd writes to its pidfile.
setsid dockerd --data-root "$dir/data" --exec-root "$dir/exec" --pidfile "$dir/dockerd.pid" \
    -H "$sock" --storage-driver "$storage" --experimental ${DOCKERD_FLAGS:-} >"$dir/dockerd.log" 2>&1 </dev/null &
pid=$!
for _ in $(seq 1 120); do
    if answers "$sock"; then echo "DOCKER_HOST=$sock"; echo "started $pid"; exit 0; fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.5
done
echo "start-dockerd.sh: dockerd did not answer on $sock (log: $dir/dockerd.log):" >&2
tail -5 "$dir/dockerd.log" >&2
kill "$pid" 2>/dev/null
exit 1
