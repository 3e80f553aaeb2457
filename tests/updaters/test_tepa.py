"""TEPA: one active precedent per key, revoke-and-keep, re-activation, honest key snapping."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest

from evolve._format import _render
from evolve._format._render import render_keyed
from evolve.applier import MemoryApplier, Op
from evolve.llm._mock import MockLLM
from evolve.memory import MemoryUnit, load_units
from evolve.updaters import (
    RECIPES,
    EpisodeView,
    RecipeContext,
    Update,
    _tepa,
    get_recipe,
    render_for,
)
from evolve.updaters._tepa import VOCABULARY, snap
from evolve.workspace import Workspace

ALEX = "user:alex"


def render_memory(units: Sequence[MemoryUnit], scope: str) -> str:
    """Rendered memory of a workspace configured to render every recipe."""
    return render_for(units, scope, RECIPES)


NOW = "2026-02-02T00:00:00+00:00"
DASH_NAME = "End every text message with a dash and my first name."
INITIALS = "End every text message with my initials."
CARD = "Pay with the card I use most often."


def _precedent(uid: str, key: str, text: str, **fields: Any) -> MemoryUnit:
    base: dict[str, Any] = {
        "id": uid,
        "recipe": "tepa",
        "kind": "precedent",
        "scope": ALEX,
        "created_episode": 0,
        "updated_episode": 0,
        "key": key,
        "text": text,
    }
    base.update(fields)
    return MemoryUnit.model_validate(base)


def _observe(units: Sequence[MemoryUnit], precedents: list[Any] | str, episode: int = 3) -> Update:
    reply = precedents if isinstance(precedents, str) else json.dumps({"precedents": precedents})
    ctx = RecipeContext(
        units=list(units),
        scope=ALEX,
        episode=EpisodeView(
            episode=episode,
            task_id="text_update-2",
            instruction="Text Priya Nair to let them know: The package arrived.",
            actions='phone__send_text_message({"message": "The package arrived."}) -> {}',
            complaint="My text to Priya Nair didn't end the way I sign my texts.",
            accepted=False,
        ),
        llm=MockLLM([reply]),
        seed=0,
        now=NOW,
    )
    return get_recipe("tepa").observe(ctx)


def _by_id(update: Update) -> dict[str, tuple[str, MemoryUnit]]:
    return {op.id: (op.op, op.unit) for op in update.ops}


def _apply_and_commit(ws: Workspace, ops: list[Op], message: str) -> None:
    applier = MemoryApplier(ws, ALEX)
    result = applier.apply(ops, load_units(ws.root))
    assert result.refused == []
    assert ws.store.commit(result.paths, message) is not None
    applier.done()


def test_revoked_tepa_precedent_is_absent_from_render_while_other_key_present(
    workspace: Workspace,
) -> None:
    seed = [
        _precedent("tepa-sign", "sms.signoff", DASH_NAME),
        _precedent("tepa-card", "payment.card", CARD),
    ]
    _apply_and_commit(workspace, [Op(op="add", unit=u) for u in seed], "seed")
    # Every line: the unit id, then the key; in the order learned (here: by id, no times).
    assert render_memory(load_units(workspace.root), ALEX) == (
        f"[tepa-card] [payment.card] {CARD}\n[tepa-sign] [sms.signoff] {DASH_NAME}"
    )
    update = _observe(load_units(workspace.root), [{"key": "sms.signoff", "sentence": INITIALS}])
    _apply_and_commit(workspace, update.ops, "episode 3")
    units = load_units(workspace.root)
    rendered = render_memory(units, ALEX)
    assert DASH_NAME not in rendered
    assert f"[tepa-card] [payment.card] {CARD}" in rendered
    assert f"[sms.signoff] {INITIALS}" in rendered
    # The revoked precedent stays on disk, archived with who revoked it.
    kept = next(u for u in units if u.id == "tepa-sign")
    assert kept.status == "revoked" and kept.text == DASH_NAME
    # The recipe's own render agrees with the memory render.
    assert get_recipe("tepa").render(units) == rendered


def test_a_new_precedent_under_a_key_revokes_the_active_one() -> None:
    current = _precedent("tepa-sign", "sms.signoff", DASH_NAME)
    update = _observe([current], [{"key": "sms.signoff", "sentence": INITIALS}], episode=3)
    assert update.refused == []
    assert [op.op for op in update.ops] == ["add", "revoke"]
    added = update.ops[0].unit
    revoked = update.ops[1].unit
    assert added.key == "sms.signoff" and added.text == INITIALS and added.status == "active"
    assert added.created_episode == 3 and (added.valid_from or "").startswith(NOW[:19])
    assert revoked.id == "tepa-sign" and revoked.text == DASH_NAME
    assert revoked.status == "revoked"
    assert revoked.revoked_at == 3
    assert revoked.revoked_by == added.id
    assert (revoked.valid_to or "").startswith(NOW[:19])


def test_writing_the_archived_text_again_reactivates_it_and_revokes_the_current() -> None:
    archived = _precedent(
        "tepa-sign", "sms.signoff", DASH_NAME, status="revoked", revoked_at=2, revoked_by="tepa-ini"
    )
    current = _precedent("tepa-ini", "sms.signoff", INITIALS, created_episode=2)
    update = _observe(
        [archived, current],
        [{"key": "sms.signoff", "sentence": f"  {DASH_NAME.lower()} "}],
        episode=5,
    )
    ops = _by_id(update)
    assert set(ops) == {"tepa-sign", "tepa-ini"}
    label, back = ops["tepa-sign"]
    assert label == "reactivate"
    assert back.status == "active" and back.text == DASH_NAME
    assert back.revoked_at is None and back.revoked_by is None and back.valid_to is None
    label, gone = ops["tepa-ini"]
    assert label == "revoke"
    assert gone.status == "revoked" and gone.revoked_by == "tepa-sign" and gone.revoked_at == 5


def test_an_exact_repeat_of_the_active_precedent_is_a_logged_duplicate() -> None:
    current = _precedent("tepa-sign", "sms.signoff", DASH_NAME)
    update = _observe([current], [{"key": "sms.signoff", "sentence": DASH_NAME}])
    assert update.ops == [] and update.refused == []
    assert any("duplicate" in n and "tepa-sign" in n for n in update.notes)


def test_the_same_text_under_another_key_is_not_a_duplicate() -> None:
    current = _precedent("tepa-sign", "sms.signoff", DASH_NAME)
    update = _observe([current], [{"key": "email.signoff", "sentence": DASH_NAME}])
    assert [(op.op, op.unit.key) for op in update.ops] == [("add", "email.signoff")]


# --- key snapping ---------------------------------------------------------------------------


def test_an_alias_of_the_same_detail_snaps_with_a_note() -> None:
    current = _precedent("tepa-sign", "sms.signoff", DASH_NAME)
    update = _observe([current], [{"key": "text.closing", "sentence": INITIALS}])
    assert [(op.op, op.unit.key) for op in update.ops] == [
        ("add", "sms.signoff"),
        ("revoke", "sms.signoff"),
    ]
    assert any("text.closing" in n and "snapped to sms.signoff" in n for n in update.notes)


def test_a_key_naming_a_different_detail_is_kept_as_other_and_revokes_nothing() -> None:
    current = _precedent("tepa-sign", "sms.signoff", DASH_NAME)
    update = _observe([current], [{"key": "sms.emoji", "sentence": "Never use emoji in texts."}])
    assert [(op.op, op.unit.key) for op in update.ops] == [("add", "other.sms.emoji")]
    assert all(op.id != "tepa-sign" for op in update.ops)
    (note,) = [n for n in update.notes if "sms.emoji" in n]
    assert "kept as other.sms.emoji" in note
    assert "prefix snapping would have folded it into sms.signoff" in note
    render = get_recipe("tepa").render([current, update.ops[0].unit])
    assert f"[sms.signoff] {DASH_NAME}" in render
    assert "[other.sms.emoji] Never use emoji in texts." in render


def test_a_rendered_other_key_proposed_again_replaces_its_precedent() -> None:
    emoji = _precedent("tepa-emoji", "other.sms.emoji", "Never use emoji in texts.")
    update = _observe([emoji], [{"key": "other.sms.emoji", "sentence": "Use one emoji per text."}])
    assert [(op.op, op.id) for op in update.ops if op.op == "revoke"] == [("revoke", "tepa-emoji")]
    assert {op.unit.key for op in update.ops} == {"other.sms.emoji"}


@pytest.mark.parametrize(
    ("key", "stored", "logged"),
    [
        ("sms.signoff", "sms.signoff", None),
        ("SMS.SignOff", "sms.signoff", None),
        ("text.closing", "sms.signoff", "same detail"),
        ("sms.sign_off", "sms.signoff", "same detail"),
        ("venmo.memo", "payment.note", "same detail"),
        ("venmo.privacy", "payment.visibility", "same detail"),
        ("mail.salutation", "email.greeting", "same detail"),
        ("notes.heading", "note.title", "same detail"),
        ("payment.wallet", "other.payment.wallet", "would have folded it into payment."),
        ("sms.final_words", "other.sms.final_words", "would have folded it into sms."),
        ("weather.units", "other.weather.units", "would have folded it into general.units"),
        ("totally.new", "other.totally.new", "no vocabulary key"),
    ],
)
def test_snap_table(key: str, stored: str, logged: str | None) -> None:
    got, log = snap(key)
    assert got == stored
    if logged is None:
        assert log is None
    else:
        assert log is not None and logged in log and repr(key) in log
    assert got in VOCABULARY or got.startswith("other.")


# --- refusals -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("entry", "reason"),
    [
        ({"key": "sms.signoff", "sentence": INITIALS, "confidence": 0.9}, "unknown field"),
        ({"key": "sms.signoff", "sentence": INITIALS, "revoke": "tepa-sign"}, "unknown field"),
        ({"key": "sms.signoff"}, "missing"),
        ({"sentence": INITIALS}, "missing"),
        ({"key": "sms.signoff", "sentence": ""}, "empty or non-text"),
        ({"key": "sms.signoff", "sentence": 7}, "empty or non-text"),
        ({"key": "sms.signoff", "sentence": "x" * 301}, "300 characters"),
        ("just a string", "not a JSON object"),
    ],
)
def test_bad_precedent_entries_are_refused(entry: Any, reason: str) -> None:
    current = _precedent("tepa-sign", "sms.signoff", DASH_NAME)
    update = _observe([current], [entry, {"key": "payment.card", "sentence": CARD}])
    assert len(update.refused) == 1, update.refused
    assert reason in update.refused[0].reason
    # The refused entry touched nothing; the good one still went through.
    assert [(op.op, op.unit.key) for op in update.ops] == [("add", "payment.card")]


def test_a_reply_that_is_not_json_is_refused() -> None:
    update = _observe([], "Precedent: sign off with your name")
    assert update.ops == [] and update.refused
    assert "JSON" in update.refused[0].reason


def test_two_precedents_for_one_key_in_one_reply_leave_one_active() -> None:
    current = _precedent("tepa-sign", "sms.signoff", DASH_NAME)
    update = _observe(
        [current],
        [
            {"key": "sms.signoff", "sentence": INITIALS},
            {"key": "text.closing", "sentence": "End every text with 'Cheers'."},
        ],
    )
    final = {op.id: op.unit for op in update.ops}
    active = [u for u in final.values() if u.status == "active" and u.key == "sms.signoff"]
    assert [u.text for u in active] == ["End every text with 'Cheers'."]
    assert final["tepa-sign"].status == "revoked"
    # A precedent born and replaced in the same episode is written as an add (revoked).
    born = next(op for op in update.ops if op.unit.text == INITIALS)
    assert born.op == "add" and born.unit.status == "revoked"


def test_the_prompt_shows_active_precedents_and_the_vocabulary() -> None:
    units = [
        _precedent("tepa-sign", "sms.signoff", DASH_NAME),
        _precedent("tepa-old", "payment.card", "Use the Amex.", status="revoked"),
    ]
    ctx = RecipeContext(
        units=units,
        scope=ALEX,
        episode=EpisodeView(3, "t", "do it", "", "complaint text", False),
        llm=MockLLM([json.dumps({"precedents": []})]),
        seed=0,
        now=NOW,
    )
    get_recipe("tepa").observe(ctx)
    assert isinstance(ctx.llm, MockLLM)
    prompt = ctx.llm.calls[0].messages[-1].content
    assert f"[sms.signoff] {DASH_NAME}" in prompt
    assert "Use the Amex." not in prompt
    assert all(key in prompt for key in VOCABULARY)


def _varied_precedents() -> list[MemoryUnit]:
    return [
        _precedent("t3", "sms.signoff", "- " + DASH_NAME, valid_from="2026-01-03T00:00:00Z"),
        _precedent("t1", "payment.card", CARD + "\n\n  * And tip well.", valid_from="2026-01-01"),
        _precedent("t2", "sms.tone", "Be brief.", status="revoked", revoked_at=1),
        _precedent("t0", "sms.length", INITIALS),  # never set: oldest
        _precedent("t4", "note.title", "Title notes by date.", valid_from="not a date"),
    ]


def test_the_tepa_render_is_byte_identical_to_the_keyed_renderer() -> None:
    units = _varied_precedents()
    rendered = get_recipe("tepa").render(units)
    assert rendered == render_keyed(units)
    assert get_recipe("tepa").render(list(reversed(units))) == render_keyed(list(reversed(units)))
    assert get_recipe("tepa").render(units) == rendered  # from the cache: the same bytes


def test_an_episode_renders_each_precedent_line_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Training renders the precedents for the agent and again in the updater's prompt: the
    second render must reuse the lines (counted, not timed), and an edited unit re-renders."""
    calls: list[str] = []
    real = _render.tagged

    def counting(unit_id: str, text: str) -> str:
        calls.append(unit_id)
        return real(unit_id, text)

    monkeypatch.setattr(_render, "tagged", counting)
    monkeypatch.setattr(_tepa, "tagged", counting, raising=False)
    units = _varied_precedents()
    render_memory(units, ALEX)  # the agent's memory
    update = _observe(units, [])  # the updater's prompt
    assert sorted(calls) == ["t0", "t1", "t3", "t4"]  # once per active precedent
    assert update.ops == []
    edited = [units[0].with_(text="Sign with -P."), *units[1:]]
    calls.clear()
    assert "[t3] [sms.signoff] Sign with -P." in get_recipe("tepa").render(edited)
    assert calls == ["t3"]
