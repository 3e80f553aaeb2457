"""The secrets a workspace hides by value, and hiding them: plain string work.

Kept apart from the patterns of `_redact` (and free of `re` and `typing`) so that the reading
commands' fast path (`evolve memory`) hides the same values as every other boundary without
paying for the pattern machinery.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

REDACTED = "<redacted>"
# The API-key environment variables the HTTP backends read: their values are always hidden.
DEFAULT_SECRET_ENV = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")
# Shorter listed values would hide ordinary text (a key of "x" would eat every letter x).
MIN_LISTED = 4
MIN_ENV = 8


def secret_values(
    values: Iterable[str] = (), env: Iterable[str] = (), environ: Mapping[str, str] | None = None
) -> tuple[str, ...]:
    """The listed `values`, and the values of the variables `env` and of
    :data:`DEFAULT_SECRET_ENV` (unset or short ones skipped), longest first: the order in
    which they are replaced, so a secret that holds another is hidden whole."""
    environ = os.environ if environ is None else environ
    found = {v for v in values if len(v) >= MIN_LISTED}
    for name in (*DEFAULT_SECRET_ENV, *env):
        value = environ.get(name, "")
        if len(value) >= MIN_ENV:
            found.add(value)
    return tuple(sorted(found, key=lambda v: (-len(v), v)))


def hide_values(text: str, values: Iterable[str]) -> str:
    """`text` with each of `values` (longest first, as :func:`secret_values` orders them)
    replaced by :data:`REDACTED`."""
    for value in values:
        if value in text:
            text = text.replace(value, REDACTED)
    return text


def holds_value(text: str, values: Iterable[str]) -> bool:
    """Whether `text` holds one of `values`."""
    return any(value in text for value in values)


def hide_in(value: object, values: Iterable[str]) -> object:
    """A copy of the JSON-like `value` with each of `values` hidden in every string of it
    (keys included): by value only, field names play no part."""
    values = tuple(values)
    if not values:
        return value
    if isinstance(value, str):
        return hide_values(value, values)
    if isinstance(value, dict):
        return {hide_in(k, values): hide_in(v, values) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [hide_in(v, values) for v in value]
    return value
