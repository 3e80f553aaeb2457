"""The stratified lift and its score interval (Mantel-Haenszel, Miettinen-Nurminen;
`evolve.stats`)."""

from __future__ import annotations

import math
import random

from evolve.stats import restricted_rates, stratified


def _brute(x1: int, n1: int, x0: int, n0: int, delta: float) -> float:
    """The restricted maximum-likelihood p1 under p1 - p0 = delta, by grid search."""
    lo, hi = max(0.0, delta), min(1.0, 1.0 + delta)
    best, arg = -math.inf, lo
    for i in range(1, 4000):
        p1 = lo + (hi - lo) * i / 4000
        p0 = p1 - delta
        ll = 0.0
        for p, x, n in ((p1, x1, n1), (p0, x0, n0)):
            ll += x * math.log(max(p, 1e-300)) + (n - x) * math.log(max(1 - p, 1e-300))
        if ll > best:
            best, arg = ll, p1
    return arg


def test_the_restricted_rates_are_the_maximum_likelihood_ones() -> None:
    rng = random.Random(3)
    for _ in range(60):
        n1, n0 = rng.randint(1, 8), rng.randint(1, 8)
        x1, x0 = rng.randint(0, n1), rng.randint(0, n0)
        delta = rng.uniform(-0.9, 0.9)
        r1, r0 = restricted_rates(x1, n1, x0, n0, delta)
        assert abs(r1 - _brute(x1, n1, x0, n0, delta)) < 2e-3
        assert abs((r1 - r0) - delta) < 1e-9


def test_the_interval_and_the_test_at_zero_agree() -> None:
    rng = random.Random(5)
    crit = 1.6448536269514722  # two-sided 90 %
    for _ in range(200):
        cells = []
        for _task in range(rng.randint(1, 4)):
            n1, n0 = rng.randint(1, 6), rng.randint(1, 6)
            cells.append((n1, rng.randint(0, n1), n0, rng.randint(0, n0)))
        st = stratified(cells, 0.9)
        assert st.interval is not None and st.lift is not None
        lo, hi = st.interval
        assert -1 <= lo <= st.lift <= hi <= 1
        assert (hi < 0) == (st.z() < -crit) or abs(st.z() + crit) < 1e-6
