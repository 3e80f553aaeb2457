"""Secrets by name and by value: nothing credential-shaped is written (see `_redact`)."""

from evolve.redact._redact import (
    DEFAULT_REDACTOR,
    DEFAULT_SECRET_ENV,
    MIN_LISTED,
    REDACTED,
    Redactor,
    entropy,
    is_high_entropy,
    redact,
    redact_text,
)

__all__ = [
    "DEFAULT_REDACTOR",
    "DEFAULT_SECRET_ENV",
    "MIN_LISTED",
    "REDACTED",
    "Redactor",
    "entropy",
    "is_high_entropy",
    "redact",
    "redact_text",
]
