"""Summaries of measured samples."""

from __future__ import annotations

import math
from collections.abc import Sequence


def percentile(samples: Sequence[float], p: float) -> float:
    """The nearest-rank percentile (p in 0..100) of the samples; NaN for no samples."""
    if not samples:
        return math.nan
    ordered = sorted(samples)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[rank - 1]


def p50_p95(samples: Sequence[float]) -> dict[str, float]:
    return {"p50": percentile(samples, 50), "p95": percentile(samples, 95), "n": len(samples)}
