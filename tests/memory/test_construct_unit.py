"""The units the canonical reader proves valid are built without checking them again, and
are the units the checked constructor makes of the same values."""

from __future__ import annotations

from typing import Any

import pytest

from evolve._format._units import parse_values
from evolve.memory._files import construct_unit
from evolve.memory._unit import MemoryUnit

CANONICAL = """---
id: tepa-seed00553
schema: 1
recipe: tepa
kind: precedent
status: active
scope: user:alex
created_episode: 3
updated_episode: 553
key: other.detail_00553
---
Texts about topic 553 can be short and casual.
"""


def _same(values: dict[str, Any]) -> None:
    built, reference = construct_unit(dict(values)), MemoryUnit.model_validate(values)
    assert built == reference
    assert repr(built) == repr(reference)
    assert built.model_dump(by_alias=True) == reference.model_dump(by_alias=True)


def test_a_canonical_file_is_the_unit_the_checks_make() -> None:
    values = parse_values("memory/alex/tepa-seed00553.md", CANONICAL)
    assert values["created_episode"] == 3
    _same(values)


@pytest.mark.parametrize(
    "values",
    [
        {"id": "a", "recipe": "tepa", "kind": "directive", "schema": 1},  # by alias
        {"id": "a", "recipe": "tepa", "kind": "directive", "schema_version": 2},  # by name
        {"id": "a", "recipe": "tepa", "kind": "directive", "evidence": ["x"], "alpha": 1.5},
    ],
)
def test_any_values_are_built_as_the_checks_build_them(values: dict[str, Any]) -> None:
    _same(values)
