"""How long trials take, per arm (a figure of the figure protocol, analysis/figure.py): the median,
90th percentile and longest wall time of valid trials, and the time spent on attempts that came back
invalid (and were replayed) — where a run's time goes, and what the plumbing cost in time."""

from __future__ import annotations

from typing import Any

import numpy as np

from agentrig.types import Strict

from .figure import ArmInputs, Bar, Figure, FigureView


def _s(x: float | None) -> str:
    return "—" if x is None else f"{x:.2f}"


class Durations(Strict):
    valid_trials: int
    median_s: float | None = None
    p90_s: float | None = None
    max_s: float | None = None
    total_valid_s: float = 0.0
    invalid_attempts: int = 0
    invalid_s: float = 0.0


class TrialDurations(Figure):
    id = "durations"
    result = Durations

    def compute(self, arm: ArmInputs) -> Durations | None:
        valid = np.array([r.duration_s for r in arm.rows if r.valid], dtype=float)
        invalid = [r.duration_s for r in arm.rows if not r.valid]
        if not valid.size and not invalid:
            return None
        return Durations(
            valid_trials=int(valid.size),
            median_s=float(np.median(valid)) if valid.size else None,
            p90_s=float(np.percentile(valid, 90)) if valid.size else None,
            max_s=float(valid.max()) if valid.size else None,
            total_valid_s=float(valid.sum()),
            invalid_attempts=len(invalid),
            invalid_s=float(sum(invalid)),
        )

    def view(self, results: dict[str, Any]) -> FigureView | None:
        rows = [[arm, str(r.valid_trials), _s(r.median_s), _s(r.p90_s), _s(r.max_s),
                 f"{r.invalid_attempts} ({_s(r.invalid_s)} s)"] for arm, r in results.items()]
        bars = [Bar(name=arm, value=r.median_s, note=f"{r.median_s:.2f} s") for arm, r in results.items()
                if r.median_s is not None]
        return FigureView(id=self.id, title="trial durations (seconds of wall time per trial)",
                          columns=["arm", "valid trials", "median s", "p90 s", "max s", "invalid attempts (s)"],
                          rows=rows, bars=bars, unit=" s",
                          note="valid trials only; invalid attempts were replayed and are counted apart")
