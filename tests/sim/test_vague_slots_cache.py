"""The updater side of the sim reads a shown unit's vague slots once per text, however many
proposals `replaced_ids` weighs against it."""

from __future__ import annotations

import pytest

from evolve.envs.persona_world import split_sentences
from evolve.sim import _updater
from evolve.sim._updater import Shown, replaced_ids


def test_each_shown_text_is_read_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real = _updater.vague_slot_of

    def counting(statement: str) -> str | None:
        calls.append(statement)
        return real(statement)

    monkeypatch.setattr(_updater, "vague_slot_of", counting)
    shown = [
        Shown("u-1", "Texts about topic 9001 can be short and casual."),
        Shown("u-2", "Alex cares about the style of note titles (9001)."),
        Shown("u-3", "Close every email with 'Cheers,' and my first name on the next line."),
    ]
    statement = "Close every email with 'Best,' and my first name on the next line."
    first = replaced_ids(shown, "email.signoff", statement)
    read = len(calls)
    assert read > 0
    assert replaced_ids(shown, "email.signoff", statement) == first == ["u-3"]
    assert len(calls) == read  # nothing read again
    assert shown[1].vague_slots == real_slots(shown[1].text)


def real_slots(text: str) -> set[str]:
    return {v for s in split_sentences(text) if (v := _updater.vague_slot_of(s)) is not None}
