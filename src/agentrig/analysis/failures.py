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

from agentrig.types import FailureLabel, Strict, TrialKey

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
