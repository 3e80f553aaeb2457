"""No silent duplicates or drops (issue 23 item 7): TEPA keeps one sentence under one key
(a vocabulary key takes over an invented one, and the invented key maps onto it after; the
same sentence proposed under an invented key is the held precedent); reflexion refuses a reflection it already
holds; a rewrite names the lines it drops; a trace check points at the complaint line that
produced it."""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import partial
from typing import Any

from evolve.applier import ApplyResult
from evolve.llm import MockLLM
from evolve.memory import MemoryUnit
from evolve.train import commit_message
from evolve.updaters import EpisodeView, RecipeContext, Update, get_recipe
from evolve.updaters._rewrite import DOCUMENT_ID
from factories import memory_unit

ALEX = "user:alex"
PRIVATE = "Keep my Venmo payments private."
_tepa = partial(memory_unit, recipe="tepa", kind="precedent", created_episode=0)


def _observe(
    recipe: str,
    units: Sequence[MemoryUnit],
    reply: dict[str, Any],
    complaint: str = "A line.",
    episode: int = 5,
) -> Update:
    ctx = RecipeContext(
        units=list(units),
        scope=ALEX,
        episode=EpisodeView(episode, "pay_back-1", "Pay Sam back.", "", complaint, False),
        llm=MockLLM([json.dumps(reply)]),
        seed=0,
        now="2026-04-04T00:00:00+00:00",
        tools=("venmo__send_payment", "gmail__send_email", "phone__send_text_message"),
    )
    return get_recipe(recipe).observe(ctx)


def _after(units: Sequence[MemoryUnit], update: Update) -> dict[str, MemoryUnit]:
    state = {u.id: u for u in units}
    for op in update.ops:
        if op.op == "evict":
            state.pop(op.id, None)
        else:
            state[op.id] = op.unit
    return state


def _active_texts(state: dict[str, MemoryUnit]) -> list[tuple[str | None, str]]:
    return sorted((u.key, u.text) for u in state.values() if u.status == "active")


# --- tepa ---------------------------------------------------------------------------------


TOTAL = "Put the running total in my payment note."


def test_a_vocabulary_key_takes_over_the_same_sentence_under_an_invented_key() -> None:
    invented = _tepa("tepa-0000000001", TOTAL, key="other.payment.running_sum")
    update = _observe(
        "tepa", [invented], {"precedents": [{"key": "payment.note", "sentence": TOTAL}]}
    )
    state = _after([invented], update)
    assert _active_texts(state) == [("payment.note", TOTAL)]
    assert state[invented.id].status == "revoked"
    (new,) = [u for u in state.values() if u.status == "active"]
    assert state[invented.id].revoked_by == new.id
    assert any("mapped onto payment.note" in note for note in update.notes)

    # From then on the invented key means the vocabulary key: a new sentence under it
    # replaces the precedent under payment.note instead of starting a second one.
    units = list(state.values())
    newer = "Put the total owed in my payment note."
    later = _observe(
        "tepa",
        units,
        {"precedents": [{"key": "payment.running_sum", "sentence": newer}]},
        episode=6,
    )
    assert _active_texts(_after(units, later)) == [("payment.note", newer)]


def test_the_same_sentence_under_an_invented_key_maps_onto_the_held_one() -> None:
    held = _tepa("tepa-0000000001", TOTAL, key="payment.note")
    for key in ("payment.running_sum", "payment.totals_line"):
        update = _observe("tepa", [held], {"precedents": [{"key": key, "sentence": TOTAL}]})
        assert update.ops == [] and update.refused == []
        assert f"key other.{key} mapped onto payment.note: duplicate of active precedent " in (
            "\n".join(update.notes)
        )


# --- reflexion -----------------------------------------------------------------------------


def test_reflexion_refuses_a_reflection_it_already_holds_and_evicts_nothing() -> None:
    refl = partial(memory_unit, recipe="reflexion", kind="reflection", created_episode=0)
    units = [refl(f"reflexion-{i}", f"Reflection {i} about something.") for i in range(2)]
    units.append(refl("reflexion-2", PRIVATE))
    update = _observe("reflexion", units, {"reflection": PRIVATE.upper()})
    assert update.ops == []
    (refusal,) = update.refused
    assert "already in memory (active): reflexion-2" in refusal.reason


# --- rewrite --------------------------------------------------------------------------------

DOC = "- Sign texts with - Alex.\n- Keep payments private.\n- Use bulleted lists in notes."


def test_a_rewrite_names_every_line_it_drops_in_its_commit() -> None:
    doc = memory_unit(DOCUMENT_ID, DOC, recipe="rewrite", kind="document", created_episode=0)
    new = "- Sign texts with - Alex.\n- Use numbered lists in notes."
    update = _observe("rewrite", [doc], {"memory": new})
    dropped = [n for n in update.notes if n.startswith("dropped line:")]
    assert dropped == [
        "dropped line: - Keep payments private.",
        "dropped line: - Use bulleted lists in notes.",
    ]
    _, body = commit_message(
        "rewrite", 5, "pay_back-1", "A line.", update, ApplyResult(applied=update.ops)
    )
    assert "- dropped line: - Keep payments private." in body

    # Lines only moved are not dropped.
    reordered = "\n".join(reversed(DOC.splitlines()))
    update = _observe("rewrite", [doc], {"memory": reordered}, episode=6)
    assert [op.op for op in update.ops] == ["rewrite"]
    assert not [n for n in update.notes if n.startswith("dropped line:")]


# --- trace ----------------------------------------------------------------------------------

EMAIL = (
    "The subject of my email to Sam was missing my usual tag.\n"
    "My email to Sam didn't close the way I sign my emails.\n"
    "My email to Sam didn't open with my usual greeting.\n"
    "I didn't get a copy of my email to Sam."
)


def _check(argument: str, predicate: str, value: str) -> dict[str, str]:
    return {
        "api": "gmail__send_email",
        "argument": argument,
        "predicate": predicate,
        "value": value,
    }


def test_a_trace_check_points_at_the_complaint_line_that_produced_it() -> None:
    checks = [
        _check("body", "startswith", "Hello "),
        _check("body", "endswith", "Best,\nAlex"),
        _check("cc", "equals", "alex@example.com"),
        _check("subject", "startswith", "[A]"),
    ]
    update = _observe("trace", [], {"checks": checks}, complaint=EMAIL)
    lines = EMAIL.splitlines()
    by_value = {op.unit.value: op.unit.complaint for op in update.ops}
    assert by_value == {
        "Hello ": lines[2],
        "Best,\nAlex": lines[1],
        "alex@example.com": lines[3],
        "[A]": lines[0],
    }


def test_one_trace_check_alone_still_finds_its_line() -> None:
    update = _observe(
        "trace", [], {"checks": [_check("body", "startswith", "Hello ")]}, complaint=EMAIL
    )
    (op,) = update.ops
    assert op.unit.complaint == EMAIL.splitlines()[2]
