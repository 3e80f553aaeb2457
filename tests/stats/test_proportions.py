"""Score intervals for a proportion and for a difference of two (`evolve.stats`)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evolve.stats import newcombe, wilson


def test_wilson_matches_known_values() -> None:
    lo, hi = wilson(0, 10, 1.959964)
    assert lo == 0.0 and hi == pytest.approx(0.2775, abs=1e-4)
    lo, hi = wilson(5, 10, 1.959964)
    assert lo == pytest.approx(0.2366, abs=1e-4) and hi == pytest.approx(0.7634, abs=1e-4)


def test_newcombe_matches_the_published_example() -> None:
    # Newcombe (1998), example (a): 56/70 vs 48/80, method 10: (0.0524, 0.3339) at 95 %.
    lo, hi = newcombe(56, 70, 48, 80, 0.95) or (math.nan, math.nan)
    assert lo == pytest.approx(0.0524, abs=1e-3) and hi == pytest.approx(0.3339, abs=1e-3)
    assert newcombe(1, 2, 0, 0, 0.9) is None


@given(
    st.integers(0, 40), st.integers(1, 40), st.integers(0, 40), st.integers(1, 40),
    st.floats(0.55, 0.99),
)  # fmt: skip
def test_the_interval_holds_the_lift(x1: int, n1: int, x0: int, n0: int, conf: float) -> None:
    x1, x0 = min(x1, n1), min(x0, n0)
    lo, hi = newcombe(x1, n1, x0, n0, conf) or (math.nan, math.nan)
    d = x1 / n1 - x0 / n0
    assert -1.0 - 1e-9 <= lo <= d + 1e-9 <= hi + 2e-9 <= 1.0 + 2e-9
    wider = newcombe(x1, n1, x0, n0, min(0.995, conf + 0.004)) or (math.nan, math.nan)
    assert wider[0] <= lo + 1e-12 and wider[1] >= hi - 1e-12
