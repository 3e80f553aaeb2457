"""A lift (difference of pass rates) compared within strata and combined.

The estimate is the Mantel-Haenszel risk difference (weights n1 n0 / (n1 + n0) per stratum);
its interval is the stratified score interval of Miettinen and Nurminen (1985) with those
weights: every common lift d whose score statistic `sum w (p1 - p0 - d) / sqrt(sum w^2 V(d))`
lies within the normal quantile, V(d) the stratum's variance at its maximum-likelihood rates
under lift d, times N/(N-1). At d = 0 the statistic is the Cochran-Mantel-Haenszel test, so a
stratum whose arms agree adds nothing; a single stratum gives back the two-proportion score
interval. Why the skills scoreboard decides with it: `evolve.skills._scoreboard`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from statistics import NormalDist

# One stratum's two arms: (passes with, episodes with, passes without, episodes without).
Arms = tuple[int, int, int, int]


def restricted_rates(x1: int, n1: int, x0: int, n0: int, delta: float) -> tuple[float, float]:
    """Maximum-likelihood rates (p1, p0) of one stratum's two arms under p1 - p0 = delta: the
    closed form of Miettinen and Nurminen (1985), as Farrington and Manning (1990) write it."""
    p1, p0 = x1 / n1, x0 / n0
    theta = n0 / n1
    a = 1 + theta
    b = -(1 + theta + p1 + theta * p0 + delta * (theta + 2))
    c = delta * delta + delta * (2 * p1 + theta + 1) + p1 + theta * p0
    d = -p1 * delta * (1 + delta)
    v = b**3 / (27 * a**3) - b * c / (6 * a * a) + d / (2 * a)
    s = b * b / (9 * a * a) - c / (3 * a)
    u = math.copysign(math.sqrt(max(s, 0.0)), v) if v != 0 else math.sqrt(max(s, 0.0))
    if u == 0:
        r1 = -b / (3 * a)
    else:
        w = (math.pi + math.acos(max(-1.0, min(1.0, v / u**3)))) / 3
        r1 = 2 * u * math.cos(w) - b / (3 * a)
    lo, hi = max(0.0, delta), min(1.0, 1.0 + delta)
    r1 = min(hi, max(lo, r1))
    return r1, r1 - delta


def score_z(cells: Sequence[Arms], weights: Sequence[float], delta: float) -> float:
    """The stratified score statistic for a common lift `delta` (CMH weights; each stratum's
    variance at its restricted rates, with Miettinen-Nurminen's N/(N-1))."""
    num = var = 0.0
    for (x1, n1, x0, n0), w in zip(cells, weights, strict=True):
        num += w * (x1 / n1 - x0 / n0 - delta)
        r1, r0 = restricted_rates(x1, n1, x0, n0, delta)
        n = n1 + n0
        var += w * w * (r1 * (1 - r1) / n1 + r0 * (1 - r0) / n0) * n / (n - 1)
    if var <= 0:
        return 0.0 if abs(num) < 1e-12 else math.copysign(math.inf, num)
    return num / math.sqrt(var)


@dataclass(frozen=True)
class Stratified:
    """A lift combined over the strata where both arms were seen: `cells` holds
    (passes with, episodes with, passes without, episodes without) per such stratum."""

    cells: tuple[Arms, ...]
    confidence: float = 0.9

    @property
    def tasks(self) -> int:
        return len(self.cells)

    @property
    def injected(self) -> int:
        return sum(c[1] for c in self.cells)

    @property
    def held_out(self) -> int:
        return sum(c[3] for c in self.cells)

    @cached_property
    def weights(self) -> tuple[float, ...]:
        """Mantel-Haenszel (CMH) weights n1 * n0 / (n1 + n0), one per stratum."""
        return tuple(n1 * n0 / (n1 + n0) for _x1, n1, _x0, n0 in self.cells)

    @cached_property
    def lift(self) -> float | None:
        """The Mantel-Haenszel risk difference: the weighted mean of the strata's lifts."""
        if not self.cells:
            return None
        pairs = zip(self.cells, self.weights, strict=True)
        return sum(w * (x1 / n1 - x0 / n0) for (x1, n1, x0, n0), w in pairs) / sum(self.weights)

    def z(self, delta: float = 0.0) -> float:
        """The stratified score statistic for a common lift `delta` (at 0: the CMH test)."""
        return score_z(self.cells, self.weights, delta)

    @cached_property
    def interval(self) -> tuple[float, float] | None:
        """The stratified score interval at `confidence`: every common lift the score test
        does not reject (None without a stratum with both arms)."""
        lift = self.lift
        if lift is None:
            return None
        crit = NormalDist().inv_cdf(0.5 + self.confidence / 2)

        def root(target: float, lo: float, hi: float) -> float:
            # z(delta) decreases in delta; find z(delta) = target on [lo, hi].
            for _ in range(50):
                mid = (lo + hi) / 2
                if self.z(mid) > target:
                    lo = mid
                else:
                    hi = mid
            return (lo + hi) / 2

        eps = 1e-9
        lower = -1.0 if self.z(-1 + eps) <= crit else root(crit, -1 + eps, lift)
        upper = 1.0 if self.z(1 - eps) >= -crit else root(-crit, lift, 1 - eps)
        return max(-1.0, min(lower, lift)), min(1.0, max(upper, lift))

    @property
    def below_zero(self) -> bool:
        """The interval lies wholly below 0 (checked by the test at 0 first: cheap)."""
        crit = NormalDist().inv_cdf(0.5 + self.confidence / 2)
        if not self.cells or self.z(0.0) >= -crit:
            return False
        iv = self.interval
        return iv is not None and iv[1] < 0


def stratified(strata: Iterable[tuple[int, int, int, int]], confidence: float) -> Stratified:
    """Compare the arms within each stratum and combine. `strata` holds (episodes with,
    passes with, episodes without, passes without) per stratum, as the skills' per-task
    record keeps them; strata missing an arm drop."""
    cells = tuple((b, a, d, c) for a, b, c, d in strata if a > 0 and c > 0)
    return Stratified(cells, confidence)
