"""Evalset files in the plain form are taken without pydantic, as the models take them; any
other form (and every error) is the models' (seeded variants of the shipped files)."""

from __future__ import annotations

import copy
import random
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from evolve.envs.persona_world._evalset import _plain_splits, _plain_tasks
from evolve.envs.persona_world._personas import Persona, _persona, _plain, _validated
from evolve.envs.persona_world._specs import _ProcedureSpec, _Splits, _TaskSpec

EVALSET = Path(__file__).parents[2] / "evalset"
_ODD: list[Any] = [None, True, 0, 1, 2.5, "7", "x", [], {}, [1], {"a": 1}, -3, ("a",)]


def _personas() -> list[Any]:
    return [yaml.safe_load(p.read_text()) for p in sorted((EVALSET / "personas").glob("*.yaml"))]


def _mutate(rng: random.Random, data: Any) -> Any:
    """`data` with one value somewhere replaced, a key dropped or one added."""
    data = copy.deepcopy(data)
    node = data
    while True:
        if isinstance(node, dict) and node:
            key = rng.choice(list(node))
            what = rng.random()
            if what < 0.15:
                del node[key]
                return data
            if what < 0.25:
                node[rng.choice(["extra", "Name", 1])] = rng.choice(_ODD)
                return data
            if what < 0.55 or not isinstance(node[key], dict | list):
                node[key] = rng.choice(_ODD)
                return data
            node = node[key]
        elif isinstance(node, list) and node:
            i = rng.randrange(len(node))
            if rng.random() < 0.4 or not isinstance(node[i], dict | list):
                node[i] = rng.choice(_ODD)
                return data
            node = node[i]
        else:
            return data


def _outcome(fn: Any, data: Any) -> Any:
    try:
        return ("ok", fn(data))
    except (ValidationError, ValueError, TypeError) as exc:
        return ("error", type(exc).__name__, str(exc))


def test_the_shipped_personas_are_plain_and_built_as_pydantic_builds_them() -> None:
    for data in _personas():
        plain = _plain(_persona, data)
        assert plain is not None
        assert plain == _validated(Persona, data)


@pytest.mark.parametrize("seed", range(4))
def test_a_changed_persona_is_read_or_refused_as_pydantic_does(seed: int) -> None:
    rng = random.Random(seed)
    plain_count = 0
    for _ in range(150):
        data = _mutate(rng, rng.choice(_personas()))
        want = _outcome(lambda d: _validated(Persona, d), data)
        assert _outcome(Persona.validate, data) == want
        plain_count += _plain(_persona, data) is not None
    assert plain_count > 0  # some variants stay plain (amount 1 for 1.0, a dropped history)


def _model_tasks(entries: Any, model: Any) -> Any:
    return [
        (t.id, t.family, t.params, getattr(t, "split", None))
        for t in (model.model_validate(e) for e in entries)
    ]


@pytest.mark.parametrize("seed", range(3))
def test_tasks_and_splits_in_the_plain_form_are_the_models(seed: int) -> None:
    rng = random.Random(seed)
    tasks = yaml.safe_load((EVALSET / "tasks.yaml").read_text())
    splits = yaml.safe_load((EVALSET / "splits.yaml").read_text())
    procedures = [{**t, "split": rng.choice(["train", "dev", "holdout"])} for t in tasks[:5]]
    assert _plain_tasks(tasks, with_split=False) == _model_tasks(tasks, _TaskSpec)
    assert _plain_tasks(procedures, with_split=True) == _model_tasks(procedures, _ProcedureSpec)
    valid = _Splits.model_validate(splits)
    assert _plain_splits(splits) == {s: getattr(valid, s) for s in ("train", "dev", "holdout")}
    for _ in range(200):
        for doc, model, with_split in (
            (tasks, _TaskSpec, False),
            (procedures, _ProcedureSpec, True),
        ):
            changed = _mutate(rng, doc)
            plain = _plain_tasks(changed, with_split=with_split)
            if plain is not None:  # the plain form: what the model keeps
                assert plain == _model_tasks(changed, model)
        changed = _mutate(rng, splits)
        if _plain_splits(changed) is not None:
            kept = _Splits.model_validate(changed)
            assert _plain_splits(changed) == {
                s: getattr(kept, s) for s in ("train", "dev", "holdout")
            }
