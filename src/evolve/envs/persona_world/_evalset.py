"""The evalset as the persona world holds it: task specs, splits and personas.

The files are validated by the models (`_TaskSpec`, `_Splits`, `_ProcedureSpec` below and the
persona models of `_personas`, pydantic), in the order and with the errors the environment
has always given. What they validate to is held as plain values: task specs, and personas as
the frozen dataclasses below (the judge, the worlds and the sim read these). A caller that
names a cache file (`evolve run`'s fast path, in `.git/`) gets the validated values
remembered there, keyed by a digest of every evalset file's bytes and of the validating code's
source, so an unchanged evalset is neither parsed nor validated (nor pydantic imported)
again; anything unusual (an unreadable file, a value the cache cannot hold) just validates.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evolve.envs._protocol import SPLITS, Split
from evolve.envs.persona_world._persona_view import PersonaViews
from evolve.envs.persona_world._rules import RULES_BY_NAME
from evolve.envs.persona_world._values import Value, value_from_yaml
from evolve.errors import ConfigError

if TYPE_CHECKING:
    from evolve.envs.persona_world._personas import Persona

Spec = tuple[str, str, dict[str, Any]]  # task id, family, params


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
    at_episode: int
    value: Any


@dataclass(frozen=True)
class Preference:
    """A validated preference (see `_personas.Preference`)."""

    rule: str
    value: Any = None
    changes: tuple[PreferenceChange, ...] = ()

    def value_at(self, episode: int | None) -> Value:
        return value_at(
            self.rule, self.value, [(c.at_episode, c.value) for c in self.changes], episode
        )


@dataclass(frozen=True)
class CardSpec:
    id: int
    name: str


@dataclass(frozen=True)
class PaymentSpec:
    contact: str
    amount: float
    card: int


@dataclass(frozen=True)
class PersonaData(PersonaViews):
    """A validated persona (see `_personas.Persona`), as the environment uses it."""

    name: str
    first_name: str
    last_name: str
    email: str
    phone_number: str
    venmo_password: str
    cards: tuple[CardSpec, ...]
    history: tuple[PaymentSpec, ...]
    preferences: tuple[Preference, ...]

    @classmethod
    def of(cls, dump: dict[str, Any]) -> PersonaData:
        """From `Persona.model_dump()` (what the cache keeps)."""
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


def read_yaml(path: Path) -> Any:
    """An evalset file's document (see `_yaml`).

    Raises:
        ConfigError: the file is missing or not valid YAML.
    """
    import yaml

    from evolve.envs.persona_world._yaml import load_yaml

    try:
        return load_yaml(path)
    except FileNotFoundError:
        raise ConfigError(f"{path} is missing; the evalset is incomplete.") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path} is not valid YAML.") from exc


def _first_problem(exc: Exception) -> str:
    """One line for a validation error (pydantic's own text spans several lines)."""
    errors = getattr(exc, "errors", None)
    if callable(errors):
        first = errors()[0]
        loc = ".".join(str(p) for p in first.get("loc", ())) or "?"
        return f"field {loc!r}: {str(first.get('msg', 'invalid')).rstrip('.').lower()}"
    lines = str(exc).strip().splitlines()
    return lines[0].rstrip(".") if lines else type(exc).__name__


def _validated_specs(evalset: Path) -> tuple[list[Spec], dict[str, Split]]:
    """Task specs and the split of each task, validated as the environment always has.

    Raises:
        ConfigError: a missing or malformed file, or a task in two splits.
    """
    import yaml
    from pydantic import ValidationError

    from evolve.envs.persona_world._procedures import load_procedure_specs
    from evolve.envs.persona_world._specs import _ProcedureSpec, _Splits, _TaskSpec

    try:
        specs = [_TaskSpec.model_validate(t) for t in read_yaml(evalset / "tasks.yaml")]
        splits = _Splits.model_validate(read_yaml(evalset / "splits.yaml"))
    except (ValidationError, TypeError) as exc:
        raise ConfigError(
            f"{evalset} has a malformed tasks.yaml or splits.yaml: {_first_problem(exc)}."
        ) from exc
    split_of: dict[str, Split] = {}
    try:  # procedure-shaped tasks (issue 13), only when evalset/procedures.yaml exists
        extra = [_ProcedureSpec.model_validate(t) for t in load_procedure_specs(evalset)]
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise ConfigError(f"{evalset}/procedures.yaml is not valid YAML{where}.") from exc
    except (ValidationError, TypeError) as exc:
        raise ConfigError(
            f"{evalset} has a malformed procedures.yaml: {_first_problem(exc)}."
        ) from exc
    out: list[Spec] = [(t.id, t.family, t.params) for t in specs]
    out += [(t.id, t.family, t.params) for t in extra]
    split_of.update({t.id: t.split for t in extra})
    for split in SPLITS:
        for task_id in getattr(splits, split):
            if task_id in split_of:
                raise ConfigError(f"task {task_id} is in both {split_of[task_id]} and {split}.")
            split_of[task_id] = split
    return out, split_of


def persona_data(persona: Persona) -> PersonaData:
    return PersonaData.of(persona.model_dump())


# --- remembered ------------------------------------------------------------------------------


def _digest(evalset: Path) -> bytes | None:
    """A digest of every file the evalset is read from (None when one cannot be read)."""
    import hashlib

    h = hashlib.blake2b(digest_size=20)
    names = ["tasks.yaml", "splits.yaml", "procedures.yaml"]
    try:
        folder = evalset / "personas"
        names += sorted(f"personas/{p.name}" for p in folder.iterdir())
    except OSError:
        return None
    for name in names:
        path = evalset / name
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            data = None
        except OSError:
            return None
        h.update(repr((name, data)).encode())
    return h.digest()


def _remembered(value: object) -> bool:
    return (
        isinstance(value, tuple)
        and len(value) == 3
        and isinstance(value[0], list)
        and isinstance(value[1], dict)
        and isinstance(value[2], dict)
    )


class EvalsetReader:
    """Reads an evalset (see the module's docstring); `remember`: the cache file, or None."""

    def __init__(self, evalset: Path, remember: str | None = None) -> None:
        from evolve._format._cache import DiskCache

        self.evalset = evalset
        self.cache = DiskCache(remember, size=1, valid=_remembered)
        self.key = _digest(evalset) if remember is not None else None
        self.known: tuple[list[Spec], dict[str, Split], dict[str, dict[str, Any]]] | None = None
        if self.key is not None:
            self.known = self.cache.get(self.key)  # type: ignore[assignment]
        self._specs: tuple[list[Spec], dict[str, Split]] | None = None
        self._personas: dict[str, dict[str, Any]] | None = None

    def specs(self) -> tuple[list[Spec], dict[str, Split]]:
        if self.known is not None:
            return self.known[0], self.known[1]
        self._specs = _validated_specs(self.evalset)
        return self._specs

    def personas(self) -> dict[str, PersonaData]:
        if self.known is not None:
            return {name: PersonaData.of(dump) for name, dump in self.known[2].items()}
        from evolve.envs.persona_world._personas import load_personas

        self._personas = {
            n: p.model_dump() for n, p in load_personas(self.evalset / "personas").items()
        }
        return {name: PersonaData.of(dump) for name, dump in self._personas.items()}

    def save(self) -> None:
        """Remember what was validated (when it was, and the files did not change meanwhile)."""
        if (
            self.key is None
            or self.known is not None
            or self._specs is None
            or self._personas is None
            or _digest(self.evalset) != self.key
        ):
            return
        self.cache.put(self.key, (*self._specs, self._personas))
