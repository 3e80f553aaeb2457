"""Reflexion (last three, two sentences), Rewrite (one capped document), TopL (Beta posterior)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import partial
from typing import Any

import pytest

from evolve.applier import MemoryApplier
from evolve.llm._mock import MockLLM
from evolve.memory import MemoryUnit, load_units
from evolve.updaters import RECIPES, EpisodeView, RecipeContext, Update, get_recipe, render_for
from evolve.updaters._rewrite import DOCUMENT_ID
from evolve.updaters._topl import posterior_mean
from evolve.workspace import Workspace
from factories import memory_unit

ALEX = "user:alex"


def render_memory(units: Sequence[MemoryUnit], scope: str) -> str:
    """Rendered memory of a workspace configured to render every recipe."""
    return render_for(units, scope, RECIPES)


NOW = "2026-04-04T00:00:00+00:00"


def _ctx(
    units: Sequence[MemoryUnit],
    reply: str | dict[str, Any],
    episode: int = 1,
    max_chars: int = 1200,
) -> RecipeContext:
    return RecipeContext(
        units=list(units),
        scope=ALEX,
        episode=EpisodeView(
            episode=episode,
            task_id="pay_back-1",
            instruction="Pay Sam Lee back $42.50 on Venmo for dinner at Nopa.",
            actions="",
            complaint="I paid Sam Lee with a card I don't normally use.",
            accepted=False,
        ),
        llm=MockLLM([reply if isinstance(reply, str) else json.dumps(reply)]),
        seed=0,
        now=NOW,
        max_memory_chars=max_chars,
    )


def _observe(
    recipe: str,
    units: Sequence[MemoryUnit],
    reply: str | dict[str, Any],
    episode: int = 1,
    max_chars: int = 1200,
) -> Update:
    return get_recipe(recipe).observe(_ctx(units, reply, episode, max_chars))


_unit = partial(memory_unit, created_episode=0, updated_episode=0)


def _apply_and_commit(ws: Workspace, update: Update, message: str) -> None:
    applier = MemoryApplier(ws, ALEX)
    result = applier.apply(update.ops, load_units(ws.root))
    assert result.refused == []
    if result.paths:
        assert ws.store.commit(result.paths, message) is not None
    applier.done()


# --- reflexion -------------------------------------------------------------------------------


def test_reflexion_cuts_to_two_sentences() -> None:
    reply = {"reflection": "I used the wrong card. Alex pays with the Visa. Check first! Always."}
    update = _observe("reflexion", [], reply)
    (op,) = update.ops
    assert op.op == "add" and op.unit.kind == "reflection"
    assert op.unit.text == "I used the wrong card. Alex pays with the Visa."
    assert any("cut from 4 sentences to two" in n for n in update.notes)


def test_reflexion_two_sentences_are_kept_whole() -> None:
    update = _observe("reflexion", [], {"reflection": "One thing. Another thing?"})
    assert update.ops[0].unit.text == "One thing. Another thing?"
    assert update.notes == []


def test_reflexion_keeps_the_last_three() -> None:
    units = [
        _unit(
            f"refl-{i}",
            f"Lesson {i}.",
            recipe="reflexion",
            kind="reflection",
            created_episode=i,
            updated_episode=i,
        )
        for i in (4, 2, 7)
    ]
    units.append(
        _unit(
            "refl-old", "Revoked lesson.", recipe="reflexion", kind="reflection", status="revoked"
        )
    )
    update = _observe("reflexion", units, {"reflection": "Lesson 9."}, episode=9)
    assert [(op.op, op.id) for op in update.ops][1:] == [("evict", "refl-2")]
    assert update.ops[0].op == "add"
    two = _observe("reflexion", units[1:], {"reflection": "Lesson 9."}, episode=9)
    assert [op.op for op in two.ops] == ["add"]


def test_reflexion_end_to_end_renders_the_three_newest(workspace: Workspace) -> None:
    for episode in range(1, 6):
        update = _observe(
            "reflexion", load_units(workspace.root), {"reflection": f"Lesson {episode}."}, episode
        )
        _apply_and_commit(workspace, update, f"episode {episode}")
    units = load_units(workspace.root)
    assert sorted(u.text for u in units) == ["Lesson 3.", "Lesson 4.", "Lesson 5."]
    by_text = {u.text: u.id for u in units}
    assert render_memory(units, ALEX) == "\n".join(
        f"[{by_text[t]}] {t}" for t in ("Lesson 3.", "Lesson 4.", "Lesson 5.")
    )


@pytest.mark.parametrize(
    "reply", [{"reflection": ""}, {"reflection": ["a"]}, {"other": "x"}, "nope"]
)
def test_reflexion_refuses_a_bad_reply(reply: Any) -> None:
    update = _observe("reflexion", [], reply)
    assert update.ops == [] and update.refused


# --- rewrite ---------------------------------------------------------------------------------


def test_rewrite_first_document_is_an_add() -> None:
    update = _observe("rewrite", [], {"memory": "- Pay with the Visa.\n- Sign texts -Alex."})
    (op,) = update.ops
    assert op.op == "add" and op.id == DOCUMENT_ID
    assert (
        op.unit.kind == "document" and op.unit.text == "- Pay with the Visa.\n- Sign texts -Alex."
    )


def test_rewrite_replaces_the_document(workspace: Workspace) -> None:
    first = _observe("rewrite", [], {"memory": "Old document: pay with the Amex."})
    _apply_and_commit(workspace, first, "episode 1")
    second = _observe(
        "rewrite", load_units(workspace.root), {"memory": "New document: pay with the Visa."}, 2
    )
    (op,) = second.ops
    assert op.op == "rewrite" and op.id == DOCUMENT_ID and op.unit.updated_episode == 2
    _apply_and_commit(workspace, second, "episode 2")
    units = load_units(workspace.root)
    assert len(units) == 1
    assert render_memory(units, ALEX) == f"[{DOCUMENT_ID}] New document: pay with the Visa."
    # The same document again changes nothing.
    again = _observe("rewrite", units, {"memory": "  New document: pay with the Visa.\n"}, 3)
    assert again.ops == [] and again.refused == []


def test_rewrite_truncates_at_max_memory_chars_on_a_line_break() -> None:
    lines = [f"- Preference number {i} is written here." for i in range(20)]
    update = _observe("rewrite", [], {"memory": "\n".join(lines)}, max_chars=200)
    text = update.ops[0].unit.text
    assert len(text) <= 200
    assert text.splitlines() == lines[: len(text.splitlines())]  # whole lines only
    assert len(text.splitlines()) == 200 // (len(lines[0]) + 1)
    assert any("truncated" in n for n in update.notes)


def test_rewrite_truncates_a_single_long_line_at_the_cap() -> None:
    update = _observe("rewrite", [], {"memory": "x" * 500}, max_chars=150)
    assert update.ops[0].unit.text == "x" * 150


@pytest.mark.parametrize("reply", [{"memory": 3}, {"memory": None}, "not json"])
def test_rewrite_refuses_a_bad_reply(reply: Any) -> None:
    update = _observe("rewrite", [], reply)
    assert update.ops == [] and update.refused


# --- topl --------------------------------------------------------------------------------------

PAY_VISA = "Pay with the card ending in 4242 for every payment."
PAY_AMEX = "Pay with the card ending in 1881 for every payment."


def test_topl_a_new_assertion_starts_at_beta_1_1_plus_its_support() -> None:
    update = _observe("topl", [], {"assertions": [PAY_VISA]})
    (op,) = update.ops
    assert op.op == "add" and op.unit.kind == "assertion"
    assert (op.unit.alpha, op.unit.beta) == (2.0, 1.0)


def test_topl_alpha_rises_on_support() -> None:
    pool = [_unit("topl-a", PAY_VISA, recipe="topl", kind="assertion", alpha=2.0, beta=1.0)]
    update = _observe("topl", pool, {"assertions": [PAY_VISA.upper()]}, episode=3)
    (op,) = update.ops
    assert op.id == "topl-a" and op.op == "count"  # the sidecar moves; the file does not
    assert (op.unit.alpha, op.unit.beta) == (3.0, 1.0)
    assert op.unit.updated_episode == pool[0].updated_episode and op.unit.text == PAY_VISA


def test_topl_beta_rises_when_a_similar_assertion_contradicts() -> None:
    pool = [
        _unit("topl-a", PAY_VISA, recipe="topl", kind="assertion", alpha=3.0, beta=1.0),
        _unit(
            "topl-b",
            "Title notes in Title Case.",
            recipe="topl",
            kind="assertion",
            alpha=2.0,
            beta=1.0,
        ),
    ]
    update = _observe("topl", pool, {"assertions": [PAY_AMEX]}, episode=4)
    ops = {op.id: op for op in update.ops}
    assert ops["topl-a"].unit.beta == 2.0 and ops["topl-a"].unit.alpha == 3.0
    assert "topl-b" not in ops  # unrelated: untouched
    (new,) = [op for op in update.ops if op.op == "add"]
    assert new.unit.text == PAY_AMEX
    assert posterior_mean(ops["topl-a"].unit) < posterior_mean(pool[0])
    assert any("beta+1 for topl-a" in n for n in update.notes)


def test_topl_negation_also_counts_against() -> None:
    text = "Text messages should end with my first name."
    pool = [_unit("topl-a", text, recipe="topl", kind="assertion", alpha=2.0, beta=1.0)]
    update = _observe("topl", pool, {"assertions": [text.replace("should", "should not")]})
    assert next(op for op in update.ops if op.id == "topl-a").unit.beta == 2.0


def test_topl_renders_the_top_8_by_posterior_mean() -> None:
    params = [(9, 1), (1, 9), (5, 5), (8, 2), (2, 8), (7, 3), (3, 7), (6, 4), (4, 6), (10, 1)]
    pool = [
        _unit(
            f"topl-{i}",
            f"Assertion {i} about topic {i}.",
            recipe="topl",
            kind="assertion",
            alpha=a,
            beta=b,
        )
        for i, (a, b) in enumerate(params)
    ]
    pool.append(
        _unit(
            "topl-x",
            "Revoked but strong.",
            recipe="topl",
            kind="assertion",
            alpha=50,
            beta=1,
            status="revoked",
        )
    )
    rendered = render_memory(pool, ALEX)
    lines = rendered.splitlines()
    assert len(lines) == 8
    ranked = sorted(
        (u for u in pool if u.status == "active"), key=lambda u: posterior_mean(u), reverse=True
    )
    # The top 8 by posterior mean, shown in the order they were learned, each with its id.
    assert sorted(lines) == sorted(f"[{u.id}] {u.text}" for u in ranked[:8])
    assert "Assertion 1 about" not in rendered and "Assertion 4 about" not in rendered
    assert "Revoked but strong." not in rendered


def test_topl_moves_both_parameters_over_episodes(workspace: Workspace) -> None:
    replies = [[PAY_VISA], [PAY_VISA], [PAY_AMEX], [PAY_AMEX], [PAY_AMEX]]
    for episode, assertions in enumerate(replies, start=1):
        update = _observe("topl", load_units(workspace.root), {"assertions": assertions}, episode)
        _apply_and_commit(workspace, update, f"episode {episode}")
    units = {u.text: u for u in load_units(workspace.root)}
    visa, amex = units[PAY_VISA], units[PAY_AMEX]
    assert (visa.alpha, visa.beta) == (3.0, 4.0)
    assert (amex.alpha, amex.beta) == (4.0, 1.0)
    # The corrected statement ranks first and, learned last, is rendered last (it wins).
    assert get_recipe("topl").ranked(list(units.values()))[0].text == PAY_AMEX  # type: ignore[attr-defined]
    assert render_memory(list(units.values()), ALEX).splitlines()[-1] == f"[{amex.id}] {PAY_AMEX}"


@pytest.mark.parametrize("bad", ["", "   ", 5, "x" * 301])
def test_topl_refuses_bad_assertions_and_keeps_the_rest(bad: Any) -> None:
    update = _observe("topl", [], {"assertions": [bad, PAY_VISA]})
    assert len(update.refused) == 1
    assert [op.unit.text for op in update.ops] == [PAY_VISA]
