"""What a service beside the agent's costs a trial: the start and close of a sandbox whose task's
compose file runs one service (a small HTTP server the task builds, ready by its healthcheck), next
to the same task without it — on bwrap (without and with the network: slirp4netns) and on podman.

Per variant: the wall time of ``open_sandbox`` (the service started and found ready) and of
``close`` (the service's processes ended), median and max over ``--reps`` trials after one warm-up
(which builds the layers and images). The task is made in a temporary directory (never a benchmark's
data). Needs root (bwrap); podman is measured when it answers.

    nice .venv/bin/python perf/terminal_services.py [--reps 8] [--no-podman]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import sys
import tempfile
import textwrap
import time
from pathlib import Path

COMPOSE = textwrap.dedent("""\
    services:
      client:
        build:
          context: client
        command: [ "sh", "-c", "sleep infinity" ]
        {depends}
    {server}""")
SERVER = textwrap.indent(textwrap.dedent("""\
    server:
      build:
        context: server
      command: [ "python3", "./site.py" ]
      ports: [ "8000" ]
      healthcheck:
        test: [ "CMD", "python3", "-c", "import urllib.request; urllib.request.urlopen('http://localhost:8000')" ]
        interval: 10s
        timeout: 5s
        retries: 1
    """), "  ")
SITE = ("from http.server import BaseHTTPRequestHandler, HTTPServer\n"
        "class P(BaseHTTPRequestHandler):\n"
        "    def do_GET(self):\n        self.send_response(200); self.end_headers(); self.wfile.write(b'ok')\n"
        "HTTPServer(('', 8000), P).serve_forever()\n")


def make_task(root: Path, name: str, with_service: bool, base: str) -> Path:
    d = root / name
    (d / "tests").mkdir(parents=True)
    (d / "tests" / "test_outputs.py").write_text("def test_x():\n    assert True\n")
    (d / "task.yaml").write_text("instruction: x\nparser_name: pytest\n")
    (d / "client").mkdir()
    (d / "client" / "Dockerfile").write_text(f"FROM {base}\nWORKDIR /app\n")
    if with_service:
        (d / "server").mkdir()
        (d / "server" / "Dockerfile").write_text(f"FROM {base}\nWORKDIR /srv\nCOPY site.py .\nEXPOSE 8000\n")
        (d / "server" / "site.py").write_text(SITE)
    depends = "depends_on: [server]" if with_service else ""
    (d / "docker-compose.yaml").write_text(COMPOSE.format(depends=depends, server=SERVER if with_service else ""))
    return d


async def measure(task_dir: Path, settings, reps: int) -> tuple[list[float], list[float]]:
    from agentrig.bench.terminal.sandbox import open_sandbox
    from agentrig.bench.terminal.tasks.taskfile import load_task

    task = load_task(task_dir)
    opens, closes = [], []
    for i in range(reps + 1):
        t0 = time.perf_counter()
        box = await open_sandbox(task, settings, label=f"bench-{i}")
        t1 = time.perf_counter()
        await box.close()
        t2 = time.perf_counter()
        if i:  # the first builds the layers / images
            opens.append(t1 - t0)
            closes.append(t2 - t1)
    return opens, closes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=8)
    parser.add_argument("--no-podman", action="store_true")
    args = parser.parse_args()
    from agentrig.bench.terminal.sandbox import SandboxSettings
    from agentrig.bench.terminal.sandbox.engine import engine_problem
    from agentrig.bench.terminal.sandbox.slirp import slirp_binary

    podman = not args.no_podman and asyncio.run(engine_problem("podman")) is None
    print(f"machine: {platform.machine()} {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}; "
          f"Python {platform.python_version()}; {args.reps} trials per variant after one warm-up")
    with tempfile.TemporaryDirectory(prefix="agentrig-bench-services-") as tmp:
        root = Path(tmp)
        cache = root / "cache"
        variants = [("bwrap", "host root, no network", dict(kind="bwrap", network=False), "python:3.11-slim")]
        if slirp_binary():
            variants.append(("bwrap", "host root, network (slirp4netns)", dict(kind="bwrap", network=True), "python:3.11-slim"))
        if podman:
            variants.append(("podman", "no network", dict(kind="podman", network=False),
                             "ghcr.io/laude-institute/t-bench/python-3-13"))
        for kind, what, overrides, base in variants:
            settings = SandboxSettings(cache_dir=cache, **overrides)
            rows = {}
            for with_service in (False, True):
                name = f"{kind}-{'svc' if with_service else 'plain'}-{len(rows)}-{overrides.get('network')}"
                task_dir = make_task(root, name, with_service, base)
                rows[with_service] = asyncio.run(measure(task_dir, settings, args.reps))
            (po, pc), (so, sc) = rows[False], rows[True]
            print(f"{kind:6} {what:34} open {statistics.median(po) * 1000:7.0f} ms → with a service "
                  f"{statistics.median(so) * 1000:7.0f} ms (max {max(so) * 1000:.0f}); close "
                  f"{statistics.median(pc) * 1000:5.0f} ms → {statistics.median(sc) * 1000:5.0f} ms")
    print(f"load at end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    sys.exit(main())
