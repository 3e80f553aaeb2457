"""Score intervals for a proportion (Wilson) and for a difference of two (Newcombe)."""

from __future__ import annotations

import math
from statistics import NormalDist


def wilson(passes: int, n: int, z: float) -> tuple[float, float]:
    """Wilson's score interval for `passes` of `n` (0..1 when n is 0)."""
    if n <= 0:
        return 0.0, 1.0
    p = passes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def newcombe(x1: int, n1: int, x0: int, n0: int, confidence: float) -> tuple[float, float] | None:
    """Newcombe's hybrid score interval for p1 - p0 (method 10 of Newcombe 1998; None while
    an arm is empty)."""
    if n1 <= 0 or n0 <= 0:
        return None
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    p1, p0 = x1 / n1, x0 / n0
    l1, u1 = wilson(x1, n1, z)
    l0, u0 = wilson(x0, n0, z)
    d = p1 - p0
    lo = d - math.sqrt((p1 - l1) ** 2 + (u0 - p0) ** 2)
    hi = d + math.sqrt((u1 - p1) ** 2 + (p0 - l0) ** 2)
    # A difference of proportions lies in [-1, 1]; rounding may put a bound a hair outside.
    return max(-1.0, lo), min(1.0, hi)
