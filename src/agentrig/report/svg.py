"""Inline SVG plots drawn here (no plotting library, no script): lines with bands, bars with
error bars, a forest plot of differences (in titled groups), stacked bars. Every label is escaped;
the output is ``Markup`` ready for the template. Coordinates are rounded to 0.1 px to keep the file
small.

Labels are never cut: a chart is laid out from the estimated width of its texts (``text_width``),
growing wider (the page scales a wide chart down to fit) rather than clipping a name, and a legend
too wide for the side of a plot goes below it, in as many columns as fit. Every mark carries
``class="mark"``, every legend entry ``class="key"``, every row's name ``class="label"`` (under
its ``class="group"`` title), so the browser test can check that no text or legend covers a mark
and that no two entries read alike."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from .safe import Markup, escape

PALETTE = ("#3b6fd4", "#e07b28", "#2c9a5a", "#c23b5a", "#8a55c9", "#8c6d31", "#1f9bb0", "#d45bb0")
FONT = 'font-family="system-ui,sans-serif" font-size="12"'


# Advance widths in em of DejaVu Sans, the face Debian's Chromium draws system-ui with (measured
# there, rounded up); most other system faces are narrower, so a layout from these leaves room.
_EM = {ch: em for em, chars in (
    (0.33, "'ijlIJ ,.·"), (0.36, "/:;\\f|-"), (0.42, "()[]t!r²"), (0.57, '*_`sz?c"L'),
    (0.62, "FkvxyPTτYaoe"), (0.66, "ESbdghnpqu0123456789${}K"), (0.72, "VΔBRXZCA"),
    (0.82, "UHNDG&OQw"), (0.87, "#+<=>^~−→M")) for ch in chars}
FONT_PX = 12
SIDE_LEGEND = 220  # a legend this wide (px) or less stands beside a line chart, else below it
MIN_PLOT = 300    # the narrowest plot area a chart keeps (px)


def text_width(text: str, size: float = FONT_PX, *, bold: bool = False) -> float:
    """The width a text takes in the charts' font, estimated on the wide side (1 em for a
    character not in the table)."""
    return sum(_EM.get(ch, 1.0) for ch in text) * size * (1.1 if bold else 1.0)


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


KEY_GAP = 18  # between two legend columns


def _key_width(name: str) -> float:
    return 17 + text_width(name)


def legend(names: Sequence[tuple[str, str]], x: float, y: float, width: float) -> tuple[list[str], float]:
    """Legend entries (name, colour) from (x, y) in as many columns as fit in ``width`` (at least
    one: a name wider than that widens its column); returns the elements and the height taken."""
    if not names:
        return [], 0.0
    col_w = max(_key_width(n) for n, _ in names) + KEY_GAP
    cols = max(1, min(len(names), int((width + KEY_GAP) // col_w)))
    out = []
    for i, (name, col) in enumerate(names):
        xx, yy = x + col_w * (i % cols), y + 16 * (i // cols)
        out.append(f'<g class="key"><rect x="{_n(xx)}" y="{_n(yy)}" width="12" height="10" fill="{col}"/>'
                   f'<text x="{_n(xx + 17)}" y="{_n(yy + 9)}">{escape(name)}</text></g>')
    return out, 16.0 * ((len(names) + cols - 1) // cols)


def legend_fits(names: Sequence[tuple[str, str]], width: float) -> bool:
    """Whether every entry fits in ``width`` (each on a row of its own at worst)."""
    return max((_key_width(n) for n, _ in names), default=0) <= width


def line_chart(series: list[Series], *, x_label: str, y_label: str, y_range: tuple[float, float] = (0, 1),
               percent: bool = True, width: int = 640, height: int = 320, label: str = "chart") -> Markup:
    """Lines over integer x (e.g. k = 1..n) with optional shaded bands. The legend (every series'
    full name) stands right of the plot when it fits in ``SIDE_LEGEND`` px, else below it."""
    keys = [(s.name, s.color) for s in series]
    key_w = max((_key_width(n) for n, _ in keys), default=0)
    side = key_w <= SIDE_LEGEND
    left, top, bottom = 52, 14, 42
    right = 16 + (key_w + 8 if side else 0)
    width = max(width, int(left + MIN_PLOT + right))
    pw = width - left - right
    ph = height - top - bottom
    below: list[str] = []
    if not side:
        below, extra = legend(keys, left, height + 2, width - left - 8)
        height = int(height + extra + 8)
    xs = sorted({x for s in series for x, _ in s.points}) or [1]
    x0, x1 = xs[0], xs[-1] if xs[-1] > xs[0] else xs[0] + 1
    y0, y1 = y_range

    def px(x: float) -> float:
        return left + (x - x0) / (x1 - x0) * pw

    def py(y: float) -> float:
        return top + (1 - (min(max(y, y0), y1) - y0) / (y1 - y0)) * ph

    body = [f'<rect x="{left}" y="{top}" width="{_n(pw)}" height="{ph}" fill="#fff" stroke="#ccc"/>']
    for t in _ticks(y0, y1):
        body.append(f'<line x1="{left}" x2="{_n(left + pw)}" y1="{_n(py(t))}" y2="{_n(py(t))}" stroke="#eee"/>'
                    f'<text x="{left - 6}" y="{_n(py(t) + 4)}" text-anchor="end">{escape(_fmt(t, percent))}</text>')
    step = max(1, round(len(xs) / 12))
    for i, x in enumerate(xs):
        if i % step == 0 or x == xs[-1]:
            body.append(f'<text x="{_n(px(x))}" y="{top + ph + 16}" text-anchor="middle">{escape(f"{x:g}")}</text>')
    body.append(f'<text x="{left + pw / 2:.0f}" y="{top + ph + 36}" text-anchor="middle">{escape(x_label)}</text>')
    body.append(f'<text transform="translate(13 {top + ph / 2:.0f}) rotate(-90)" text-anchor="middle">'
                f'{escape(y_label)}</text>')
    for s in series:
        if len(s.band) >= 1:
            upper = " ".join(f"{_n(px(x))},{_n(py(hi))}" for x, _, hi in s.band)
            lower = " ".join(f"{_n(px(x))},{_n(py(lo))}" for x, lo, _ in reversed(s.band))
            body.append(f'<polygon class="band" points="{upper} {lower}" fill="{s.color}" fill-opacity="0.15" '
                        'stroke="none"/>')
    for s in series:
        pts = " ".join(f"{_n(px(x))},{_n(py(y))}" for x, y in s.points)
        body.append(f'<polyline class="mark" points="{pts}" fill="none" stroke="{s.color}" stroke-width="2"/>')
        for x, y in s.points:
            body.append(f'<circle class="mark" cx="{_n(px(x))}" cy="{_n(py(y))}" r="3" fill="{s.color}">'
                        f'<title>{escape(f"{s.name}: {x_label} {x:g}: " + (f"{100 * y:.1f}%" if percent else f"{y:.3g}"))}'
                        f'</title></circle>')
    if side:
        body += legend(keys, left + pw + 16, top + 3, key_w)[0]
    body += below
    return _svg(width, height, body, label)


@dataclass
class Bar:
    name: str
    value: float
    lo: float | None = None
    hi: float | None = None
    color: str = PALETTE[0]
    note: str = ""


@dataclass
class Group:
    """A titled group of the rows that follow it in ``hbars`` (e.g. one A/B comparison's metrics)."""

    title: str


def hbars(bars: Sequence[Bar | Group], *, unit: str = "", x_range: tuple[float, float] | None = None, width: int = 640,
          label: str = "bars", zero_line: bool = True) -> Markup:
    """Horizontal bars (or, with lo/hi, a forest plot: a dot with its interval) one per row; a
    ``Group`` is a title row over the bars after it. The name and note columns are as wide as
    their longest text; the chart grows wider rather than cut one."""
    rows = list(bars)
    only = [b for b in rows if isinstance(b, Bar)]
    notes = {id(b): b.note or f"{b.value:.3g}{unit}" for b in only}
    left = 12 + max((text_width(b.name) for b in only), default=24.0)
    right = 14 + max((text_width(n) for n in notes.values()), default=36.0)
    titles = max((text_width(g.title, bold=True) + 8 for g in rows if isinstance(g, Group)), default=0.0)
    width = int(max(width, left + MIN_PLOT + right, titles))
    top, row = 10, 26
    height = top + row * max(1, len(rows)) + 34
    pw = width - left - right
    values = [v for b in only for v in (b.value, b.lo, b.hi) if v is not None] or [0.0]
    lo, hi = x_range or (min(0.0, *values), max(0.0, *values))
    if hi - lo < 1e-9:
        hi = lo + 1
    pad = (hi - lo) * 0.05 if x_range is None else 0
    lo, hi = lo - (pad if lo < 0 else 0), hi + pad
    bottom = top + row * len(rows)

    def px(v: float) -> float:
        return left + (min(max(v, lo), hi) - lo) / (hi - lo) * pw

    body = []
    for t in _ticks(lo, hi):
        body.append(f'<line x1="{_n(px(t))}" x2="{_n(px(t))}" y1="{top}" y2="{bottom}" stroke="#eee"/>'
                    f'<text x="{_n(px(t))}" y="{bottom + 16}" text-anchor="middle">{escape(f"{t:g}{unit}")}</text>')
    if zero_line and lo < 0 < hi:
        body.append(f'<line x1="{_n(px(0))}" x2="{_n(px(0))}" y1="{top}" y2="{bottom}" '
                    f'stroke="#555" stroke-dasharray="3 3"/>')
    group = ""
    for i, b in enumerate(rows):
        y = top + row * i
        cy = y + row / 2
        if isinstance(b, Group):
            group = b.title
            body.append(f'<rect x="0" y="{_n(y)}" width="{width}" height="{row}" fill="#f3f4f6"/>'
                        f'<text class="group" x="4" y="{_n(cy + 4)}" font-weight="600">{escape(b.title)}</text>')
            continue
        body.append(f'<text class="label" x="{_n(left - 8)}" y="{_n(cy + 4)}" text-anchor="end">{escape(b.name)}</text>')
        tip = (f"{group + ': ' if group else ''}{b.name}: {b.value:.3g}{unit}"
               + (f" [{b.lo:.3g}, {b.hi:.3g}]" if b.lo is not None and b.hi is not None else ""))
        if b.lo is None or b.hi is None:
            x_a, x_b = sorted((px(0 if lo <= 0 <= hi else lo), px(b.value)))
            body.append(f'<rect class="mark" x="{_n(x_a)}" y="{_n(y + 5)}" width="{_n(max(1, x_b - x_a))}" '
                        f'height="{row - 10}" fill="{b.color}"><title>{escape(tip)}</title></rect>')
        else:
            body.append(f'<g class="mark"><line x1="{_n(px(b.lo))}" x2="{_n(px(b.hi))}" y1="{_n(cy)}" y2="{_n(cy)}" '
                        f'stroke="{b.color}" stroke-width="2"/>'
                        f'<line x1="{_n(px(b.lo))}" x2="{_n(px(b.lo))}" y1="{_n(cy - 5)}" y2="{_n(cy + 5)}" stroke="{b.color}"/>'
                        f'<line x1="{_n(px(b.hi))}" x2="{_n(px(b.hi))}" y1="{_n(cy - 5)}" y2="{_n(cy + 5)}" stroke="{b.color}"/>'
                        f'<circle cx="{_n(px(b.value))}" cy="{_n(cy)}" r="5" fill="{b.color}">'
                        f'<title>{escape(tip)}</title></circle></g>')
        body.append(f'<text x="{_n(left + pw + 6)}" y="{_n(cy + 4)}">{escape(notes[id(b)])}</text>')
    return _svg(width, height, body, label)


def stacked(rows: list[tuple[str, list[tuple[str, int]]]], colors: dict[str, str], *, width: int = 640,
            label: str = "stacked bars") -> Markup:
    """One horizontal bar per row, split into parts (name, count); a legend of the part names below
    the bars, in as many columns as fit."""
    left = 12 + max((text_width(r[0]) for r in rows), default=24.0)
    top, row = 10, 26
    totals = [sum(c for _, c in parts) for _, parts in rows]
    right = 12 + max((text_width(str(t)) for t in totals), default=12.0)
    keys = [(name, colors[name]) for name in colors]
    width = int(max(width, left + MIN_PLOT + right, max((_key_width(n) for n, _ in keys), default=0) + 8))
    pw = width - left - right
    top_total = max(totals, default=0) or 1
    body = []
    for i, (name, parts) in enumerate(rows):
        y = top + row * i
        body.append(f'<text class="label" x="{_n(left - 8)}" y="{_n(y + row / 2 + 4)}" text-anchor="end">{escape(name)}</text>')
        x = float(left)
        for part, count in parts:
            if count <= 0:
                continue
            w = count / top_total * pw
            body.append(f'<rect class="mark" x="{_n(x)}" y="{_n(y + 5)}" width="{_n(w)}" height="{row - 10}" '
                        f'fill="{colors.get(part, "#999")}"><title>{escape(f"{name}: {part} {count}")}</title></rect>')
            x += w
        body.append(f'<text x="{_n(x + 6)}" y="{_n(y + row / 2 + 4)}">{totals[i]}</text>')
    # the legend starts under the bars' left edge when it fits there, else at the chart's edge
    lx = left if legend_fits(keys, width - left - 8) else 8
    entries, extra = legend(keys, lx, top + row * len(rows) + 10, width - lx - 8)
    body += entries
    return _svg(width, int(top + row * max(1, len(rows)) + 18 + extra), body, label)
