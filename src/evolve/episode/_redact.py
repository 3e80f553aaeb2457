"""Credentials never reach the disk: secret-named values are replaced before anything is written."""

from __future__ import annotations

import re
from typing import Any

REDACTED = "<redacted>"
_SECRET = re.compile(r"(password|passwd|token|secret|api_?key|authorization|credential)", re.I)


def redact(value: Any) -> Any:
    """A copy of `value` with every secret-named field's value replaced."""
    if isinstance(value, dict):
        return {
            k: (REDACTED if isinstance(k, str) and _SECRET.search(k) else redact(v))
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [redact(v) for v in value]
    return value
