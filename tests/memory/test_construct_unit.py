"""The units the canonical reader proves valid are built without pydantic's per-field work,
and are the very instances `MemoryUnit.model_construct` makes."""

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
    built, reference = construct_unit(dict(values)), MemoryUnit.model_construct(**values)
    assert list(built.__dict__.items()) == list(reference.__dict__.items())
    assert built.model_fields_set == reference.model_fields_set
    assert built.__pydantic_extra__ == reference.__pydantic_extra__
    assert built.__pydantic_private__ == reference.__pydantic_private__
    assert repr(built) == repr(reference)
    assert built.model_dump_json(by_alias=True) == reference.model_dump_json(by_alias=True)
    assert built.model_dump(exclude_unset=True) == reference.model_dump(exclude_unset=True)


def test_a_canonical_file_is_the_instance_model_construct_makes() -> None:
    values = parse_values("memory/alex/tepa-seed00553.md", CANONICAL)
    assert values["created_episode"] == 3
    _same(values)


@pytest.mark.parametrize(
    "values",
    [
        {"id": "a", "recipe": "tepa", "kind": "directive", "schema": 1},  # by alias
        {"id": "a", "recipe": "tepa", "kind": "directive", "schema": 1, "schema_version": 2},
        {"id": "a", "recipe": "tepa", "kind": "directive", "unknown": 1},  # ignored
        {"id": "a", "kind": "directive"},  # a required field left out
        {"id": "a", "recipe": "tepa", "kind": "directive", "evidence": ["x"], "alpha": 1.5},
    ],
)
def test_any_values_are_built_as_model_construct_builds_them(values: dict[str, Any]) -> None:
    _same(values)
