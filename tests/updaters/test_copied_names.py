"""Issue 22: a name copied from the schema (`<bullet id>`, `BULLET`, `...`) no longer wastes the
update: the name is refused with its reason and the statement is still learned (on main the
whole entry was refused, every episode)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from evolve.llm._mock import MockLLM
from evolve.memory import MemoryUnit
from evolve.updaters import EpisodeView, RecipeContext, Update, get_recipe

ALEX = "user:alex"
FRIENDS = "Set my Venmo payments to friends-only visibility."


def _observe(recipe: str, reply: dict[str, Any], units: list[MemoryUnit] | None = None) -> Update:
    ctx = RecipeContext(
        units=units or [],
        scope=ALEX,
        episode=EpisodeView(
            episode=2,
            task_id="pay_back-1",
            instruction="Pay Sam back $20 for lunch on Venmo.",
            actions="",
            complaint="My payment to Sam was not shown the way I share payments.",
            accepted=False,
        ),
        llm=MockLLM([json.dumps(reply)]),
        seed=0,
        now="2026-01-01T00:00:30+00:00",
    )
    return get_recipe(recipe).observe(ctx)


@pytest.mark.parametrize("name", ["<bullet id>", "BULLET", "...", "<id>"])
@pytest.mark.parametrize(
    ("recipe", "reply"),
    [
        ("ace", lambda n: {"operations": [{"op": "add", "text": FRIENDS, "replaces": [n]}]}),
        ("ace", lambda n: {"operations": [{"op": "modify", "id": n, "text": FRIENDS}]}),
        ("topl", lambda n: {"assertions": [{"text": FRIENDS, "replaces": [n]}]}),
        (
            "tepa",
            lambda n: {
                "precedents": [{"key": "payment.visibility", "sentence": FRIENDS, "replaces": [n]}]
            },
        ),  # fmt: skip
    ],
    ids=["ace-add", "ace-modify", "topl", "tepa"],
)
def test_a_copied_name_is_refused_and_the_statement_learned(
    recipe: str, reply: Any, name: str
) -> None:
    update = _observe(recipe, reply(name))
    assert [(op.op, op.unit.text) for op in update.ops] == [("add", FRIENDS)]
    assert any("placeholder" in r.reason for r in update.refused), update.refused
