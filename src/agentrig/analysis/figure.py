"""The figure protocol: a new analysis figure is one module, registered once.

A figure computes its value for one arm from that arm's stored trials, and says how it is shown as
a table (``FigureView``) — which ``agentrig analyze`` prints and the report draws (a table, and bars
when the view gives them), so that neither the analyze command nor the report learns anything new::

    class TrialDurations(Figure):
        id = "durations"                                  # its key in ArmAnalysis.figures (and --json)

        def compute(self, arm: ArmInputs) -> dict | None: # from the arm's verdict rows (and the seam)
            ...
        def view(self, results: dict[str, dict]) -> FigureView | None:   # results by arm
            ...

    FIGURES = [..., "agentrig.analysis.durations:TrialDurations"]   # below: the registry

The results are plain JSON (``ArmAnalysis.figures[id]``), so an analysis stored or printed with
``--json`` holds them; a figure that needs more than the verdict rows reads the store itself
(``ArmInputs.store``), streaming. The analysis imports no report: a view is data only.

**Where it is shown, and richer figures.** ``analyze_slot`` / ``report_slot`` name the place in
``analyze``'s text and in the report where a figure goes (``"figures"``: after the terminations,
the default; analyze also has ``"end"``, after everything; the report ``"consistency"``, in the
consistency section). A figure whose text is more than one table overrides ``print(results,
out)`` (returns True when it printed); a figure the report draws with more than a table and bars
has a drawer registered under its id on the report side (``report/drawers.py``: a function
from the results to a template context, and a template) — the analysis still imports no report,
and a figure without a drawer is drawn from its view.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, ClassVar

from pydantic import BaseModel

from agentrig.benchmark import figure_refs

__all__ = ["ArmInputs", "Bar", "FIGURES", "Figure", "FigureView", "compute_figures", "figure_views", "registered",
           "results_of", "print_figures"]

# the registered figures, by import path "module:Class", in the order they are shown; a benchmark's
# own figures are registered with the benchmark (benchmark.py, its registry entry's ``figures``)
# and shown after these (in their slot)
FIGURES: list[str] = [
    "agentrig.analysis.durations:TrialDurations",
    "agentrig.analysis.instability_view:DecisionInstability",
]


@dataclass
class ArmInputs:
    """What a figure computes from: one arm's verdict rows of the plan (valid and not, every
    attempt), the trials per task, the run's benchmark (the seam), its config snapshot and store."""

    arm: str
    n: int
    rows: list[Any]
    bench: Any = None
    config: dict = field(default_factory=dict)
    store: Any = None


class Bar(BaseModel):
    name: str
    value: float
    note: str | None = None


class FigureView(BaseModel):
    """How a figure is shown, the same in ``analyze`` and in the report: a table (the first column
    names the row) with an optional note, and optional bars (one per row) the report draws."""

    id: str
    title: str
    columns: list[str]
    rows: list[list[str]]
    note: str | None = None
    bars: list[Bar] = []
    unit: str = ""


class Figure:
    id: ClassVar[str]
    analyze_slot: ClassVar[str] = "figures"  # where ``agentrig analyze`` prints it (module docstring)
    report_slot: ClassVar[str] = "figures"  # where the report draws it

    def compute(self, arm: ArmInputs) -> dict[str, Any] | None:
        """This figure of one arm, as JSON-able data (None: nothing to show for this arm)."""
        raise NotImplementedError

    def view(self, results: dict[str, dict[str, Any]]) -> FigureView | None:
        """The table (and bars) of the arms' results (arm → result, in the arms' order)."""
        raise NotImplementedError

    def print(self, results: dict[str, dict[str, Any]], out: Any) -> bool:
        """Print the figure on a rich Console when it is more than its view's table (True when it
        printed; the default: False, and ``analyze`` prints the view)."""
        return False


_LOADED: list[Figure] | None = None
_LOADED_FROM: tuple[str, ...] = ()


def registered() -> list[Figure]:
    """The generic figures, then every registered benchmark's own (a figure's ``compute`` says None
    for a run it has nothing for)."""
    global _LOADED, _LOADED_FROM
    refs = tuple(dict.fromkeys([*FIGURES, *figure_refs()]))
    if _LOADED is None or refs != _LOADED_FROM:
        loaded = []
        for ref in refs:
            module, _, name = ref.partition(":")
            loaded.append(getattr(importlib.import_module(module), name)())
        _LOADED, _LOADED_FROM = loaded, refs
    return _LOADED


def compute_figures(arm: ArmInputs) -> dict[str, dict[str, Any]]:
    """Every registered figure of one arm that has something to show: id → its result."""
    out: dict[str, dict[str, Any]] = {}
    for fig in registered():
        value = fig.compute(arm)
        if value is not None:
            out[fig.id] = value
    return out


def results_of(fig: Figure, arms: list[Any]) -> dict[str, dict[str, Any]]:
    """A figure's results over ``arms`` (``ArmAnalysis`` objects): arm → result, in the arms' order."""
    return {a.arm: a.figures[fig.id] for a in arms if fig.id in (a.figures or {})}


def figure_views(arms: list[Any], slot: str | None = None, *, surface: str = "report") -> list[FigureView]:
    """The views of every registered figure over ``arms`` (``ArmAnalysis`` objects), in order
    (only the figures placed at ``slot`` of ``surface`` — "analyze" or "report" — when given)."""
    views = []
    for fig in registered():
        if slot is not None and getattr(fig, f"{surface}_slot") != slot:
            continue
        results = results_of(fig, arms)
        if results:
            view = fig.view(results)
            if view is not None:
                views.append(view)
    return views


def print_figures(arms: list[Any], slot: str, out: Any, table: Any) -> None:
    """``agentrig analyze``'s text of the figures placed at ``slot``: each figure's own ``print``,
    else its view as a table (``table(view, out)``)."""
    for fig in registered():
        if fig.analyze_slot != slot:
            continue
        results = results_of(fig, arms)
        if not results or fig.print(results, out):
            continue
        view = fig.view(results)
        if view is not None:
            table(view, out)
