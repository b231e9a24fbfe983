"""How the bench takes a latency: calls timed one by one, and the nearest-rank percentile of them."""

from __future__ import annotations

import time


def timed(call, n: int) -> list[float]:
    out = []
    for _ in range(n):
        began = time.perf_counter()
        call()
        out.append(time.perf_counter() - began)
    return out


def percentile(values: list[float], p: float) -> float:
    """Nearest-rank percentile of `values` (p in 0..100)."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    rank = max(1, min(len(ordered), round(p / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]
