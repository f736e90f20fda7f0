"""Failure taxonomy, the generic part: the label of a failed trial and the counting per class.

A benchmark owns its classes (``Benchmark.failure_classes``: id → label, in precedence order,
``other`` last) and its classifier (``Benchmark.classify(record, context)`` → ``FailureLabel`` for a
FAILED VALID trial: every class whose rule matches, the first as ``primary``, the rest as
``secondary``); τ²'s are in ``agentrig.bench.tau.failures``. This module counts the labels.

``taxonomy(labels, examples=3, classes=…)`` counts per class over ``(TrialKey, FailureLabel)``
pairs; group by arm and domain with ``taxonomy_groups``.

Shapes (pydantic)::

    FailureLabel:  primary: str, secondary: list[str], classes: list[str] (primary + secondary,
                   precedence order), components: list[str] (failing reward components in the
                   basis), termination: str, evidence: dict[str, list[str]]
    ClassCount:    id: str, label: str, primary: int, secondary: int, any: int,
                   examples: list[TrialKey] (primary), secondary_examples: list[TrialKey]
    Taxonomy:      failed: int, classes: list[ClassCount] (every class, in the benchmark's order)
    TaxonomyGroup: arm: str, domain: str | None (None = all the arm's domains), taxonomy: Taxonomy
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rich.markup import escape
from rich.text import Text

from agentrig.types import FailureLabel, Strict, TrialKey

from .figure import ArmInputs, Figure, RunInputs

__all__ = ["FailureLabel", "ClassCount", "Taxonomy", "TaxonomyGroup", "taxonomy", "taxonomy_groups",
           "EVIDENCE_MAX", "OTHER"]

EVIDENCE_MAX = 5  # evidence texts per class
OTHER = {"other": "Other"}


class ClassCount(Strict):
    id: str
    label: str
    primary: int = 0
    secondary: int = 0
    any: int = 0
    examples: list[TrialKey] = []
    secondary_examples: list[TrialKey] = []


class Taxonomy(Strict):
    failed: int
    classes: list[ClassCount]


class TaxonomyGroup(Strict):
    arm: str
    domain: str | None
    taxonomy: Taxonomy


# ---- counting -------------------------------------------------------------------------------


def _count(counts: dict[str, ClassCount], cid: str) -> ClassCount:
    if cid not in counts:
        counts[cid] = ClassCount(id=cid, label=cid)
    return counts[cid]


def taxonomy(labels: Iterable[tuple[TrialKey, FailureLabel]], examples: int = 3,
             classes: dict[str, str] = OTHER) -> Taxonomy:
    """Counts per class (as primary, as secondary, either) with up to ``examples`` trial keys
    each, in the order given; every class of ``classes`` is listed (a label's class outside them
    is added after them, named by its id)."""
    counts = {cid: ClassCount(id=cid, label=label) for cid, label in classes.items()}
    failed = 0
    for key, label in labels:
        failed += 1
        p = _count(counts, label.primary)
        p.primary += 1
        p.any += 1
        if len(p.examples) < examples:
            p.examples.append(key)
        for cid in label.secondary:
            s = _count(counts, cid)
            s.secondary += 1
            s.any += 1
            if len(s.secondary_examples) < examples:
                s.secondary_examples.append(key)
    return Taxonomy(failed=failed, classes=list(counts.values()))


def taxonomy_groups(labels: Iterable[tuple[TrialKey, FailureLabel]], examples: int = 3,
                    classes: dict[str, str] = OTHER) -> list[TaxonomyGroup]:
    """One taxonomy per arm over all its domains (``domain=None``), then one per arm and domain;
    arms and domains sorted."""
    by: dict[tuple[str, str | None], list[tuple[TrialKey, FailureLabel]]] = {}
    for key, label in labels:
        by.setdefault((key.arm, None), []).append((key, label))
        by.setdefault((key.arm, key.domain), []).append((key, label))
    order = sorted(by, key=lambda g: (g[0], g[1] is not None, g[1] or ""))
    return [TaxonomyGroup(arm=a, domain=d, taxonomy=taxonomy(by[(a, d)], examples, classes)) for a, d in order]


# ---- the figure (analysis/figure.py) ------------------------------------------------------------


class Failures(Strict):
    overall: Taxonomy  # over the arm's failed valid trials
    by_domain: dict[str, Taxonomy] = {}


class _TaskTables:
    """What the benchmark's failure classifier needs (``Benchmark.failure_context``; τ²: each
    domain's tasks by id and its spec), once per run: loaded at the first failed trial (a run where
    every trial passed needs neither the task files nor the domain's tools).

    ``loaded`` is ``{}`` before, ``{"context": …}`` after, ``None`` when it cannot be loaded (then
    the ``failures`` section says why and no arm gets a taxonomy)."""

    def __init__(self, run: RunInputs) -> None:
        self.run = run
        self.loaded: dict[str, Any] | None = {}

    def get(self) -> dict[str, Any] | None:
        if self.loaded == {} and self.run.plan is not None and self.run.plan.tasks:
            from agentrig.errors import AgentrigError

            try:
                self.loaded = {"context": self.run.bench.failure_context(self.run.config)}
            except AgentrigError as exc:
                self.run.sections["failures"] = f"unavailable: {exc}"
                self.loaded = None
        return self.loaded


class _Labels:
    """The labels of an arm's failed valid trials, classified as the record pass meets them."""

    def __init__(self, tables: _TaskTables) -> None:
        self.tables = tables
        self.labels: list[tuple[TrialKey, FailureLabel]] = []

    def add(self, rec: Any) -> None:
        from .reliability import is_success

        if not is_success(rec.verdict.reward) and (loaded := self.tables.get()) is not None:
            label = self.tables.run.bench.classify(rec, loaded["context"])
            if label is not None:
                self.labels.append((rec.key, label))


