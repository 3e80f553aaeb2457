"""A generation's time limit holds even when its alarm lands where Python swallows what the
signal handler raises (a `__del__`, a finalizer the garbage collector runs)."""

from __future__ import annotations

import signal
import sys
import time

import pytest

from evolve.generations._loop import GenerationTimeout, _time_limit


class _SlowToDie:
    """An object whose finalizer is still running when the alarm comes."""

    def __del__(self) -> None:
        time.sleep(0.6)


def test_an_alarm_swallowed_in_a_finalizer_still_ends_the_block(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    swallowed: list[type[BaseException] | None] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda raised: swallowed.append(raised.exc_type))
    started = time.monotonic()
    with pytest.raises(GenerationTimeout), _time_limit(0.2):
        _SlowToDie()  # dropped at once: its __del__ runs now, across the alarm at 0.2 s
        time.sleep(5)  # a limit lost with that alarm would let this run to its end

    took = time.monotonic() - started
    assert took < 4, f"the limit was lost: the block ran {took:.1f} s"
    assert swallowed == [GenerationTimeout]  # the first alarm's, raised inside __del__
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_the_limit_is_cleared_when_the_block_ends_in_time() -> None:
    with _time_limit(5):
        pass
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
