"""``agentrig usage RUN --by model,hour [--role R] [--csv|--json]``: the usage table a gateway's
console shows — HTTP requests, tokens and cost per model per hour (UTC) — so that the two can be
reconciled line by line.

Every stored attempt of every trial counts (an invalid trial's calls were sent and billed too).
A request is one HTTP attempt: a call retried twice is three requests, as the gateway logs it.
The hour is the call's ``sent_at``; calls stored before that field existed get their trial's start
plus the latency of the calls before them (counted as ``estimated``). Cost comes from the run's
``[prices]``; a model without a price, or a call whose usage was not reported, leaves the cost of
its row unknown.
"""

from __future__ import annotations

import csv
import io
import json
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from rich.console import Console
from rich.text import Text

from agentrig.errors import ConfigError
from agentrig.store.rundir import open_run_dir

from agentrig.analysis.usage import _price_table

KEYS = ("model", "hour", "day", "role", "arm", "purpose")


class UsageRow(BaseModel):
    key: dict[str, str]
    calls: int = 0
    requests: int = 0  # HTTP attempts
    failed: int = 0  # calls that ended in an error
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    reasoning_tokens: int = 0
    cost_usd: float | None = 0.0
    estimated_time: int = 0  # calls binned by an estimated send time


class UsageTable(BaseModel):
    by: list[str]
    rows: list[UsageRow]
    total: UsageRow
    unpriced_models: list[str]


def parse_by(by: str) -> list[str]:
    keys = [k.strip() for k in by.split(",") if k.strip()]
    bad = [k for k in keys if k not in KEYS]
    if not keys or bad:
        raise ConfigError(f"--by {by!r}: expected a comma-separated list of {', '.join(KEYS)} (e.g. --by model,hour)")
    return keys


def _stamp(value: float) -> datetime:
    return datetime.fromtimestamp(value, tz=timezone.utc)


def usage_table(store: Any, config: dict, by: list[str], *, role: str | None = None, arm: str | None = None) -> UsageTable:
    prices = _price_table((config.get("experiment") or {}).get("prices") or config.get("prices"))
    rows: dict[tuple[str, ...], UsageRow] = {}
    total = UsageRow(key={})
    unpriced: set[str] = set()
    for rec in store.records(arm=arm):
        try:
            clock = datetime.fromisoformat(rec.started_at.replace("Z", "+00:00")).timestamp()
        except ValueError:
            clock = 0.0
        for call in rec.trajectory.model_calls:
            estimated = call.sent_at is None
            when = _stamp(clock if estimated else call.sent_at)
            clock = (clock if estimated else call.sent_at) + call.latency_s
            if role is not None and call.role != role:
                continue
            values = {"model": call.model or "(unknown)", "hour": when.strftime("%Y-%m-%d %H:00"),
                      "day": when.strftime("%Y-%m-%d"), "role": call.role, "arm": rec.key.arm, "purpose": call.purpose}
            key = tuple(values[k] for k in by)
            row = rows.get(key)
            if row is None:
                row = rows[key] = UsageRow(key={k: values[k] for k in by})
            cost: float | None = None
            if call.error is None:
                price = prices.get(call.model)
                u = call.usage
                if price is not None and u.reported:
                    cached = u.cached_tokens or 0
                    cost = ((u.prompt_tokens - cached) * price[0] + cached * price[2] + u.completion_tokens * price[1]) / 1e6
                elif price is None:
                    unpriced.add(call.model)
            for r in (row, total):
                r.calls += 1
                r.requests += max(1, len(call.attempts))
                r.estimated_time += int(estimated)
                if call.error is not None:
                    r.failed += 1
                    continue
                u = call.usage
                r.prompt_tokens += u.prompt_tokens
                r.completion_tokens += u.completion_tokens
                r.cached_tokens += u.cached_tokens or 0
                r.reasoning_tokens += u.reasoning_tokens or 0
                r.cost_usd = None if (r.cost_usd is None or cost is None) else r.cost_usd + cost
    ordered = [rows[k] for k in sorted(rows)]
    return UsageTable(by=by, rows=ordered, total=total, unpriced_models=sorted(unpriced))


COLUMNS = ("calls", "requests", "failed", "prompt_tokens", "completion_tokens", "cached_tokens", "reasoning_tokens", "cost_usd")


def to_csv(table: UsageTable) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow([*table.by, *COLUMNS])
    for r in table.rows:
        w.writerow([*(r.key[k] for k in table.by), *(_cell(getattr(r, c)) for c in COLUMNS)])
    return buf.getvalue()


def _cell(v: Any) -> str:
    if v is None:
        return ""
    return f"{v:.6f}" if isinstance(v, float) else str(v)


def usage_command(run_dir: Path, *, by: str, role: str | None, arm: str | None, as_csv: bool, as_json: bool,
                  out: Console) -> int:
    keys = parse_by(by)
    store, config = open_run_dir(run_dir)
    try:
        table = usage_table(store, config, keys, role=role, arm=arm)
    finally:
        store.close()
    if as_csv:
        sys.stdout.write(to_csv(table))
        return 0
    if as_json:
        sys.stdout.write(json.dumps(table.model_dump(mode="json"), indent=2) + "\n")
        return 0
    from rich.table import Table

    t = Table(title=f"usage by {', '.join(keys)} (hours in UTC)", title_justify="left")
    for k in keys:
        t.add_column(k, no_wrap=k in ("hour", "day"))
    # columns that are zero everywhere (no failures, no cached or reasoning tokens) are left out
    shown = [c for c in COLUMNS[:-1] if c in ("calls", "requests", "prompt_tokens", "completion_tokens") or getattr(table.total, c)]
    for c in shown:
        t.add_column(c.replace("_tokens", ""), justify="right")
    t.add_column("cost $", justify="right")
    for i, r in enumerate([*table.rows, table.total]):
        label = [r.key[k] for k in keys] if r.key else ["total", *[""] * (len(keys) - 1)]
        cost = "unknown" if r.cost_usd is None else f"{r.cost_usd:.4f}"
        t.add_row(*label, *(str(getattr(r, c)) for c in shown), cost, end_section=i == len(table.rows) - 1)
    out.print(t)
    if table.unpriced_models:
        out.print(Text(f"no price for {', '.join(table.unpriced_models)}: add [prices.\"<model>\"] to the experiment for costs"))
    if table.total.estimated_time:
        out.print(f"{table.total.estimated_time} call(s) stored without a send time: binned by their trial's start")
    return 0