class FailureClasses(Figure):
    """Why trials fail: the benchmark's failure classes over each arm's failed valid trials (and
    per domain); unavailable — for every arm — when the run's tasks cannot be loaded."""

    id = "failures"
    result = Failures
    json_keys = ("failures", "failures_by_domain")
    analyze_slot = "details"
    report_slot = "failures"
    section = "failures"

    def collector(self, arm: ArmInputs) -> _Labels:
        tables = arm.run.cache.get(self.id)
        if tables is None:
            tables = arm.run.cache[self.id] = _TaskTables(arm.run)
        return _Labels(tables)

    def compute(self, arm: ArmInputs) -> Failures | None:
        col = arm.collected[self.id]
        if col.tables.loaded is None:
            return None
        classes = arm.bench.failure_classes
        return Failures(overall=taxonomy(col.labels, classes=classes),
                        by_domain={d: taxonomy([x for x in col.labels if x[0].domain == d], classes=classes)
                                   for d in arm.run.plan.tasks})

    def finish(self, results: dict[str, Failures], run: RunInputs) -> dict[str, Failures]:
        tables = run.cache.get(self.id)
        # a failed trial met tasks that cannot be loaded: no arm has a taxonomy
        return {} if tables is not None and tables.loaded is None else results

    def dump(self, dumped: Any) -> dict[str, Any]:
        if dumped is None:
            return {"failures": None, "failures_by_domain": {}}
        return {"failures": dumped["overall"], "failures_by_domain": dumped["by_domain"]}

    def load(self, data: dict[str, Any]) -> Failures | None:
        if data.get("failures") is None:
            return None
        return Failures.model_validate({"overall": data["failures"], "by_domain": data.get("failures_by_domain") or {}})

    def linked_trials(self, result: Failures) -> list[tuple[str, str, int]]:
        return [(k.domain, k.task_id, k.trial) for c in result.overall.classes
                for k in c.examples + c.secondary_examples]

    def print(self, results: dict[str, Failures], out: Any, analysis: Any) -> bool:
        status = analysis.sections.get("failures", "ok")
        if status != "ok":
            out.print(Text(f"failure classes: {status}", style="yellow"))
            return True
        from .text import table

        for arm, r in results.items():
            tax = r.overall
            if not tax.failed:
                continue
            t = table(f"failure classes: {arm} ({tax.failed} failed valid trial(s))", ("class", "left"),
                      ("primary", "right"), ("any", "right"), ("examples", "wrap"))
            for c in tax.classes:
                if not c.any:
                    continue
                ex = ", ".join(f"{k.task_id}#{k.trial}" for k in c.examples)
                t.add_row(escape(c.label), str(c.primary), str(c.any), escape(ex))
            t.print(out)
        return True
