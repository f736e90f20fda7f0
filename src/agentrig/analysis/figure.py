"""The figure protocol: every analysis figure is one module, registered once.

A figure computes its typed result for one arm from that arm's stored trials, says how
``agentrig analyze`` prints it (its text view) and how the report shows it (its view: a table and
bars, or a drawer of the report's own), so that neither the analyze command nor the report learns
anything new when a figure is added::

    class TrialDurations(Figure):
        id = "durations"                                  # its key in ArmAnalysis.figures
        result = Durations                                # its typed result (a types.Strict model)

        def compute(self, arm: ArmInputs) -> Durations | None:     # from the arm's verdict rows
            ...
        def view(self, results: dict[str, Durations]) -> FigureView | None:   # results by arm
            ...

**Registered** by import path ``"module:Class"``, in the order they are shown: the core's below
(``FIGURES``), then each benchmark's (its registry entry's ``figures`` in ``benchmark.py``), then the
plug-ins' (a plug-in package registers its own with one line on import:
``agentrig.plugins.register(kind, factory, figures=["module:Class"])``, which calls ``register``
here). ``registered()`` is the list; a figure whose ``compute`` says None has nothing for that arm.

**Computing.** ``compute(arm)`` gets the arm's planned verdict rows (valid and not, every attempt),
its core figures (``arm.overall``), the run's benchmark, config snapshot and store. A figure that
reads trajectories gives a ``collector(arm)`` (an object with ``add(record)``): the analysis feeds
it every planned valid record in its one streaming pass, and ``compute`` finds it in
``arm.collected[id]``. ``finish(results, run)`` runs once after every arm (e.g. the memory
plug-in's A/B against the baseline arm). ``section`` names a part of ``Analysis.sections`` the
figure reports on ("ok" or "unavailable: <why>").

**Showing.** ``analyze_slot`` / ``report_slot`` name where it goes. ``analyze``: ``"figures"``
(after the pass^k curve: the default), ``"details"`` (after those), ``"end"``. The report:
``"consistency"`` (in the consistency section), ``"failures"`` (the failure section's body),
``"after_ab"`` (after the A/B differences), ``"figures"`` (before the usage section: the
default), ``"usage"`` (a part of each arm's block in the usage section). ``analyze`` prints
``print(results, out, analysis)`` when the figure overrides it (True: it printed), else its
view's table; the report draws its view (a table, and bars when it gives them) unless a drawer is
registered under its id on the report side (``report/drawers.py``) — the analysis imports no
report. ``linked_trials(result)`` names the trials the report links to (their trajectories are
embedded).

**Stored and exported.** ``ArmAnalysis.figures`` maps id → result; ``--json`` writes a figure
under the arm's ``figures`` (the default), or, with ``json_keys``, as those keys of the arm
itself (``dump`` / ``load``: the keys analyses had before the protocol — ``usage``, ``reruns``,
``retries``, ``consistency``, ``failures`` and ``failures_by_domain``, ``memory``; ``()``: a
figure whose numbers are already in ``overall``, written nowhere else).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, ClassVar

from pydantic import BaseModel

from agentrig.benchmark import figure_refs

__all__ = ["ArmInputs", "Bar", "FIGURES", "PLUGIN_FIGURES", "Figure", "FigureView", "RunInputs", "print_figures",
           "read_arm", "register", "registered", "results_of", "write_arm"]

# the core's figures, by import path "module:Class", in the order they are shown (in their slots)
FIGURES: list[str] = [
    "agentrig.analysis.usage:UsageFigure",
    "agentrig.analysis.components:Components",
    "agentrig.analysis.terminations:Terminations",
    "agentrig.analysis.durations:TrialDurations",
    "agentrig.analysis.reruns:RerunsFigure",
    "agentrig.analysis.retries:Retries",
    "agentrig.analysis.consistency:ConsistencyFigure",
    "agentrig.analysis.failures:FailureClasses",
    "agentrig.analysis.instability_view:DecisionInstability",
]

# the plug-ins' figures, registered by the plug-in packages (``register``), shown after the others
PLUGIN_FIGURES: list[str] = []


def register(ref: str) -> None:
    """Register a figure by import path ("module:Class"); a plug-in package does it on import."""
    if ref not in PLUGIN_FIGURES:
        PLUGIN_FIGURES.append(ref)


@dataclass
class RunInputs:
    """What every arm's figures share: the run's config snapshot, store, benchmark and directory,
    its plan (``analysis.build.Plan``), the analysis's ``sections`` and a cache figures may keep
    run-wide state in (by their id)."""

    config: dict = field(default_factory=dict)
    store: Any = None
    bench: Any = None
    plan: Any = None
    run_dir: str = ""
    sections: dict[str, str] = field(default_factory=dict)
    cache: dict[str, Any] = field(default_factory=dict)


@dataclass
class ArmInputs:
    """What a figure computes from: one arm's verdict rows of the plan (valid and not, every
    attempt), the trials per task, the run's benchmark (the seam), its config snapshot and store;
    the arm's core figures (``overall``: ``summary.Figures``), the collectors fed in the record
    pass (by figure id) and the run (``RunInputs``)."""

    arm: str
    n: int
    rows: list[Any]
    bench: Any = None
    config: dict = field(default_factory=dict)
    store: Any = None
    run: RunInputs = field(default_factory=RunInputs)
    overall: Any = None
    collected: dict[str, Any] = field(default_factory=dict)
    planned: set[tuple[str, str]] = field(default_factory=set)  # (domain, task id) of the plan
    outside_plan: bool = False  # the store holds trials of this arm outside the plan

    @property
    def valid(self) -> list[Any]:
        return [r for r in self.rows if r.valid]


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
    result: ClassVar[type[BaseModel]]  # the typed result (a types.Strict model)
    analyze_slot: ClassVar[str] = "figures"  # where ``agentrig analyze`` prints it (module docstring)
    report_slot: ClassVar[str] = "figures"  # where the report draws it
    json_keys: ClassVar[tuple[str, ...] | None] = None  # None: under the arm's "figures"; else keys of the arm
    section: ClassVar[str | None] = None  # its entry in Analysis.sections

    def collector(self, arm: ArmInputs) -> Any | None:
        """An object fed (``add(record)``) every planned valid record of the arm, or None."""
        return None

    def compute(self, arm: ArmInputs) -> BaseModel | None:
        """This figure of one arm (None: nothing to show for this arm)."""
        raise NotImplementedError

    def finish(self, results: dict[str, Any], run: RunInputs) -> dict[str, Any]:
        """Every arm's result, once all are computed (arm → result); what the analysis keeps."""
        return results

    def view(self, results: dict[str, Any]) -> FigureView | None:
        """The table (and bars) of the arms' results (arm → result, in the arms' order); None: a
        figure shown only by its own ``print`` and its report drawer."""
        return None

    def print(self, results: dict[str, Any], out: Any, analysis: Any) -> bool:
        """Print the figure on a rich Console when it is more than its view's table (True when it
        printed; the default: False, and ``analyze`` prints the view when there are results).
        ``analysis``: the whole ``Analysis`` (its n, sections, arms)."""
        return False

    def linked_trials(self, result: Any) -> list[tuple[str, str, int]]:
        """The trials (domain, task id, trial) the report's drawing of ``result`` links to."""
        return []

    def dump(self, dumped: Any) -> dict[str, Any]:
        """The arm's JSON keys for its result as serialized (``model_dump``; None: the arm has
        none) — for ``json_keys`` figures."""
        return {key: dumped for key in self.json_keys or ()}

    def load(self, data: dict[str, Any]) -> Any:
        """The result read back from an arm's JSON keys (None: nothing)."""
        keys = self.json_keys or ()
        if len(keys) != 1 or data.get(keys[0]) is None:
            return None
        return self.result.model_validate(data[keys[0]])


