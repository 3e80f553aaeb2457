"""Preference values and directives.

A *directive* is what a sentence says about one slot: a literal value (``"friends"``), a
reference to the user's profile (``Ref("first_name")``), a value the agent must compute
(``Computed("habitual_card")``), possibly negated ("do not ...").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Ref:
    """A value taken from the user's profile, e.g. their first name."""

    field: str


@dataclass(frozen=True)
class Computed:
    """A value the agent has to compute from data (history, the note's items)."""

    what: str


Value = str | Ref | Computed


@dataclass(frozen=True)
class Directive:
    """What one sentence says about one slot."""

    slot: str
    value: Value
    negated: bool = False


def value_from_yaml(raw: Any) -> Value:
    """Read a persona file's value: a string, ``{ref: field}`` or ``{computed: what}``."""
    if isinstance(raw, str):
        return raw
    if isinstance(raw, dict) and len(raw) == 1:
        ((key, inner),) = raw.items()
        if key == "ref" and isinstance(inner, str):
            return Ref(inner)
        if key == "computed" and isinstance(inner, str):
            return Computed(inner)
    raise ValueError(
        f"a preference value must be a string, {{ref: X}} or {{computed: X}}, not {raw!r}"
    )


def value_to_yaml(value: Value) -> Any:
    if isinstance(value, Ref):
        return {"ref": value.field}
    if isinstance(value, Computed):
        return {"computed": value.what}
    return value
