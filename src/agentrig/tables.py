"""Tables for people that never cut a figure, a header or an id, at any console width.

rich shrinks a table that is wider than the console by cutting cells (``0.84…``) and headers
(``val…``). A researcher pastes these tables into notes, so ``FitTable`` chooses, at print time,
the first layout that shows every character:

1. every cell on one line (a ``Stack`` cell joined with spaces: ``0.844 [0.750, 0.922]``);
2. the same with the wrappable columns (prose) wrapped at spaces, never inside a word;
3. ``Stack`` cells on several lines (the figure, its interval below it);
4. the columns split into several tables, keeping the key columns and each column group
   (e.g. the columns of one arm) together;
5. records: one heading per row (its key cells, e.g. a task id, printed whole) and its fields
   below it, ``header: value``.

A line longer than the console is printed as one line (soft wrap: the terminal may fold it on the
screen, a pipe gets it whole) rather than broken inside a word, so ids stay greppable.

``output_console`` is the console of the commands that print tables: a terminal's own width; when
the output is piped or redirected, ``$COLUMNS`` if set, else ``PIPE_WIDTH`` (rich's own default
there is 80, too narrow for the figure tables).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from typing import Literal, Union

from rich import box
from rich.cells import cell_len
from rich.console import Console
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

PIPE_WIDTH = 100
Justify = Literal["left", "right", "center"]


def output_console(as_json: bool = False, *, soft_wrap: bool = False) -> Console:
    """The stdout console of a command: a terminal's width, else $COLUMNS, else PIPE_WIDTH.
    ``soft_wrap``: plain lines are not wrapped (FitTable lays out its tables either way)."""
    if as_json:
        return Console(soft_wrap=True, highlight=False)
    if sys.stdout.isatty():
        return Console(highlight=False, soft_wrap=soft_wrap)
    columns = os.environ.get("COLUMNS", "")
    width = int(columns) if columns.isdigit() and int(columns) > 0 else PIPE_WIDTH
    return Console(width=width, highlight=False, soft_wrap=soft_wrap)


class Stack:
    """A cell of several parts: on one line when the table fits so, else one part per line."""

    def __init__(self, *parts: str | Text) -> None:
        self.parts = [t for t in map(_text, parts) if t.plain]

    def text(self, stacked: bool) -> Text:
        return Text("\n" if stacked else " ").join(self.parts)


Cell = Union[str, Text, Stack]


def _text(cell: str | Text) -> Text:
    return cell.copy() if isinstance(cell, Text) else Text.from_markup(cell)


def _render(cell: Cell, stacked: bool) -> Text:
    return cell.text(stacked) if isinstance(cell, Stack) else _text(cell)


def _full(t: Text) -> int:
    return max((cell_len(line) for line in t.plain.split("\n")), default=0)


def _word(t: Text) -> int:
    return max((cell_len(w) for w in t.plain.split()), default=0)


@dataclass
class _Column:
    header: Cell
    justify: Justify
    wrap: bool
    group: str | None
    cells: list[Cell] = field(default_factory=list)


class FitTable:
    """A table that picks a layout showing every character (see the module docstring).

    ``key``: how many leading columns name a row (repeated in every split table; a record's
    heading). ``boxed``: rich's default lined table instead of the compact figure table."""

    def __init__(self, title: str | Text | None = None, *, key: int = 1, boxed: bool = False) -> None:
        self.title = _text(title) if title is not None else None
        self.key, self.boxed = key, boxed
        self.columns: list[_Column] = []
        self.labels: list[str | None] = []

    def add_column(self, header: Cell, justify: Justify = "left", *, wrap: bool = False,
                   group: str | None = None) -> None:
        """``wrap``: prose that may wrap at spaces; ``group``: columns kept together when split."""
        self.columns.append(_Column(header, justify, wrap, group))

    def add_row(self, *cells: Cell, label: str | None = None) -> None:
        """``label``: the row's heading as a record (default: its key cells, an empty one
        repeating the row above)."""
        if len(cells) != len(self.columns):
            raise ValueError(f"{len(cells)} cell(s) for {len(self.columns)} column(s)")
        self.labels.append(label)
        for col, cell in zip(self.columns, cells):
            col.cells.append(cell)

    @property
    def rows(self) -> int:
        return len(self.columns[0].cells) if self.columns else 0

    # ------------------------------------------------------------------------------- layout

    def _pads(self, n: int) -> tuple[list[int], int]:
        """Padding per column and the width of borders and separators."""
        if self.boxed:  # rich's default: padding (0, 1) on every side, edges and separators
            return [2] * n, 2 + (n - 1)
        return [1] * (n - 1) + [0], n - 1  # right padding 1, no edges, a blank separator

    def _widths(self, cols: list[_Column], stacked: bool, width: int) -> list[int] | None:
        """Content widths that show every character within ``width``, or None."""
        lows, highs = [], []
        for col in cols:
            texts = [_render(c, stacked) for c in [col.header, *col.cells]]
            full = max(_full(t) for t in texts)
            lows.append(max(_word(t) for t in texts) if col.wrap else full)
            highs.append(full)
        pads, extra = self._pads(len(cols))
        room = width - sum(pads) - extra
        if sum(highs) <= room:
            return [max(h, 1) for h in highs]
        if sum(lows) > room:
            return None
        widths, spare = list(lows), room - sum(lows)
        wanting = sorted((h - lo, i) for i, (h, lo) in enumerate(zip(highs, lows)) if h > lo)
        for want, i in wanting:  # the columns that want least get all they want; the widest the rest
            give = min(want, spare)
            widths[i] += give
            spare -= give
        return [max(w, 1) for w in widths]

    def _table(self, cols: list[_Column], widths: list[int], stacked: bool) -> Table:
        if self.boxed:
            t = Table(show_lines=False)
        else:
            t = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 1, 0, 0))
        for col, w in zip(cols, widths):
            t.add_column(_render(col.header, stacked), justify=col.justify, no_wrap=not col.wrap,
                         overflow="fold", width=w)
        for i in range(self.rows):
            t.add_row(*[_render(col.cells[i], stacked) for col in cols])
        return t

    def _chunks(self, width: int) -> list[tuple[list[_Column], list[int]]] | None:
        """The columns split into tables that fit, each with the key columns and whole groups."""
        keys, rest = self.columns[:self.key], self.columns[self.key:]
        groups: list[list[_Column]] = []
        for col in rest:
            if groups and col.group is not None and groups[-1][0].group == col.group:
                groups[-1].append(col)
            else:
                groups.append([col])
        chunks: list[tuple[list[_Column], list[int]]] = []
        current: list[_Column] = []
        for g in groups:
            if current and self._widths(keys + current + g, True, width) is not None:
                current += g
                continue
            if current:
                chunks.append((keys + current, self._widths(keys + current, True, width) or []))
            if self._widths(keys + g, True, width) is None:
                return None
            current = list(g)
        if current:
            chunks.append((keys + current, self._widths(keys + current, True, width) or []))
        return chunks if len(chunks) > 1 else None

    def fits(self, width: int) -> bool:
        """Whether the whole table fits ``width`` as one table with every cell on one line (layout 1)."""
        return self._widths(self.columns, False, width) is not None

    # ------------------------------------------------------------------------------- printing

    def print(self, out: Console) -> None:
        width = out.width
        if self.title is not None:
            title = self.title.copy()
            title.stylize("bold")
            out.print(title, soft_wrap=_word(title) > width)
        for stacked in (False, True):
            widths = self._widths(self.columns, stacked, width)
            if widths is not None:
                out.print(self._table(self.columns, widths, stacked), soft_wrap=False)
                return
        chunks = self._chunks(width)
        if chunks is not None:
            for cols, widths in chunks:
                out.print(self._table(cols, widths, True), soft_wrap=False)
            return
        self._records(out, width)

    def _records(self, out: Console, width: int) -> None:
        last: list[Text] = [Text() for _ in range(self.key)]
        for i in range(self.rows):
            keys = [_render(col.cells[i], False) for col in self.columns[:self.key]]
            keys = [k if k.plain.strip() else last[j] for j, k in enumerate(keys)]
            last = keys
            label = self.labels[i]
            heading = Text(label if label is not None else " · ".join(k.plain.strip() for k in keys if k.plain.strip()),
                           style="bold")
            out.print(heading, soft_wrap=True)
            fields: list[Text] = []
            for col in self.columns[self.key:]:
                value = _render(col.cells[i], False)
                if not value.plain.strip():
                    continue
                header = _render(col.header, False).plain
                fields.append(Text.assemble((f"{header}: ", "dim"), value) if header else value)
            self._pack(out, fields, width)

    @staticmethod
    def _pack(out: Console, fields: list[Text], width: int) -> None:
        """Fields, indented, several to a line while they fit; a long one alone (wrapped at
        spaces, or whole on one line when it holds a word longer than the line)."""
        indent, gap = 2, "   "
        line: list[Text] = []

        def flush() -> None:
            if line:
                out.print(Text(" " * indent) + Text(gap).join(line), soft_wrap=True)
                line.clear()

        for f in fields:
            f.plain = f.plain.replace("\n", " ")
            n = cell_len(f.plain)
            used = sum(cell_len(x.plain) for x in line) + len(gap) * len(line)
            if line and indent + used + n <= width:
                line.append(f)
                continue
            flush()
            if indent + n <= width:
                line.append(f)
            elif indent + _word(f) <= width:
                out.print(Padding(f, (0, 0, 0, indent)), soft_wrap=False)
            else:
                out.print(Text(" " * indent) + f, soft_wrap=True)
        flush()
