"""Okapi BM25 over a small set of short documents that grows and shrinks (the memory bank).

Our own implementation, no dependency. Terms are maximal runs of letters and digits of the
lower-cased text (``user_id`` → ``user``, ``id``; ``HAT-123`` → ``hat``, ``123``). A document's
term counts are computed once, when it is added; document frequencies and the total length are
kept up to date on ``add`` / ``remove``, so ranking costs one pass over the documents' terms.

Score of a document d for a query q (each distinct query term counted once):

    sum over t in q ∩ d of  idf(t) · tf(t, d) · (k1 + 1) / (tf(t, d) + k1 · (1 − b + b · |d| / avg|d|))
    idf(t) = ln(1 + (N − df(t) + 0.5) / (df(t) + 0.5))        (never negative)

Ties are broken in favour of the newer document (added later).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Collection, Iterable

_TERM = re.compile(r"[^\W_]+")

K1 = 1.5
B = 0.75


def terms(text: str) -> list[str]:
    """The terms of a text, in order, repeats kept."""
    return _TERM.findall(text.lower())


class BM25Index:
    """Documents keyed by a string (a bank entry id); ``top`` ranks them against a query."""

    __slots__ = ("_docs", "_df", "_total", "_seq", "k1", "b")

    def __init__(self, k1: float = K1, b: float = B):
        self._docs: dict[str, tuple[Counter, int, int]] = {}  # key -> (term counts, length, seq)
        self._df: Counter = Counter()
        self._total = 0
        self._seq = 0
        self.k1, self.b = k1, b

    def __len__(self) -> int:
        return len(self._docs)

    def __contains__(self, key: str) -> bool:
        return key in self._docs

    def add(self, key: str, text: str) -> None:
        if key in self._docs:
            self.remove(key)
        tf = Counter(terms(text))
        length = sum(tf.values())
        self._seq += 1
        self._docs[key] = (tf, length, self._seq)
        self._df.update(tf.keys())
        self._total += length

    def remove(self, key: str) -> None:
        doc = self._docs.pop(key, None)
        if doc is None:
            return
        tf, length, _ = doc
        self._total -= length
        df = self._df
        for t in tf:
            left = df[t] - 1
            if left:
                df[t] = left
            else:
                del df[t]

    def scores(self, query: Iterable[str], keys: Iterable[str] | None = None) -> dict[str, float]:
        """BM25 score of every document (or of ``keys``) for the query terms."""
        docs = self._docs
        n = len(docs)
        if not n:
            return {}
        df = self._df
        idf = {t: math.log(1.0 + (n - df[t] + 0.5) / (df[t] + 0.5)) for t in set(query) if t in df}
        avg = (self._total / n) or 1.0
        k1, b = self.k1, self.b
        out: dict[str, float] = {}
        for key in (docs if keys is None else keys):
            doc = docs.get(key)
            if doc is None:
                continue
            tf, length, _ = doc
            norm = k1 * (1.0 - b + b * length / avg)
            score = 0.0
            if len(tf) <= len(idf):
                for t, f in tf.items():
                    w = idf.get(t)
                    if w is not None:
                        score += w * f * (k1 + 1.0) / (f + norm)
            else:
                for t, w in idf.items():
                    f = tf.get(t)
                    if f:
                        score += w * f * (k1 + 1.0) / (f + norm)
            out[key] = score
        return out

    def top(self, query: Iterable[str], k: int, keys: Collection[str] | None = None, *,
            positive_only: bool = False) -> list[str]:
        """The ``k`` best keys, best first (ties: newer first). ``positive_only`` drops documents
        that share no term with the query."""
        if k <= 0:
            return []
        scored = self.scores(query, keys)
        docs = self._docs
        ranked = sorted(scored, key=lambda key: (-scored[key], -docs[key][2]))
        if positive_only:
            ranked = [key for key in ranked if scored[key] > 0.0]
        return ranked[:k]
