"""What a persona is to the world: its profile, cards and payment history as world objects.

One mixin serves both shapes of a persona: the validating pydantic model (`_personas.Persona`)
and the frozen copy the environment holds (`_evalset.PersonaData`, built without pydantic on
`evolve run`'s fast path, so this module imports the standard library and `_world` only).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from evolve.envs.persona_world._world import Card, Payment, Profile


class _CardFields(Protocol):
    @property
    def id(self) -> int: ...
    @property
    def name(self) -> str: ...


class _PaymentFields(Protocol):
    @property
    def contact(self) -> str: ...
    @property
    def amount(self) -> float: ...
    @property
    def card(self) -> int: ...


class _PersonaFields(Protocol):
    """The fields the views read (both persona classes declare them)."""

    @property
    def first_name(self) -> str: ...
    @property
    def last_name(self) -> str: ...
    @property
    def email(self) -> str: ...
    @property
    def phone_number(self) -> str: ...
    @property
    def venmo_password(self) -> str: ...
    @property
    def cards(self) -> Sequence[_CardFields]: ...
    @property
    def history(self) -> Sequence[_PaymentFields]: ...


class PersonaViews:
    """The world objects a persona's fields describe (a mixin: it declares no fields)."""

    @property
    def profile(self: _PersonaFields) -> Profile:
        return Profile(
            self.first_name, self.last_name, self.email, self.phone_number, self.venmo_password
        )

    @property
    def card_objects(self: _PersonaFields) -> tuple[Card, ...]:
        return tuple(Card(c.id, c.name) for c in self.cards)

    @property
    def initial_history(self: _PersonaFields) -> tuple[Payment, ...]:
        return tuple(Payment(p.contact, p.amount, p.card) for p in self.history)
