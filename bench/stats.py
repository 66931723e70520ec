"""Summaries of measured samples."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence


def percentile(samples: Sequence[float], p: float) -> float:
    """The nearest-rank percentile (p in 0..100) of the samples; NaN for no samples."""
    if not samples:
        return math.nan
    ordered = sorted(samples)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[rank - 1]


def p50_p95(samples: Sequence[float]) -> dict[str, float]:
    return {"p50": percentile(samples, 50), "p95": percentile(samples, 95), "n": len(samples)}


def from_histogram(histogram: Mapping[int, int]) -> dict[str, float]:
    """p50 / p95 (nearest rank, whole ms, rounded up) and the count of a latency histogram."""
    total = sum(histogram.values())
    found = {"p50": math.nan, "p95": math.nan, "n": total}
    for name, p in (("p50", 50), ("p95", 95)):
        rank, seen = max(1, math.ceil(p / 100 * total)), 0
        for ms in sorted(histogram):
            seen += histogram[ms]
            if seen >= rank:
                found[name] = float(ms)
                break
    return found
