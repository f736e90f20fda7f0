"""``agentrig report RUN [RUN …] [--out report.html]``: write the report (report/write.py) and say where."""

from __future__ import annotations

import time
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from agentrig.report import write_report


def report_command(run_dirs: list[Path], *, out_path: Path | None, console: Console) -> Path:
    start = time.perf_counter()
    path = write_report(run_dirs, out_path)
    size = path.stat().st_size
    console.print(f"report: {escape(str(path))} ({size / 1e6:.1f} MB, {time.perf_counter() - start:.1f} s)",
                  highlight=False)
    console.print(f"open it in a browser: file://{escape(str(path.resolve()))}", highlight=False, style="dim")
    return path
