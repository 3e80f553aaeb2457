"""One persona model: validated from a file, remembered as plain values and rebuilt from them
without pydantic, it shows the world the same profile, cards and payment history."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from evolve.envs.persona_world._personas import Persona, load_personas
from evolve.envs.persona_world._world import CONTACTS_BY_KEY, Card, Payment, Profile

PERSONAS = Path(__file__).resolve().parents[2] / "evalset" / "personas"
CONTACT = sorted(CONTACTS_BY_KEY)[0]
SAM = {
    "name": "sam",
    "first_name": "Sam",
    "last_name": "Lee",
    "email": "sam@example.com",
    "phone_number": "555-0100",
    "venmo_password": "pw",
    "cards": [{"id": 7, "name": "Visa"}, {"id": 9, "name": "Amex"}],
    "history": [{"contact": CONTACT, "amount": 12.5, "card": 9}],
    "preferences": [],
}


def test_a_remembered_persona_is_the_validated_one_for_every_seed_persona() -> None:
    personas = load_personas(PERSONAS)
    assert personas
    for name, persona in personas.items():
        again = Persona.of(persona.dump())
        assert again == persona, name
        assert again.profile == persona.profile, name
        assert again.card_objects == persona.card_objects, name
        assert again.initial_history == persona.initial_history, name


def test_views_build_world_objects_from_the_fields() -> None:
    persona = Persona.validate(SAM)
    assert persona.profile == Profile("Sam", "Lee", "sam@example.com", "555-0100", "pw")
    assert persona.card_objects == (Card(7, "Visa"), Card(9, "Amex"))
    assert persona.initial_history == (Payment(CONTACT, 12.5, 9),)
    assert Persona.validate({k: v for k, v in SAM.items() if k != "history"}).history == ()


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"nickname": "S"}, "nickname"),
        ({"cards": []}, "at least one card"),
        ({"cards": [{"id": "seven", "name": "Visa"}]}, "cards.0.id"),
        ({"history": [{"contact": CONTACT, "amount": 12.5, "card": 8}]}, "card 8"),
        ({"history": [{"contact": CONTACT, "amount": 0, "card": 9}]}, "amount must be more"),
        ({"history": [{"contact": "nobody", "amount": 1, "card": 9}]}, "unknown contact"),
        ({"preferences": [{"rule": "no_such_rule"}]}, "unknown rule"),
        (
            {"preferences": [{"rule": "sms_signoff", "value": "B", "changes": [
                {"at_episode": -1, "value": "C"}]}]},
            "at_episode must be 0 or more",
        ),
    ],
)  # fmt: skip
def test_an_invalid_persona_is_refused_saying_why(change: dict[str, object], words: str) -> None:
    with pytest.raises(ValidationError, match=words):
        Persona.validate({**SAM, **change})
