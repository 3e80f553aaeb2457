"""Issue 8 item 1: every recipe lets the updater name what a proposal replaces or retires.

Named supersession revokes whatever the textual similarity; similarity and polarity are the
safety net only when the updater names nothing. Also item 6: a unit's provenance is the
complaint line about its rule, and rewrite bodies are cut at word boundaries.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import partial
from typing import Any

import pytest

from evolve.applier import MemoryApplier
from evolve.llm import Message
from evolve.llm._mock import MockLLM
from evolve.memory import MemoryUnit, load_units
from evolve.memory._similarity import trigram_cosine
from evolve.ops import Op
from evolve.updaters import EpisodeView, RecipeContext, Update, get_recipe, render_for
from evolve.updaters._rewrite import clip
from evolve.updaters._topl import posterior_mean
from evolve.workspace import Workspace
from factories import memory_unit

ALEX = "user:alex"
NOW = "2026-05-05T00:00:00+00:00"
COMPLAINT = (
    "My text to Sam didn't end the way I sign my texts.\n"
    "My payment to Sam was public; I wanted it more private."
)
PUBLIC = "Payments should be public."
PRIVATE = "Payments should be private."
BY_DEFAULT_PRIVATE = "Venmo payments must be private by default."
BY_DEFAULT_FRIENDS = "Venmo payments must be friends by default."


def _ctx(units: Sequence[MemoryUnit], reply: dict[str, Any], episode: int = 5) -> RecipeContext:
    return RecipeContext(
        units=list(units),
        scope=ALEX,
        episode=EpisodeView(
            episode=episode,
            task_id="pay_back-1",
            instruction="Pay Sam Lee back $42.50 on Venmo for dinner.",
            actions="",
            complaint=COMPLAINT,
            accepted=False,
        ),
        llm=MockLLM([json.dumps(reply)]),
        seed=0,
        now=NOW,
    )


class _Spy:
    """A scripted updater that records the prompt it was shown."""

    def __init__(self, reply: dict[str, Any]) -> None:
        self.reply = reply
        self.prompt = ""

    def __call__(self, messages: Sequence[Message], schema: Any) -> str:
        self.prompt = messages[-1].content
        return json.dumps(self.reply)


def _observe(recipe: str, units: Sequence[MemoryUnit], reply: dict[str, Any]) -> Update:
    return get_recipe(recipe).observe(_ctx(units, reply))


_unit = partial(
    memory_unit, created_episode=0, updated_episode=0, valid_from="2026-01-01T00:00:00+00:00"
)


def _after(units: Sequence[MemoryUnit], update: Update) -> list[MemoryUnit]:
    state = {u.id: u for u in units}
    for op in update.ops:
        if op.op == "evict":
            state.pop(op.id, None)
        else:
            state[op.id] = op.unit
    return list(state.values())


def _active(units: Sequence[MemoryUnit]) -> set[str]:
    return {u.text for u in units if u.status == "active"}


# --- ACE ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("old", "new"), [(PUBLIC, PRIVATE), (BY_DEFAULT_PRIVATE, BY_DEFAULT_FRIENDS)]
)
def test_ace_value_flip_below_the_similarity_threshold(old: str, new: str) -> None:
    assert trigram_cosine(old, new) < get_recipe("ace").threshold  # type: ignore[attr-defined]
    bullet = _unit("ace-old", old, recipe="ace", kind="bullet", helpful=0, harmful=0)
    # Without a name, both stay (the net does not see it); with one, the old one goes.
    plain = _observe("ace", [bullet], {"operations": [{"op": "add", "text": new}]})
    assert _active(_after([bullet], plain)) == {old, new}
    named = _observe(
        "ace", [bullet], {"operations": [{"op": "add", "text": new, "replaces": ["ace-old"]}]}
    )
    after = _after([bullet], named)
    assert _active(after) == {new}
    old_now = next(u for u in after if u.id == "ace-old")
    added = next(u for u in after if u.text == new)
    assert old_now.status == "revoked" and old_now.revoked_by == added.id
    assert added.supersedes == "ace-old"


def test_ace_retire_revokes_without_a_successor_and_unknown_names_are_refused() -> None:
    a = _unit("ace-a", PUBLIC, recipe="ace", kind="bullet", helpful=0, harmful=0)
    update = _observe(
        "ace",
        [a],
        {
            "operations": [
                {"op": "retire", "id": "ace-a"},
                {"op": "add", "text": "Sign texts with '- Alex'.", "replaces": ["ace-ghost"]},
            ]
        },
    )
    assert [(op.op, op.id) for op in update.ops] == [("revoke", "ace-a")]
    assert update.ops[0].unit.revoked_by is None
    assert any(r.what == "ace-ghost" for r in update.refused)


# --- TEPA -----------------------------------------------------------------------------------


def test_tepa_names_a_precedent_under_another_key() -> None:
    old = _unit(
        "tepa-old", BY_DEFAULT_PRIVATE, recipe="tepa", kind="precedent", key="other.venmo_privacy"
    )
    keep = _unit(
        "tepa-sms", "Sign texts '- Alex'.", recipe="tepa", kind="precedent", key="sms.signoff"
    )
    # Without a name, a different key leaves the stale precedent in force.
    plain = _observe(
        "tepa",
        [old, keep],
        {"precedents": [{"key": "payment.visibility", "sentence": BY_DEFAULT_FRIENDS}]},
    )
    assert _active(_after([old, keep], plain)) >= {BY_DEFAULT_PRIVATE, BY_DEFAULT_FRIENDS}
    for ref in ("tepa-old", "other.venmo_privacy"):  # by id or by key
        update = _observe(
            "tepa",
            [old, keep],
            {
                "precedents": [
                    {"key": "payment.visibility", "sentence": BY_DEFAULT_FRIENDS, "replaces": [ref]}
                ]
            },
        )
        after = _after([old, keep], update)
        assert _active(after) == {BY_DEFAULT_FRIENDS, "Sign texts '- Alex'."}
        added = next(u for u in after if u.text == BY_DEFAULT_FRIENDS)
        assert next(u for u in after if u.id == "tepa-old").revoked_by == added.id
    retired = _observe("tepa", [old, keep], {"precedents": [], "retire": ["tepa-old"]})
    assert _active(_after([old, keep], retired)) == {"Sign texts '- Alex'."}


def test_tepa_prompt_shows_ids_and_keys() -> None:
    old = _unit("tepa-old", PUBLIC, recipe="tepa", kind="precedent", key="payment.visibility")
    spy = _Spy({"precedents": []})
    ctx = _ctx([old], {})
    ctx.llm = MockLLM(spy)
    get_recipe("tepa").observe(ctx)
    assert f"[tepa-old] [payment.visibility] {PUBLIC}" in spy.prompt


# --- TRACE ----------------------------------------------------------------------------------


def _check(uid: str, value: str, predicate: str = "equals") -> MemoryUnit:
    return _unit(uid, f"When sending a Venmo payment, the visibility must equal '{value}'.", recipe="trace", kind="check", api="venmo__send_payment", argument="visibility", predicate=predicate, value=value)  # fmt: skip


def _new_check(value: str, **extra: Any) -> dict[str, Any]:
    return {"api": "venmo__send_payment", "argument": "visibility", "predicate": "equals",
            "value": value, **extra}  # fmt: skip


def test_trace_replaces_a_named_check() -> None:
    stale = _check("trace-old", "private")
    other = _unit("trace-sms", "When sending a text message, the message must end with '- Alex'.", recipe="trace", kind="check", api="phone__send_text_message", argument="message", predicate="endswith", value="- Alex")  # fmt: skip
    update = _observe(
        "trace", [stale, other], {"checks": [_new_check("friends", replaces=["trace-old"])]}
    )
    after = _after([stale, other], update)
    assert {u.value for u in after if u.status == "active"} == {"friends", "- Alex"}
    new = next(u for u in after if u.value == "friends")
    assert next(u for u in after if u.id == "trace-old").revoked_by == new.id
    assert new.supersedes == "trace-old"
    # The stale check no longer enforces itself: a friends payment passes.
    from evolve.envs import ApiCall

    call = ApiCall(app="venmo", api="send_payment", args={"visibility": "friends"}, ok=True)
    assert get_recipe("trace").verify(after, [call]) == []
    assert get_recipe("trace").verify([stale, other, new], [call]) != []  # old main's state


def test_trace_safety_net_and_retire() -> None:
    stale = _check("trace-old", "private")
    # Named nothing: a check that cannot hold together with the new one is revoked anyway.
    update = _observe("trace", [stale], {"checks": [_new_check("friends")]})
    assert {u.value for u in _after([stale], update) if u.status == "active"} == {"friends"}
    retired = _observe("trace", [stale], {"checks": [], "retire": ["trace-old"]})
    assert [(op.op, op.id) for op in retired.ops] == [("revoke", "trace-old")]
    # A startswith check that is a prefix of another can hold with it: both stay.
    a = _unit("trace-a", "x", recipe="trace", kind="check", api="gmail__send_email", argument="subject", predicate="startswith", value="[Personal]")  # fmt: skip
    keep = _observe(
        "trace",
        [a],
        {"checks": [{"api": "gmail__send_email", "argument": "subject",
                     "predicate": "startswith", "value": "[Personal] "}]},
    )  # fmt: skip
    assert all(op.op == "add" for op in keep.ops)


# --- Reflexion ------------------------------------------------------------------------------


def test_reflexion_shows_its_reflections_and_replaces_named_ones() -> None:
    old = _unit("refl-old", PUBLIC, recipe="reflexion", kind="reflection")
    other = _unit("refl-sms", "Sign texts '- Alex'.", recipe="reflexion", kind="reflection")
    spy = _Spy({"reflection": PRIVATE, "replaces": ["refl-old"]})
    ctx = _ctx([old, other], {})
    ctx.llm = MockLLM(spy)
    update = get_recipe("reflexion").observe(ctx)
    assert f"[refl-old] {PUBLIC}" in spy.prompt
    after = _after([old, other], update)
    assert _active(after) == {PRIVATE, "Sign texts '- Alex'."}
    assert next(u for u in after if u.id == "refl-old").status == "revoked"


# --- topl -----------------------------------------------------------------------------------


def test_topl_named_contradiction_with_low_similarity_stops_rendering() -> None:
    old_text = "Keep all my Venmo payments private."
    new_text = "Set my Venmo payments to friends-only visibility."
    assert trigram_cosine(old_text, new_text) < 0.7
    old = _unit("topl-old", old_text, recipe="topl", kind="assertion", alpha=6.0, beta=1.0)
    spy = _Spy({"assertions": [{"text": new_text, "replaces": ["topl-old"]}]})
    ctx = _ctx([old], {})
    ctx.llm = MockLLM(spy)
    update = get_recipe("topl").observe(ctx)
    assert "[topl-old] Keep all my Venmo payments private." in spy.prompt  # the pool is shown
    after = _after([old], update)
    stale = next(u for u in after if u.id == "topl-old")
    assert stale.status == "revoked" and stale.beta == 2.0  # its beta moves too
    assert posterior_mean(stale) < posterior_mean(old)
    rendered = render_for(after, ALEX, ["topl"])
    assert new_text in rendered and old_text not in rendered


def test_topl_support_for_a_revoked_text_brings_it_back() -> None:
    old = _unit("topl-old", PUBLIC, recipe="topl", kind="assertion", alpha=2.0, beta=2.0, status="revoked", revoked_by="topl-new")  # fmt: skip
    new = _unit("topl-new", PRIVATE, recipe="topl", kind="assertion", alpha=2.0, beta=1.0)
    update = _observe("topl", [old, new], {"assertions": [PUBLIC]})
    after = _after([old, new], update)
    assert _active(after) == {PUBLIC}
    back = next(u for u in after if u.id == "topl-old")
    assert back.alpha == 3.0 and back.valid_from and back.valid_from > NOW[:10]


# --- provenance (item 10) -------------------------------------------------------------------


def test_a_units_complaint_is_the_line_about_its_rule(workspace: Workspace) -> None:
    update = _observe(
        "ace", [], {"operations": [{"op": "add", "text": "Make my Venmo payments private."}]}
    )
    (op,) = update.ops
    assert op.unit.complaint == "My payment to Sam was public; I wanted it more private."


def test_rewrite_cuts_at_a_word_boundary() -> None:
    text = "Sign every text message with a dash and my first name please"
    cut = clip(text, 30)
    assert len(cut) <= 30 and text.startswith(cut) and text[len(cut)] == " "
    assert clip("one\ntwo three four", 12) == "one"
    update = get_recipe("rewrite").observe(
        RecipeContext(
            units=[],
            scope=ALEX,
            episode=_ctx([], {}).episode,
            llm=MockLLM([json.dumps({"memory": "word " * 40})]),
            seed=0,
            now=NOW,
            max_memory_chars=102,
        )
    )
    body = update.ops[0].unit.text
    assert body.endswith("word") and len(body) <= 102


# --- end to end: named replacement reaches the files ------------------------------------------


def test_named_replacement_is_written_with_links(workspace: Workspace) -> None:
    applier = MemoryApplier(workspace, ALEX)
    bullet = _unit("ace-old", PUBLIC, recipe="ace", kind="bullet")
    applier.apply([Op(op="add", unit=bullet)], [])
    applier.done()
    units = load_units(workspace.root)
    update = _observe(
        "ace", units, {"operations": [{"op": "add", "text": PRIVATE, "replaces": ["ace-old"]}]}
    )
    result = applier.apply(update.ops, units)
    applier.done()
    assert result.refused == []
    after = {u.id: u for u in load_units(workspace.root)}
    new = next(u for u in after.values() if u.text == PRIVATE)
    assert after["ace-old"].revoked_by == new.id and new.supersedes == "ace-old"
