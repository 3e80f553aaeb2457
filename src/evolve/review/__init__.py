"""Human review of learned memory.

Names are imported on first use: training marks ops pending (`as_pending`) without loading
the review commands, which write through `txn`.
"""

from typing import TYPE_CHECKING

from evolve._lazy import lazy_exports

if TYPE_CHECKING:
    from evolve.review._pending import as_pending
    from evolve.review._review import PendingItem, approve, list_pending, reject

__getattr__, __dir__ = lazy_exports(
    __name__,
    globals(),
    {
        "evolve.review._pending": ("as_pending",),
        "evolve.review._review": ("PendingItem", "approve", "list_pending", "reject"),
    },
)

__all__ = ["PendingItem", "approve", "as_pending", "list_pending", "reject"]
