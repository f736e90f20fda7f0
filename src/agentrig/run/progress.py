"""The live progress line of a run (rich), for people at a terminal.

It reads the executor's ``Stats`` counters from rich's own refresh thread a few times per second;
the event loop never renders anything, so the display costs the trials nothing. Used only when
stdout is a terminal and ``--json`` is not given (``progress_for`` returns a no-op otherwise).
"""

from __future__ import annotations

import time
from contextlib import AbstractContextManager, nullcontext

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from .executor import Stats
from .outages import progress_text

REFRESH_PER_SECOND = 4


def _clock(seconds: float) -> str:
    seconds = int(max(0, seconds))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def _tokens(n: int) -> str:
    for unit, size in (("M", 1_000_000), ("k", 1_000)):
        if n >= size:
            return f"{n / size:.1f}{unit}"
    return str(n)


class ProgressView:
    """A renderable over ``Stats``: bar, counts, pass rate, tokens, retries, ETA."""

    def __init__(self, stats: Stats, title: str):
        self.stats = stats
        self.title = title
        self.t0 = time.perf_counter()

    def eta(self) -> float | None:
        s = self.stats
        if s.finished == 0:
            return None
        elapsed = time.perf_counter() - self.t0
        return elapsed / s.finished * max(0, s.planned - s.finished)

    def __rich__(self) -> RenderableType:
        s = self.stats
        elapsed = time.perf_counter() - self.t0
        eta = self.eta()
        head = Table.grid(padding=(0, 1))
        head.add_row(
            Text(self.title, style="bold"),
            ProgressBar(total=max(1, s.planned), completed=s.finished, width=30),
            Text(f"{s.finished}/{s.planned}"),
            Text(f"{_clock(elapsed)} elapsed, ETA {_clock(eta) if eta is not None else '?'}", style="dim"),
        )
        mean = s.mean_reward
        line = Text()
        line.append(f"valid {s.valid}", style="green")
        line.append("  ")
        line.append(f"failed {s.failed}", style="red" if s.failed else "")
        line.append("  ")
        line.append(f"invalid {s.invalid}", style="yellow" if s.invalid_attempts else "")
        line.append(f"  pass rate {mean:.3f}" if mean is not None else "  pass rate -")
        line.append(f"  tokens {_tokens(s.tokens)}  retries {s.call_retries}  replays {s.replays}"
                    f"  in flight {s.in_flight}", style="dim")
        outage = s.outage_now() if s.outage_now is not None else None
        if outage is not None:  # an endpoint is down: calls wait for it (channel/breaker.py)
            return Group(head, line, Text(progress_text(outage), style="bold yellow"))
        return Group(head, line)


def progress_for(stats: Stats, console: Console, title: str, *, enabled: bool) -> AbstractContextManager:
    """A live display while the run plays (or nothing, when not ``enabled``)."""
    if not enabled or not console.is_terminal:
        return nullcontext()
    return Live(ProgressView(stats, title), console=console, refresh_per_second=REFRESH_PER_SECOND,
                transient=False)  # stray writes (log warnings) are printed above the display
