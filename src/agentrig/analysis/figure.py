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
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, ClassVar

from pydantic import BaseModel

__all__ = ["ArmInputs", "Bar", "FIGURES", "Figure", "FigureView", "compute_figures", "figure_views", "registered"]

# the registered figures, by import path "module:Class", in the order they are shown
FIGURES: list[str] = [
    "agentrig.analysis.durations:TrialDurations",
    "agentrig.bench.appworld.goals:GoalCompletion",  # AppWorld runs only
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

    def compute(self, arm: ArmInputs) -> dict[str, Any] | None:
        """This figure of one arm, as JSON-able data (None: nothing to show for this arm)."""
        raise NotImplementedError

    def view(self, results: dict[str, dict[str, Any]]) -> FigureView | None:
        """The table (and bars) of the arms' results (arm → result, in the arms' order)."""
        raise NotImplementedError


_LOADED: list[Figure] | None = None


def registered() -> list[Figure]:
    global _LOADED
    if _LOADED is None:
        loaded = []
        for ref in FIGURES:
            module, _, name = ref.partition(":")
            loaded.append(getattr(importlib.import_module(module), name)())
        _LOADED = loaded
    return _LOADED


def compute_figures(arm: ArmInputs) -> dict[str, dict[str, Any]]:
    """Every registered figure of one arm that has something to show: id → its result."""
    out: dict[str, dict[str, Any]] = {}
    for fig in registered():
        value = fig.compute(arm)
        if value is not None:
            out[fig.id] = value
    return out


def figure_views(arms: list[Any]) -> list[FigureView]:
    """The views of every registered figure over ``arms`` (``ArmAnalysis`` objects), in order."""
    views = []
    for fig in registered():
        results = {a.arm: a.figures[fig.id] for a in arms if fig.id in (a.figures or {})}
        if results:
            view = fig.view(results)
            if view is not None:
                views.append(view)
    return views
