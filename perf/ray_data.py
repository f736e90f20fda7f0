"""What shipping task data to Ray workers costs (run/ray/data.py): the driver packs the files a
run's trials read once per run; a worker on another node unpacks them once per node.

For τ² airline + retail (the shared data) and the built-in terminal tasks: the archive's size
(before and after gzip) and the median time to pack and to unpack it (into a fresh directory).

    .venv/bin/python perf/ray_data.py [--data ROOT] [--repeat 7] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO / "src")]

from agentrig.run import experiment  # noqa: E402
from agentrig.run.ray.data import pack, unpack  # noqa: E402

TAU = """name = "ship-tau"
[benchmark]
data = "{data}"
domains = ["airline", "retail"]
[user]
kind = "scripted"
[judge]
nl_assertions = "never"
[[arms]]
name = "gold"
agent = {{ kind = "gold" }}
"""
TERMINAL = """name = "ship-terminal"
[benchmark]
kind = "terminal"
[sandbox]
kind = "local"
[[arms]]
name = "oracle"
agent = { kind = "oracle" }
"""


def measure(toml: Path, repeat: int) -> dict:
    r = experiment.load(toml)
    packs, unpacks = [], []
    for _ in range(repeat):
        t = time.perf_counter()
        packed = pack(r)
        packs.append(time.perf_counter() - t)
        target = Path(tempfile.mkdtemp(prefix="ship-"))
        try:
            t = time.perf_counter()
            unpack(packed.digest, packed.data, target)
            unpacks.append(time.perf_counter() - t)
        finally:
            shutil.rmtree(target, ignore_errors=True)
    return {"tasks": len(r.tasks), "files": packed.files, "tar_bytes": packed.raw_bytes, "gzip_bytes": len(packed.data),
            "pack_ms": round(statistics.median(packs) * 1000, 1), "unpack_ms": round(statistics.median(unpacks) * 1000, 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=os.environ.get("AGENTRIG_TAU2_DATA", str(REPO.parent / "shared" / "tau2-data")))
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    warnings.filterwarnings("ignore", message="sandbox kind 'local'")  # (no task is run here)
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in (("tau2 airline+retail", TAU.format(data=args.data)), ("terminal built-in", TERMINAL)):
            toml = Path(tmp) / f"{name.split()[0]}.toml"
            toml.write_text(text)
            out[name] = measure(toml, args.repeat)
    print(f"{'data':22} {'tasks':>5} {'files':>5} {'tar':>10} {'gzip':>10} {'pack':>9} {'unpack':>9}")
    for name, m in out.items():
        print(f"{name:22} {m['tasks']:5} {m['files']:5} {m['tar_bytes']:10,} {m['gzip_bytes']:10,} "
              f"{m['pack_ms']:7.1f}ms {m['unpack_ms']:7.1f}ms")
    with open("/proc/loadavg") as f:
        print(f"load average: {f.read().split()[0]}")
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
