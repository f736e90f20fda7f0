"""Retries against failures as a figure (analysis/figure.py): do the valid trials that needed a
retry fail more often than those that did not? (``usage.retry_effect``: Fisher's exact test.)"""

from __future__ import annotations

from typing import Any

from rich.text import Text

from .figure import ArmInputs, Figure
from .summary import RetryEffect
from .text import pct
from .usage import retry_effect


class Retries(Figure):
    id = "retries"
    result = RetryEffect
    json_keys = ("retries",)
    analyze_slot = "details"
    report_slot = "usage"

    def compute(self, arm: ArmInputs) -> RetryEffect:
        return retry_effect(arm.valid)

    def dump(self, dumped: Any) -> dict[str, Any]:
        return {"retries": RetryEffect().model_dump() if dumped is None else dumped}

    def print(self, results: dict[str, RetryEffect], out: Any, analysis: Any) -> bool:
        out.print(Text("retries and failures (valid trials)", style="bold"))
        for arm, r in results.items():
            out.print(Text(f"  {arm}: failure rate {pct(r.rate_retried)} with retries ({r.retried_failed}/{r.retried}), "
                           f"{pct(r.rate_clean)} without ({r.clean_failed}/{r.clean}); {r.note}"))
        return True
