"""A total time budget for the model requests of one run."""

from __future__ import annotations

import time
from collections.abc import Callable

from evolve.llm._errors import BudgetSpent


class Budget:
    """Seconds of model requests a run may spend in all; each request gets what is left.

    Args:
        total_s: the budget; None for none.
        clock: a monotonic clock (tests pass a fake one).
    """

    def __init__(self, total_s: float | None, clock: Callable[[], float] = time.monotonic) -> None:
        self.total_s = total_s
        self._clock = clock
        self._start = clock()

    def remaining(self) -> float | None:
        """Seconds left, None without a budget.

        Raises:
            BudgetSpent: when nothing is left.
        """
        if self.total_s is None:
            return None
        left = self.total_s - (self._clock() - self._start)
        if left <= 0:
            raise BudgetSpent(
                f"the run's model time budget of {self.total_s:g} s is spent; raise "
                "models.total_timeout_s in evolve.yaml, or run fewer tasks."
            )
        return left
