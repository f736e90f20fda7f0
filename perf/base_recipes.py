"""The official images' recipes (images/official.py): each root built once, cold, then cached.

For each reference: ``ensure_base_root`` into a fresh images directory (mmdebstrap from the Debian
mirror, or Ubuntu's archive when ``AGENTRIG_UBUNTU_ARCHIVE`` is set), one at a time, then the same
call again (the cached lookup); the root's size on disk; and a check that the recipe's language
answers inside the root (``chroot ROOT <probe>`` with a /proc of its own). Run it under ``nice``. Target: each build < 5 min.

    nice .venv/bin/python perf/base_recipes.py                 # one reference per family
    nice .venv/bin/python perf/base_recipes.py --all           # every family's tags below
    nice .venv/bin/python perf/base_recipes.py node:20 gcc:13  # these
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from agentrig.bench.terminal.images import ensure_base_root, resolve_base

# one per family: what a task's FROM names most
FAMILIES = ["buildpack-deps:jammy", "node:20", "golang:1.22", "rust:1.85", "openjdk:17-jdk-slim",
            "eclipse-temurin:21-jdk", "gcc:13"]
MORE = ["buildpack-deps:bookworm-curl", "buildpack-deps:trixie-scm", "buildpack-deps:bullseye", "node:18-slim",
        "python:3.13-slim", "rust:1-slim-bookworm", "openjdk:11"]
# what answers in the root: (argv, the ENV it runs with is the recipe's)
PROBES = {"buildpack-deps": ["sh", "-c", "g++ --version | head -1; git --version"],
          "node": ["sh", "-c", "node --version; npm --version"],
          "golang": ["sh", "-c", "go version"],
          "rust": ["sh", "-c", "rustc --version; cargo --version"],
          "openjdk": ["sh", "-c", "java -version 2>&1 | head -1; test -x \"$JAVA_HOME/bin/javac\" && echo javac"],
          "eclipse-temurin": ["sh", "-c", "java -version 2>&1 | head -1; locale -a | grep -i en_US.utf8"],
          "gcc": ["sh", "-c", "gcc --version | head -1; which gcc"],
          "python": ["sh", "-c", "python --version; pip --version | cut -c1-20"]}


def du(path: Path) -> int:
    out = subprocess.run(["du", "-sb", str(path)], capture_output=True, text=True).stdout
    return int(out.split()[0]) if out else 0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("refs", nargs="*")
    parser.add_argument("--all", action="store_true")
    parser.add_argument("--keep", help="build into this images directory (kept) instead of a fresh temporary one")
    args = parser.parse_args()
    refs = args.refs or (FAMILIES + MORE if args.all else FAMILIES)
    print(f"machine: {platform.machine()} {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"load {os.getloadavg()[0]:.1f}, Ubuntu archive: {os.environ.get('AGENTRIG_UBUNTU_ARCHIVE') or 'unset'}")
    print("| FROM | root | packages | build (cold) | cached | size | answers |")
    print("|---|---|---:|---:|---:|---:|---|")
    for ref in refs:
        recipe = resolve_base(ref)
        assert recipe is not None, f"no recipe for {ref}"
        fresh = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="agentrig-recipes-"))
        try:
            load = os.getloadavg()[0]
            started = time.perf_counter()
            try:
                root = ensure_base_root(recipe, cache=fresh, host_settings=True)
            except Exception as exc:  # noqa: BLE001 - a benchmark reports and goes on
                print(f"| `{ref}` | {recipe.suite} | {len(recipe.packages)} | FAILED: {str(exc).splitlines()[0][:120]} | | | |")
                continue
            cold = time.perf_counter() - started
            started = time.perf_counter()
            ensure_base_root(recipe, cache=fresh)
            cached = time.perf_counter() - started
            repo = ref.split(":", 1)[0].rsplit("/", 1)[-1]
            env = {"HOME": "/root", **recipe.env}
            # a /proc of its own: go finds its GOROOT and the loader java's libjli through /proc/self/exe
            probe = subprocess.run(["unshare", "--mount", "--pid", "--fork", f"--mount-proc={root}/proc", "chroot", str(root),
                                    *PROBES.get(repo, ["true"])], capture_output=True, text=True, env=env, timeout=120)
            answer = " · ".join(line.strip() for line in (probe.stdout + probe.stderr).splitlines() if line.strip())
            distro = "Ubuntu" if recipe.distro == "ubuntu" else "Debian"
            print(f"| `{ref}` | {distro} {recipe.suite} | {len(recipe.packages)} | {cold:.1f} s (load {load:.1f}) "
                  f"| {cached * 1000:.2f} ms | {du(root) / 1e6:.0f} MB | {answer[:110]} |", flush=True)
        finally:
            if not args.keep:
                shutil.rmtree(fresh, ignore_errors=True)


if __name__ == "__main__":
    main()
