"""Adaptive per-attempt timeouts: a hung request is cut after seconds, not after ``timeout_s``.

One ``LatencyWindow`` per (endpoint, model) keeps the latencies of its last answered attempts
(for a streamed answer, the time to its first byte: ``observe`` is given whatever the sender
measured). Until ``WARMUP`` answers are seen, an attempt gets the configured ``timeout_s``; after
that it gets ``MULTIPLE`` × the ``PERCENTILE``-th percentile of the window, never less than
``FLOOR_S`` and never more than ``timeout_s``.

The limit also applies to attempts already in flight: an attempt sent during the warm-up (with
the configured limit) is watched (``watch``), and when the window's limit first becomes known or
drops, its deadline is brought forward to its start + the new limit. Without this, a request that
hangs among the first few of a run would still wait for the whole ``timeout_s``.

A request that is slow for a good reason (a long answer) must still get through: each timeout a
call has already met doubles the next attempt's limit (up to ``timeout_s``), so a call retried
after a cut soon gets the whole configured time. An attempt cut by the adaptive limit is a
``timeout`` fault like any other (retried; counted in the usage ledger's retries by cause).
"""

from __future__ import annotations

import asyncio
from collections import deque

WARMUP = 20  # answered attempts before the limit adapts
WINDOW = 200  # the latencies kept per (endpoint, model)
PERCENTILE = 99.0
MULTIPLE = 4.0
FLOOR_S = 1.0


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


class LatencyWindow:
    """The recent answered latencies of one (endpoint, model) and the timeout they suggest."""

    def __init__(self, *, warmup: int = WARMUP, size: int = WINDOW, multiple: float = MULTIPLE,
                 floor_s: float = FLOOR_S, percentile: float = PERCENTILE):
        self.warmup, self.multiple, self.floor_s, self.percentile = warmup, multiple, floor_s, percentile
        self._seen: deque[float] = deque(maxlen=size)
        self.answered = 0
        self._cached: float | None = None  # the adaptive limit, recomputed every few answers
        # attempts in flight: token -> (loop time sent, timeouts the call met before, cap, its timeout)
        self._pending: dict[int, tuple[float, int, float, asyncio.Timeout]] = {}

    def observe(self, latency_s: float) -> None:
        self._seen.append(latency_s)
        self.answered += 1
        if self.answered >= self.warmup and (self._cached is None or self.answered % 8 == 0
                                             or latency_s * self.multiple > self._cached):
            old = self._cached
            self._cached = max(self.floor_s, self.multiple * _percentile(list(self._seen), self.percentile))
            if old is None or self._cached < old:
                self._tighten()

    def watch(self, token: int, sent: float, timeouts_so_far: int, cap_s: float, cm: asyncio.Timeout) -> None:
        """An attempt in flight, cut by ``cm`` when the adaptive limit says so (see the module doc)."""
        self._pending[token] = (sent, timeouts_so_far, cap_s, cm)

    def unwatch(self, token: int) -> None:
        self._pending.pop(token, None)

    def _tighten(self) -> None:
        for sent, k, cap, cm in list(self._pending.values()):
            limit, adaptive = self.timeout_for(cap, k)
            when = cm.when()
            if adaptive and not cm.expired() and (when is None or sent + limit < when):
                cm.reschedule(sent + limit)  # (an expired one is being cut already)

    def adaptive_s(self) -> float | None:
        """The adapted limit (before the cap), or None while warming up."""
        return self._cached if self.answered >= self.warmup else None

    def timeout_for(self, configured_s: float, timeouts_so_far: int = 0) -> tuple[float, bool]:
        """(this attempt's limit, whether it is the adaptive one rather than ``configured_s``)."""
        base = self.adaptive_s()
        if base is None:
            return configured_s, False
        limit = base * (2 ** timeouts_so_far)
        if limit >= configured_s:
            return configured_s, False
        return limit, True
