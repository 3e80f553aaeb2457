"""Kept for imports from the episode package; the redactor lives in :mod:`evolve.redact`."""

from evolve.redact import REDACTED, Redactor, redact, redact_text

__all__ = ["REDACTED", "Redactor", "redact", "redact_text"]
