"""Human review of learned memory."""

from evolve.review._pending import as_pending
from evolve.review._review import PendingItem, approve, list_pending, reject

__all__ = ["PendingItem", "approve", "as_pending", "list_pending", "reject"]
