"""Inline SVG plots drawn here (no plotting library, no script): lines with bands, bars with
error bars, a forest plot of differences, stacked bars. Every label is escaped; the output is
``Markup`` ready for the template. Coordinates are rounded to 0.1 px to keep the file small."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from .safe import Markup, escape

PALETTE = ("#3b6fd4", "#e07b28", "#2c9a5a", "#c23b5a", "#8a55c9", "#8c6d31", "#1f9bb0", "#d45bb0")
FONT = 'font-family="system-ui,sans-serif" font-size="12"'


def color(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def _n(x: float) -> str:
    s = f"{x:.1f}"
    return s[:-2] if s.endswith(".0") else s


def _fmt(v: float, percent: bool) -> str:
    return f"{100 * v:.0f}%" if percent else f"{v:g}"


def _ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    if hi <= lo:
        return [lo]
    raw = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    start = step * math.ceil(lo / step - 1e-9)
    out, v = [], start
    while v <= hi + 1e-9:
        out.append(round(v, 10))
        v += step
    return out


@dataclass
class Series:
    name: str
    points: list[tuple[float, float]]
    band: list[tuple[float, float, float]] = field(default_factory=list)  # (x, lo, hi)
    color: str = PALETTE[0]


def _svg(width: int, height: int, body: list[str], label: str) -> Markup:
    head = (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="{width}" '
            f'height="{height}" role="img" aria-label="{escape(label)}" {FONT}>')
    return Markup(head + "".join(body) + "</svg>")


def _legend(names: Sequence[tuple[str, str]], x: float, y: float) -> list[str]:
    out = []
    for i, (name, col) in enumerate(names):
        yy = y + 16 * i
        out.append(f'<rect x="{_n(x)}" y="{_n(yy - 9)}" width="12" height="10" fill="{col}"/>'
                   f'<text x="{_n(x + 17)}" y="{_n(yy)}">{escape(name)}</text>')
    return out


def line_chart(series: list[Series], *, x_label: str, y_label: str, y_range: tuple[float, float] = (0, 1),
               percent: bool = True, width: int = 640, height: int = 320, label: str = "chart") -> Markup:
    """Lines over integer x (e.g. k = 1..n) with optional shaded bands."""
    legend_w = 150
    left, right, top, bottom = 52, 16 + legend_w, 14, 42
    pw, ph = width - left - right, height - top - bottom
    xs = sorted({x for s in series for x, _ in s.points}) or [1]
    x0, x1 = xs[0], xs[-1] if xs[-1] > xs[0] else xs[0] + 1
    y0, y1 = y_range

    def px(x: float) -> float:
        return left + (x - x0) / (x1 - x0) * pw

    def py(y: float) -> float:
        return top + (1 - (min(max(y, y0), y1) - y0) / (y1 - y0)) * ph

    body = [f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="#fff" stroke="#ccc"/>']
    for t in _ticks(y0, y1):
        body.append(f'<line x1="{left}" x2="{left + pw}" y1="{_n(py(t))}" y2="{_n(py(t))}" stroke="#eee"/>'
                    f'<text x="{left - 6}" y="{_n(py(t) + 4)}" text-anchor="end">{escape(_fmt(t, percent))}</text>')
    step = max(1, round(len(xs) / 12))
    for i, x in enumerate(xs):
        if i % step == 0 or x == xs[-1]:
            body.append(f'<text x="{_n(px(x))}" y="{top + ph + 16}" text-anchor="middle">{escape(f"{x:g}")}</text>')
    body.append(f'<text x="{left + pw / 2:.0f}" y="{height - 6}" text-anchor="middle">{escape(x_label)}</text>')
    body.append(f'<text transform="translate(13 {top + ph / 2:.0f}) rotate(-90)" text-anchor="middle">'
                f'{escape(y_label)}</text>')
    for s in series:
        if len(s.band) >= 1:
            upper = " ".join(f"{_n(px(x))},{_n(py(hi))}" for x, _, hi in s.band)
            lower = " ".join(f"{_n(px(x))},{_n(py(lo))}" for x, lo, _ in reversed(s.band))
            body.append(f'<polygon points="{upper} {lower}" fill="{s.color}" fill-opacity="0.15" stroke="none"/>')
    for s in series:
        pts = " ".join(f"{_n(px(x))},{_n(py(y))}" for x, y in s.points)
        body.append(f'<polyline points="{pts}" fill="none" stroke="{s.color}" stroke-width="2"/>')
        for x, y in s.points:
            body.append(f'<circle cx="{_n(px(x))}" cy="{_n(py(y))}" r="3" fill="{s.color}">'
                        f'<title>{escape(f"{s.name}: {x_label} {x:g}: " + (f"{100 * y:.1f}%" if percent else f"{y:.3g}"))}'
                        f'</title></circle>')
    body += _legend([(s.name, s.color) for s in series], width - legend_w + 4, top + 12)
    return _svg(width, height, body, label)


@dataclass
class Bar:
    name: str
    value: float
    lo: float | None = None
    hi: float | None = None
    color: str = PALETTE[0]
    note: str = ""


def hbars(bars: list[Bar], *, unit: str = "", x_range: tuple[float, float] | None = None, width: int = 640,
          label: str = "bars", zero_line: bool = True) -> Markup:
    """Horizontal bars (or, with lo/hi, a forest plot: a dot with its interval) one per row."""
    name_w = min(220, 12 + 7 * max((len(b.name) for b in bars), default=4))
    notes = [b.note or f"{b.value:.3g}{unit}" for b in bars]
    left, right, top, row = name_w, min(260, 14 + 7 * max((len(n) for n in notes), default=6)), 10, 26
    height = top + row * max(1, len(bars)) + 34
    pw = width - left - right
    values = [v for b in bars for v in (b.value, b.lo, b.hi) if v is not None] or [0.0]
    lo, hi = x_range or (min(0.0, *values), max(0.0, *values))
    if hi - lo < 1e-9:
        hi = lo + 1
    pad = (hi - lo) * 0.05 if x_range is None else 0
    lo, hi = lo - (pad if lo < 0 else 0), hi + pad

    def px(v: float) -> float:
        return left + (min(max(v, lo), hi) - lo) / (hi - lo) * pw

    body = []
    for t in _ticks(lo, hi):
        body.append(f'<line x1="{_n(px(t))}" x2="{_n(px(t))}" y1="{top}" y2="{top + row * len(bars)}" stroke="#eee"/>'
                    f'<text x="{_n(px(t))}" y="{top + row * len(bars) + 16}" text-anchor="middle">'
                    f'{escape(f"{t:g}{unit}")}</text>')
    if zero_line and lo < 0 < hi:
        body.append(f'<line x1="{_n(px(0))}" x2="{_n(px(0))}" y1="{top}" y2="{top + row * len(bars)}" '
                    f'stroke="#555" stroke-dasharray="3 3"/>')
    for i, b in enumerate(bars):
        y = top + row * i
        cy = y + row / 2
        body.append(f'<text x="{left - 8}" y="{_n(cy + 4)}" text-anchor="end">{escape(b.name)}</text>')
        tip = f"{b.name}: {b.value:.3g}{unit}" + (f" [{b.lo:.3g}, {b.hi:.3g}]" if b.lo is not None and b.hi is not None else "")
        if b.lo is None or b.hi is None:
            x_a, x_b = sorted((px(0 if lo <= 0 <= hi else lo), px(b.value)))
            body.append(f'<rect x="{_n(x_a)}" y="{_n(y + 5)}" width="{_n(max(1, x_b - x_a))}" height="{row - 10}" '
                        f'fill="{b.color}"><title>{escape(tip)}</title></rect>')
        else:
            body.append(f'<line x1="{_n(px(b.lo))}" x2="{_n(px(b.hi))}" y1="{_n(cy)}" y2="{_n(cy)}" '
                        f'stroke="{b.color}" stroke-width="2"/>'
                        f'<line x1="{_n(px(b.lo))}" x2="{_n(px(b.lo))}" y1="{_n(cy - 5)}" y2="{_n(cy + 5)}" stroke="{b.color}"/>'
                        f'<line x1="{_n(px(b.hi))}" x2="{_n(px(b.hi))}" y1="{_n(cy - 5)}" y2="{_n(cy + 5)}" stroke="{b.color}"/>'
                        f'<circle cx="{_n(px(b.value))}" cy="{_n(cy)}" r="5" fill="{b.color}">'
                        f'<title>{escape(tip)}</title></circle>')
        text = notes[i]
        body.append(f'<text x="{left + pw + 6}" y="{_n(cy + 4)}">{escape(text)}</text>')
    return _svg(width, height, body, label)


def stacked(rows: list[tuple[str, list[tuple[str, int]]]], colors: dict[str, str], *, width: int = 640,
            label: str = "stacked bars") -> Markup:
    """One horizontal bar per row, split into parts (name, count); a legend of the part names."""
    name_w = min(220, 12 + 7 * max((len(r[0]) for r in rows), default=4))
    left, right, top, row = name_w, 60, 10, 26
    names = list(colors)
    legend_rows = (len(names) + 2) // 3
    height = top + row * max(1, len(rows)) + 10 + 18 * legend_rows
    pw = width - left - right
    top_total = max((sum(c for _, c in parts) for _, parts in rows), default=0) or 1
    body = []
    for i, (name, parts) in enumerate(rows):
        y = top + row * i
        body.append(f'<text x="{left - 8}" y="{_n(y + row / 2 + 4)}" text-anchor="end">{escape(name)}</text>')
        x = float(left)
        for part, count in parts:
            if count <= 0:
                continue
            w = count / top_total * pw
            body.append(f'<rect x="{_n(x)}" y="{_n(y + 5)}" width="{_n(w)}" height="{row - 10}" '
                        f'fill="{colors.get(part, "#999")}"><title>{escape(f"{name}: {part} {count}")}</title></rect>')
            x += w
        body.append(f'<text x="{_n(x + 6)}" y="{_n(y + row / 2 + 4)}">{sum(c for _, c in parts)}</text>')
    ly = top + row * len(rows) + 18
    for j, part in enumerate(names):
        lx = left + (j % 3) * (pw / 3)
        yy = ly + 18 * (j // 3)
        body.append(f'<rect x="{_n(lx)}" y="{_n(yy - 9)}" width="12" height="10" fill="{colors[part]}"/>'
                    f'<text x="{_n(lx + 17)}" y="{_n(yy)}">{escape(part)}</text>')
    return _svg(width, height, body, label)
