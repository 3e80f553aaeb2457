"""How a job's failure leaves an executor: as it is, or as `EpisodeFailed` naming the item.

Every executor (`_base`'s and Ray's, `_ray`) raises through `failure`, so it sits below them.
"""

from __future__ import annotations

from collections.abc import Callable

from evolve.errors import EvolveError


class EpisodeFailed(EvolveError):
    """One job raised something that is not an :class:`EvolveError` (a bug, usually)."""


def failure(
    exc: BaseException, index: int, total: int, label: Callable[[int], str] | None
) -> BaseException:
    """What to raise for `exc`, raised by item `index` of `total`: an :class:`EvolveError`
    as it is (its one-sentence message), anything else as :class:`EpisodeFailed` naming the
    item (`label`'s words for it, or its position)."""
    if isinstance(exc, EvolveError):
        return exc
    what = label(index) if label else f"item {index + 1} of {total}"
    detail = " ".join(str(exc).split()) or "no message"
    return EpisodeFailed(f"{what} failed with {type(exc).__name__}: {detail}.")
