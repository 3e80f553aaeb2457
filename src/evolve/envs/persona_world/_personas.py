"""Personas: who the user is, their cards and payment history, and their preferences.

Persona files live in the workspace's protected `evalset/personas/` folder. A preference may
change at a scheduled point of the persona's own timeline (drift), as real users' preferences
do: `at_episode: N` counts the training episodes the workspace has run for this persona,
across every stream (recipe, seed, feedback tier), so a second stream started after the change
sees the changed preference. `evolve train` keeps that clock (evolve.train._trainref) and
passes it to the judge as the `episode`; see docs/sim.md, "Drift".

One model, frozen dataclasses of the standard library: the checks that need the world (a
known rule, a value it can state, a known contact, a card the persona holds) run whenever one
is built. A persona file in the plain form (exactly the fields, of exactly their types) is
built directly; any other is validated into it by pydantic (:meth:`Persona.validate`, imported
only then: types, unknown fields, the error's words); `evolve run`'s fast path rebuilds it
from the values it remembered (:meth:`Persona.of`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TypeVar

from evolve.envs.persona_world._rules import RULES_BY_NAME
from evolve.envs.persona_world._values import Value, value_from_yaml
from evolve.envs.persona_world._world import CONTACTS_BY_KEY, Card, Payment, Profile
from evolve.errors import ConfigError

T = TypeVar("T")
# Unknown fields are refused when a file is validated (pydantic reads this of a dataclass).
_STRICT = {"extra": "forbid"}


def value_at(
    rule: str, value: Any, changes: Iterable[tuple[int, Any]], episode: int | None
) -> Value:
    """The value a preference holds at tick `episode` of the persona's clock (None: now,
    after every change): its `value`, replaced by each change due by then."""
    raw = value
    for at_episode, changed in sorted(changes, key=lambda c: c[0]):
        if episode is None or at_episode <= episode:
            raw = changed
    if raw is None:
        implied = RULES_BY_NAME[rule].implied_value
        if implied is None:  # validation rejects this; kept for type narrowing
            raise ValueError(f"rule {rule!r} needs a value")
        return implied
    return value_from_yaml(raw)


@dataclass(frozen=True)
class PreferenceChange:
    # The persona's clock (episodes seen for this persona across streams), not a stream's index.
    at_episode: int
    value: Any
    __pydantic_config__ = _STRICT

    def __post_init__(self) -> None:
        if self.at_episode < 0:
            raise ValueError(f"at_episode must be 0 or more, not {self.at_episode}")


@dataclass(frozen=True)
class Preference:
    rule: str
    value: Any = None
    changes: tuple[PreferenceChange, ...] = ()
    __pydantic_config__ = _STRICT

    def __post_init__(self) -> None:
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

    def value_at(self, episode: int | None) -> Value:
        """The value held at tick `episode` of the persona's clock; None means now (after
        every change)."""
        return value_at(
            self.rule, self.value, [(c.at_episode, c.value) for c in self.changes], episode
        )

    @classmethod
    def validate(cls, data: Any) -> Preference:
        """A preference from a mapping, as a persona file gives it.

        Raises:
            pydantic.ValidationError: a wrong type, an unknown field, or a failed check.
        """
        plain = _plain(_preference, data)
        return plain if plain is not None else _validated(cls, data)


@dataclass(frozen=True)
class CardSpec:
    id: int
    name: str
    __pydantic_config__ = _STRICT


@dataclass(frozen=True)
class PaymentSpec:
    contact: str
    amount: float
    card: int
    __pydantic_config__ = _STRICT

    def __post_init__(self) -> None:
        if not self.amount > 0:
            raise ValueError(f"amount must be more than 0, not {self.amount}")
        if self.contact not in CONTACTS_BY_KEY:
            raise ValueError(f"unknown contact {self.contact!r}")


@dataclass(frozen=True)
class Persona:
    name: str
    first_name: str
    last_name: str
    email: str
    phone_number: str
    venmo_password: str
    cards: tuple[CardSpec, ...]
    preferences: tuple[Preference, ...]
    history: tuple[PaymentSpec, ...] = ()
    __pydantic_config__ = _STRICT

    def __post_init__(self) -> None:
        if not self.cards:
            raise ValueError("a persona needs at least one card")
        ids = {c.id for c in self.cards}
        for p in self.history:
            if p.card not in ids:
                raise ValueError(
                    f"history uses card {p.card}, which is not among the persona's cards"
                )

    # --- what the persona is to the world ---------------------------------------------------

    @property
    def profile(self) -> Profile:
        return Profile(
            self.first_name, self.last_name, self.email, self.phone_number, self.venmo_password
        )

    @property
    def card_objects(self) -> tuple[Card, ...]:
        return tuple(Card(c.id, c.name) for c in self.cards)

    @property
    def initial_history(self) -> tuple[Payment, ...]:
        return tuple(Payment(p.contact, p.amount, p.card) for p in self.history)

    # --- reading and remembering ------------------------------------------------------------

    @classmethod
    def validate(cls, data: Any) -> Persona:
        """A persona from a persona file's document.

        Raises:
            pydantic.ValidationError: a wrong type, an unknown field, or a failed check.
        """
        plain = _plain(_persona, data)
        return plain if plain is not None else _validated(cls, data)

    def dump(self) -> dict[str, Any]:
        """The persona as plain values (what `evolve run`'s fast path remembers)."""
        return asdict(self)

    @classmethod
    def of(cls, dump: dict[str, Any]) -> Persona:
        """From :meth:`dump` (the values were validated when they were remembered)."""
        return cls(
            name=dump["name"],
            first_name=dump["first_name"],
            last_name=dump["last_name"],
            email=dump["email"],
            phone_number=dump["phone_number"],
            venmo_password=dump["venmo_password"],
            cards=tuple(CardSpec(c["id"], c["name"]) for c in dump["cards"]),
            history=tuple(
                PaymentSpec(p["contact"], p["amount"], p["card"]) for p in dump["history"]
            ),
            preferences=tuple(
                Preference(
                    p["rule"],
                    p["value"],
                    tuple(PreferenceChange(c["at_episode"], c["value"]) for c in p["changes"]),
                )
                for p in dump["preferences"]
            ),
        )


# --- the plain form, without pydantic -------------------------------------------------------
#
# A persona file as people write it (mappings of exactly the fields, strings, integers, lists)
# is built here directly: the values pydantic would make of it, the same checks (the
# dataclasses' own). Anything else, and anything a check refuses, is validated by pydantic,
# which words the error as it always has.


class _NotPlain(Exception):
    """Not the plain form: pydantic validates it."""


def _fields(data: Any, required: frozenset[str], optional: frozenset[str] = frozenset()) -> Any:
    if type(data) is not dict or not required <= data.keys() <= required | optional:
        raise _NotPlain
    return data


def _str(value: Any) -> str:
    if type(value) is not str:
        raise _NotPlain
    return value


def _int(value: Any) -> int:
    if type(value) is not int:
        raise _NotPlain
    return value


def _list(value: Any) -> list[Any]:
    if type(value) is not list:
        raise _NotPlain
    return value


_PERSONA = frozenset(
    {"name", "first_name", "last_name", "email", "phone_number", "venmo_password", "cards"}
)


def _preference(data: Any) -> Preference:
    p = _fields(data, frozenset({"rule"}), frozenset({"value", "changes"}))
    changes = tuple(
        PreferenceChange(_int(c["at_episode"]), c["value"])
        for c in (
            _fields(c, frozenset({"at_episode", "value"})) for c in _list(p.get("changes", []))
        )
    )
    return Preference(_str(p["rule"]), p.get("value"), changes)


def _payment(data: Any) -> PaymentSpec:
    p = _fields(data, frozenset({"contact", "amount", "card"}))
    amount = p["amount"]
    if type(amount) is not float and type(amount) is not int:
        raise _NotPlain
    return PaymentSpec(_str(p["contact"]), float(amount), _int(p["card"]))


def _persona(data: Any) -> Persona:
    d = _fields(data, _PERSONA | {"preferences"}, frozenset({"history"}))
    cards = tuple(
        CardSpec(_int(c["id"]), _str(c["name"]))
        for c in (_fields(c, frozenset({"id", "name"})) for c in _list(d["cards"]))
    )
    return Persona(
        name=_str(d["name"]),
        first_name=_str(d["first_name"]),
        last_name=_str(d["last_name"]),
        email=_str(d["email"]),
        phone_number=_str(d["phone_number"]),
        venmo_password=_str(d["venmo_password"]),
        cards=cards,
        preferences=tuple(_preference(p) for p in _list(d["preferences"])),
        history=tuple(_payment(p) for p in _list(d.get("history", []))),
    )


def _plain(build: Any, data: Any) -> Any:
    """What `build` makes of `data` in the plain form, or None (pydantic validates it)."""
    try:
        return build(data)
    except (_NotPlain, ValueError, TypeError, KeyError):
        return None


_ADAPTERS: dict[type, Any] = {}


def _validated(cls: type[T], data: Any) -> T:
    from pydantic import TypeAdapter

    adapter = _ADAPTERS.get(cls)
    if adapter is None:
        adapter = _ADAPTERS[cls] = TypeAdapter(cls)
    found: T = adapter.validate_python(data)
    return found


def load_personas(folder: Path, files: Mapping[str, bytes] | None = None) -> dict[str, Persona]:
    """Load every `*.yaml` persona in `folder`; or, given `files` (name -> the bytes already
    read from `folder`), those, parsing exactly those bytes.

    Raises:
        ConfigError: naming the file and the problem.
    """
    import yaml
    from pydantic import ValidationError

    from evolve.envs.persona_world._yaml import load_yaml

    personas: dict[str, Persona] = {}
    paths = sorted(folder.glob("*.yaml")) if files is None else [folder / n for n in sorted(files)]
    for path in paths:
        try:
            data = load_yaml(path, None if files is None else files[path.name])
            persona = Persona.validate(data)
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
