"""Secrets by name and by value: nothing credential-shaped is written (see `_redact`).

The by-value part (`_values`: which values, hiding them) loads without the patterns; the rest
(`Redactor`, `redact`, ...) loads on first use, so the reading commands' fast path can hide a
workspace's secrets without importing `re`.
"""

from evolve.redact._values import (
    DEFAULT_SECRET_ENV,
    MIN_ENV,
    MIN_LISTED,
    REDACTED,
    hide_in,
    hide_values,
    holds_value,
    secret_values,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from evolve.redact._redact import (
        DEFAULT_REDACTOR,
        Redactor,
        entropy,
        is_high_entropy,
        redact,
        redact_text,
    )

_LATER = ("DEFAULT_REDACTOR", "Redactor", "entropy", "is_high_entropy", "redact", "redact_text")


def __getattr__(name: str) -> object:
    if name in _LATER:
        from evolve.redact import _redact

        return getattr(_redact, name)
    raise AttributeError(f"module 'evolve.redact' has no attribute {name!r}")


__all__ = [
    "DEFAULT_REDACTOR",
    "DEFAULT_SECRET_ENV",
    "MIN_ENV",
    "MIN_LISTED",
    "REDACTED",
    "Redactor",
    "entropy",
    "hide_in",
    "hide_values",
    "holds_value",
    "is_high_entropy",
    "redact",
    "redact_text",
    "secret_values",
]
