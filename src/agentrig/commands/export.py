"""``agentrig export RUN --format F``: JSONL of every stored attempt (generic), or a benchmark's own
formats (``Benchmark.export``; τ²: ``tau2``; terminal: ``terminal-bench``, ``mini-swe-agent``, ``atif``;
AppWorld: ``appworld``). ``--out`` is a file for ``jsonl`` and ``tau2``, a directory (one folder per
arm inside) for the others; a path of the wrong kind is refused before anything is written."""

from __future__ import annotations

from pathlib import Path

from agentrig.benchmark import benchmark_of_config
from agentrig.errors import ConfigError
from agentrig.store.export import export_jsonl, out_dir, out_file
from agentrig.store.rundir import open_run_dir

# The formats written to one file (--out names it; an example name for the fix); every other
# format writes a directory tree (--out names the directory, one folder per arm inside).
FILE_FORMATS = {"jsonl": "trials.jsonl", "tau2": "results.json"}


def export_command(run_dir: Path, fmt: str, *, arm: str | None = None, domain: str | None = None,
                   out_path: Path | None = None) -> tuple[int, Path, str]:
    """Write the export; returns (how many, the file or directory written, what they are: "record(s)",
    "simulation(s)" …). ``jsonl`` is generic; other formats are the run's benchmark's
    (``Benchmark.export``; τ²: ``tau2``; terminal: ``terminal-bench``, ``mini-swe-agent``, ``atif``)."""
    store, config = open_run_dir(run_dir)
    try:
        arms = [a["name"] for a in config["experiment"]["arms"]]
        if fmt == "jsonl":
            if arm is not None and arm not in arms:
                raise ConfigError(f"no arm {arm!r} in this run; arms: {', '.join(arms)}")
            out_file(out_path, fmt, FILE_FORMATS[fmt])
            target = out_path or Path(run_dir) / "exports" / (f"{arm}.jsonl" if arm else "trials.jsonl")
            target.parent.mkdir(parents=True, exist_ok=True)
            return export_jsonl(store, target, arm), target, "record(s)"
        bench = benchmark_of_config(config)
        if fmt not in bench.export_formats:
            raise ConfigError(f"unknown export format {fmt!r}; use {' or '.join(['jsonl', *bench.export_formats])}")
        if fmt in FILE_FORMATS:
            out_file(out_path, fmt, FILE_FORMATS[fmt])
        else:
            out_dir(out_path, fmt, "one folder per arm")
        return bench.export(fmt, store, config, Path(run_dir), arm=arm, domain=domain, out_path=out_path)
    finally:
        store.close()

