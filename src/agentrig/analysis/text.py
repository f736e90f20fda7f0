"""How ``agentrig analyze`` prints figures: its tables and number formats, shared by the figures'
text views (``Figure.print``) and the command's own summary tables."""

from __future__ import annotations

from typing import Any

from rich.markup import escape
from rich.text import Text

from agentrig.tables import FitTable, Stack

__all__ = ["ci", "est", "est_cell", "f", "pct", "pct_short", "table", "times", "view_table"]


def table(title: str, *cols: tuple, key: int = 1) -> FitTable:
    """A figure table; a column is (header, justify) or (header, justify, group) (kept together
    when the table is split), with justify "wrap" for prose that may wrap at spaces."""
    t = FitTable(title, key=key)
    for name, justify, *group in cols:
        wrap = justify == "wrap"
        t.add_column(name, "left" if wrap else justify, wrap=wrap, group=group[0] if group else None)
    return t


def ci(header: str) -> Stack:
    return Stack(header, "[95% CI]")


def f(x: float | None, digits: int = 3) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def est(e: Any, digits: int = 3) -> str:
    """An ``Estimate`` (value and interval) on one line."""
    if e.value is None:
        return "-"
    if e.low is None or e.high is None:
        return f(e.value, digits)
    return f"{e.value:.{digits}f} [{e.low:.{digits}f}, {e.high:.{digits}f}]"


def est_cell(e: Any, digits: int = 3) -> Stack | str:
    """An estimate with its interval below it (beside it when the table is wide enough)."""
    if e.value is None or e.low is None or e.high is None:
        return est(e, digits)
    return Stack(f"{e.value:.{digits}f}", f"[{e.low:.{digits}f}, {e.high:.{digits}f}]")


def pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def pct_short(x: float) -> str:
    """A rate as a percent: "100%", "50%", "66.7%" (one decimal only when it is not whole)."""
    v = round(100 * x, 1)
    return f"{v:.0f}%" if v == int(v) else f"{v:.1f}%"


def times(x: float | None) -> str:
    return "-" if x is None else f"×{x:.2f}"


def view_table(view: Any, out: Any) -> None:
    """A figure's ``FigureView`` as the table it gives (and its note)."""
    t = table(view.title, (view.columns[0], "left"), *[(escape(c), "right") for c in view.columns[1:]])
    for row in view.rows:
        t.add_row(escape(row[0]), *[escape(c) for c in row[1:]])
    t.print(out)
    if view.note:
        out.print(Text(view.note, style="dim"))