_LOADED: list[Figure] | None = None
_LOADED_FROM: tuple[str, ...] = ()


def registered() -> list[Figure]:
    """The core's figures, then every registered benchmark's own, then the plug-ins'."""
    global _LOADED, _LOADED_FROM
    refs = tuple(dict.fromkeys([*FIGURES, *figure_refs(), *PLUGIN_FIGURES]))
    if _LOADED is None or refs != _LOADED_FROM:
        loaded = []
        for ref in refs:
            module, _, name = ref.partition(":")
            loaded.append(getattr(importlib.import_module(module), name)())
        _LOADED, _LOADED_FROM = loaded, refs
    return _LOADED


def results_of(fig: Figure, arms: list[Any]) -> dict[str, Any]:
    """A figure's results over ``arms`` (``ArmAnalysis`` objects): arm → result, in the arms' order."""
    return {a.arm: a.figures[fig.id] for a in arms if fig.id in (a.figures or {})}


def print_figures(analysis: Any, slot: str, out: Any, table: Any) -> None:
    """``agentrig analyze``'s text of the figures placed at ``slot``: each figure's own ``print``,
    else its view as a table (``table(view, out)``)."""
    arms = list(analysis.arms.values())
    for fig in registered():
        if fig.analyze_slot != slot:
            continue
        results = results_of(fig, arms)
        if fig.print(results, out, analysis) or not results:
            continue
        view = fig.view(results)
        if view is not None:
            table(view, out)


# ---- an arm's JSON ---------------------------------------------------------------------------


def read_arm(data: dict[str, Any], fields: set[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """An arm as stored or printed (``--json``) → the fields of ``ArmAnalysis`` (``fields``): the
    keys of the ``json_keys`` figures into ``figures``, and every known figure's result typed; and
    the keys no registered figure reads, as they were (a plug-in's figure when the plug-in is not
    loaded)."""
    data = dict(data)
    figures = dict(data.get("figures") or {})
    for fig in registered():
        keys = fig.json_keys
        if fig.id in figures:
            if not isinstance(figures[fig.id], BaseModel):
                figures[fig.id] = fig.result.model_validate(figures[fig.id])
        elif keys is not None and (any(k in data for k in keys) or (not keys and "overall" in data)):
            value = fig.load(data)
            if value is not None:
                figures[fig.id] = value
        for k in keys or ():
            data.pop(k, None)
    data["figures"] = figures
    unread = {k: data.pop(k) for k in list(data) if k not in fields}
    return data, unread


def write_arm(data: dict[str, Any], unread: dict[str, Any] | None = None) -> dict[str, Any]:
    """An arm's serialized fields (``data``, its ``figures`` last) → its JSON: each ``json_keys``
    figure's keys (and the ``unread`` keys) before ``figures``, which keeps the others (in the
    registry's order)."""
    figs = registered()
    at_arm = {f.id for f in figs if f.json_keys is not None}
    out = {k: v for k, v in data.items() if k != "figures"}
    dumped = data.get("figures") or {}
    for fig in figs:
        if fig.json_keys:
            out.update(fig.dump(dumped.get(fig.id)))
    out.update(unread or {})
    out["figures"] = {k: v for k, v in dumped.items() if k not in at_arm}
    return out
