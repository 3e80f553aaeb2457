"""Human review of learned memory."""

from evolve.review._pending import as_pending

__all__ = ["as_pending"]
