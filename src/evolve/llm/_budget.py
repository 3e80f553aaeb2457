"""What one run may spend on model requests: a total time, and a number of retries per role."""

from __future__ import annotations

import threading
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


class RetryBudget:
    """The retries one role's model may make in one command, all its requests together
    (`models.retry.budget` in evolve.yaml); shared by the threads that send them.

    A budget keeps a server that is down from costing every request all its tries: once it
    is spent, a request that fails is not tried again and its episode is recorded as failed.

    Args:
        retries: how many retries in all; None for no bound (the per-request tries remain).
    """

    def __init__(self, retries: int | None) -> None:
        self.retries = retries
        self.spent = 0
        self._lock = threading.Lock()

    def take(self) -> bool:
        """Take one retry; False when none is left."""
        with self._lock:
            if self.retries is not None and self.spent >= self.retries:
                return False
            self.spent += 1
            return True
