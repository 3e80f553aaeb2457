"""A preference's value at a tick of the persona's clock: its value, replaced by each change
due by then (drift, docs/sim.md).

Below both readers of persona files: the pydantic models (`_personas`) and the validated
values the environment holds (`_evalset`) answer `value_at` with this one function.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from evolve.envs.persona_world._rules import RULES_BY_NAME
from evolve.envs.persona_world._values import Value, value_from_yaml


def value_at(
    rule: str, value: Any, changes: Iterable[tuple[int, Any]], episode: int | None
) -> Value:
    """The value a preference holds at tick `episode` of the persona's clock (None: now,
    after every change): its `value`, replaced by each change due by then."""
    raw = value
    for at_episode, changed in sorted(changes, key=lambda c: c[0]):
        if episode is None or at_episode <= episode:
            raw = changed
    if raw is None:
        implied = RULES_BY_NAME[rule].implied_value
        if implied is None:  # validation rejects this; kept for type narrowing
            raise ValueError(f"rule {rule!r} needs a value")
        return implied
    return value_from_yaml(raw)
