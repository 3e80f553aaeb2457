"""Personas: who the user is, their cards and payment history, and their preferences.

Persona files live in the workspace's protected `evalset/personas/` folder. A preference may
change at a scheduled point of the persona's own timeline (drift), as real users' preferences
do: `at_episode: N` counts the training episodes the workspace has run for this persona,
across every stream (recipe, seed, feedback tier), so a second stream started after the change
sees the changed preference. `evolve train` keeps that clock (evolve.train._trainref) and
passes it to the judge as the `episode`; see docs/sim.md, "Drift".
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from evolve.envs.persona_world._drift import value_at
from evolve.envs.persona_world._persona_view import PersonaViews
from evolve.envs.persona_world._rules import RULES_BY_NAME
from evolve.envs.persona_world._values import Value, value_from_yaml
from evolve.envs.persona_world._world import CONTACTS_BY_KEY
from evolve.envs.persona_world._yaml import load_yaml
from evolve.errors import ConfigError


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PreferenceChange(_Model):
    # The persona's clock (episodes seen for this persona across streams), not a stream's index.
    at_episode: int = Field(ge=0)
    value: Any


class Preference(_Model):
    rule: str
    value: Any = None
    changes: tuple[PreferenceChange, ...] = ()

    @model_validator(mode="after")
    def _known(self) -> Preference:
        rule = RULES_BY_NAME.get(self.rule)
        if rule is None:
            raise ValueError(
                f"unknown rule {self.rule!r}; known: {', '.join(sorted(RULES_BY_NAME))}"
            )
        for raw in (self.value, *(c.value for c in self.changes)):
            if raw is not None:
                rule.statement(value_from_yaml(raw))  # raises on a value the rule cannot state
            elif rule.implied_value is None:
                raise ValueError(f"rule {self.rule!r} needs a value")
        return self

    def value_at(self, episode: int | None) -> Value:
        """The value held at tick `episode` of the persona's clock; None means now (after
        every change)."""
        return value_at(
            self.rule, self.value, [(c.at_episode, c.value) for c in self.changes], episode
        )


class CardSpec(_Model):
    id: int
    name: str


class PaymentSpec(_Model):
    contact: str
    amount: float = Field(gt=0)
    card: int

    @model_validator(mode="after")
    def _contact(self) -> PaymentSpec:
        if self.contact not in CONTACTS_BY_KEY:
            raise ValueError(f"unknown contact {self.contact!r}")
        return self


class Persona(_Model, PersonaViews):
    name: str
    first_name: str
    last_name: str
    email: str
    phone_number: str
    venmo_password: str
    cards: tuple[CardSpec, ...] = Field(min_length=1)
    history: tuple[PaymentSpec, ...] = ()
    preferences: tuple[Preference, ...]

    @model_validator(mode="after")
    def _cards(self) -> Persona:
        ids = {c.id for c in self.cards}
        for p in self.history:
            if p.card not in ids:
                raise ValueError(
                    f"history uses card {p.card}, which is not among the persona's cards"
                )
        return self


def load_personas(folder: Path) -> dict[str, Persona]:
    """Load every `*.yaml` persona in `folder`.

    Raises:
        ConfigError: naming the file and the problem.
    """
    personas: dict[str, Persona] = {}
    for path in sorted(folder.glob("*.yaml")):
        try:
            data = load_yaml(path)
            persona = Persona.model_validate(data)
        except (yaml.YAMLError, ValidationError) as exc:
            detail = str(exc).splitlines()
            brief = detail[2].strip() if len(detail) > 2 else (detail[0] if detail else "")
            raise ConfigError(f"{path} is not a valid persona: {brief}.") from exc
        if persona.name != path.stem:
            raise ConfigError(
                f"{path} declares name {persona.name!r}; rename the file or the persona."
            )
        personas[persona.name] = persona
    if not personas:
        raise ConfigError(f"no personas found in {folder}; the evalset is incomplete.")
    return personas
