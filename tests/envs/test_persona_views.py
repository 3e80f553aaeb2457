"""Both shapes of a persona (the pydantic model and the frozen fast-path copy) show the world
the same profile, cards and payment history, from one mixin."""

from __future__ import annotations

from pathlib import Path

from evolve.envs.persona_world._evalset import PersonaData
from evolve.envs.persona_world._persona_view import PersonaViews
from evolve.envs.persona_world._personas import Persona, load_personas
from evolve.envs.persona_world._world import CONTACTS_BY_KEY, Card, Payment, Profile

PERSONAS = Path(__file__).resolve().parents[2] / "evalset" / "personas"
CONTACT = sorted(CONTACTS_BY_KEY)[0]


def test_views_agree_for_every_seed_persona() -> None:
    personas = load_personas(PERSONAS)
    assert personas
    for name, persona in personas.items():
        frozen = PersonaData.of(persona.model_dump())
        assert isinstance(persona, PersonaViews) and isinstance(frozen, PersonaViews)
        assert frozen.profile == persona.profile, name
        assert frozen.card_objects == persona.card_objects, name
        assert frozen.initial_history == persona.initial_history, name


def test_views_build_world_objects_from_the_fields() -> None:
    persona = Persona.model_validate(
        {
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
    )
    frozen = PersonaData.of(persona.model_dump())
    for p in (persona, frozen):
        assert p.profile == Profile("Sam", "Lee", "sam@example.com", "555-0100", "pw")
        assert p.card_objects == (Card(7, "Visa"), Card(9, "Amex"))
        assert p.initial_history == (Payment(CONTACT, 12.5, 9),)
