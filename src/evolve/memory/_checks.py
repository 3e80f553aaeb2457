"""The checks of a memory unit's fields, in one place, reported as the pydantic model that
`MemoryUnit` used to be reported them: the same first error (where, what kind, which words).

A unit is checked when it is built (`MemoryUnit(...)`, `MemoryUnit.model_validate(...)`):
strictly (a hand edit such as `helpful: true` is refused, never coerced and rewritten), field
by field in the model's order, then the keys it does not know, then the rules between fields.
The first thing wrong raises :class:`InvalidUnit`; `tests/memory/data/unit_checks.jsonl` holds
1,500 mappings with the error the pydantic model gave, which a test compares word for word.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from evolve._format._units import GLOBAL_SCOPE, safe_text, valid_id, valid_scope
from evolve._text import describe_char, unsafe_char

UNIT_SCHEMA = 1
TOPIC_PATTERN = re.compile(r"^[a-z][a-z0-9_]{0,31}$")
TOPIC_RULE = "1-32 lower-case letters, digits or '_', starting with a letter"  # TOPIC_PATTERN
STATUSES = ("active", "revoked", "pending", "tombstoned", "retired")
SHELVES = ("general", "topic")

Loc = tuple[str | int, ...]

# name -> (key in a mapping, kind, whether None is allowed). Kinds: str, int, uint (>= 0),
# float (> 0), status, shelf, list (of str). The model's order: the first error is the first
# field's. A field without a default (REQUIRED) is missing when absent.
FIELDS: dict[str, tuple[str, str, bool]] = {
    "id": ("id", "str", False),
    "schema_version": ("schema", "int", False),
    "recipe": ("recipe", "str", False),
    "kind": ("kind", "str", False),
    "status": ("status", "status", False),
    "scope": ("scope", "str", False),
    "created_episode": ("created_episode", "int", True),
    "updated_episode": ("updated_episode", "int", True),
    "valid_from": ("valid_from", "str", True),
    "valid_to": ("valid_to", "str", True),
    "helpful": ("helpful", "uint", True),
    "harmful": ("harmful", "uint", True),
    "injected": ("injected", "uint", True),
    "injected_pass": ("injected_pass", "uint", True),
    "held_out": ("held_out", "uint", True),
    "held_out_pass": ("held_out_pass", "uint", True),
    "key": ("key", "str", True),
    "revoked_at": ("revoked_at", "int", True),
    "revoked_by": ("revoked_by", "str", True),
    "api": ("api", "str", True),
    "argument": ("argument", "str", True),
    "predicate": ("predicate", "str", True),
    "value": ("value", "str", True),
    "alpha": ("alpha", "float", True),
    "beta": ("beta", "float", True),
    "shelf": ("shelf", "shelf", True),
    "topic": ("topic", "str", True),
    "trigger": ("trigger", "str", True),
    "evidence": ("evidence", "list", True),
    "supersedes": ("supersedes", "str", True),
    "reason": ("reason", "str", True),
    "reverted_commit": ("reverted_commit", "str", True),
    "source_task": ("source_task", "str", True),
    "complaint": ("complaint", "str", True),
    "text": ("text", "str", False),
}
REQUIRED = frozenset({"id", "recipe", "kind"})
DEFAULTS: dict[str, Any] = {
    name: (UNIT_SCHEMA if name == "schema_version" else None)
    for name in FIELDS
    if name not in REQUIRED
}
DEFAULTS.update(status="active", scope=GLOBAL_SCOPE, text="")

_STRING = "Input should be a valid string"
_INTEGER = "Input should be a valid integer"
_NUMBER = "Input should be a valid number"


def _choices(values: tuple[str, ...]) -> str:
    quoted = [repr(v) for v in values]
    return "Input should be " + (", ".join(quoted[:-1]) + " or " + quoted[-1])


_LITERALS = {"status": _choices(STATUSES), "shelf": _choices(SHELVES)}
_ALLOWED = {"status": frozenset(STATUSES), "shelf": frozenset(SHELVES)}


class InvalidUnit(ValueError):
    """A unit's field (or the rule between two) is wrong: the first error, as pydantic gave it.

    `loc` is where (the field's key, with an index into a list; empty for a rule between
    fields), `type` pydantic's kind of error (`string_type`, `missing`, `value_error`, ...)
    and `msg` its words (a failed check reads `Value error, <sentence>`)."""

    def __init__(self, loc: Loc, type_: str, msg: str) -> None:
        super().__init__(f"{'.'.join(str(p) for p in loc) or 'unit'}: {msg}")
        self.loc, self.type, self.msg = loc, type_, msg

    def errors(self) -> list[dict[str, Any]]:
        """The error as one of pydantic's `ValidationError.errors()` (callers read `[0]`)."""
        return [{"loc": self.loc, "type": self.type, "msg": self.msg}]


def string_fault(value: str) -> str | None:
    """The first character of a string field that no unit may hold (a control character but
    newline and tab, a lone surrogate, a line separator: `evolve._text.unsafe_char`), or None;
    one `isprintable()` for a string that holds no more than newlines and tabs."""
    return None if safe_text(value) else unsafe_char(value)


def _value_error(loc: Loc, sentence: str) -> InvalidUnit:
    return InvalidUnit(loc, "value_error", f"Value error, {sentence}")


def check_field(name: str, key: str, value: Any) -> Any:
    """`value` for field `name` (given under `key`) as the model keeps it (an int for a float
    field becomes a float), or raises :class:`InvalidUnit`."""
    _, kind, optional = FIELDS[name]
    if value is None and optional:
        return None
    if kind == "str":
        if not isinstance(value, str):
            raise InvalidUnit((key,), "string_type", _STRING)
        bad = string_fault(value)
        if bad is not None:
            raise _value_error((key,), f"contains the character {describe_char(bad)}")
        if name == "id" and not valid_id(value):
            raise _value_error((key,), "must be 1-64 letters, digits, '.', '_' or '-'")
        if name == "scope" and not valid_scope(value):
            raise _value_error((key,), "must be 'global' or 'user:<name>'")
        if name == "topic" and not TOPIC_PATTERN.match(value):
            raise _value_error((key,), f"must be {TOPIC_RULE}")
        return value
    if kind == "int" or kind == "uint":
        if not isinstance(value, int) or isinstance(value, bool):
            raise InvalidUnit((key,), "int_type", _INTEGER)
        if kind == "uint" and value < 0:
            raise InvalidUnit(
                (key,), "greater_than_equal", "Input should be greater than or equal to 0"
            )
        return value
    if kind == "float":
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise InvalidUnit((key,), "float_type", _NUMBER)
        try:
            number = float(value)
        except OverflowError:  # an int too large for a float
            raise InvalidUnit((key,), "float_type", _NUMBER) from None
        if not number > 0:  # NaN too
            raise InvalidUnit((key,), "greater_than", "Input should be greater than 0")
        return number
    if kind == "list":
        if not isinstance(value, list):
            raise InvalidUnit((key,), "list_type", "Input should be a valid list")
        for i, item in enumerate(value):
            if not isinstance(item, str):
                raise InvalidUnit((key, i), "string_type", _STRING)
        return value
    # a literal: status or shelf
    if not isinstance(value, str) or value not in _ALLOWED[kind]:
        raise InvalidUnit((key,), "literal_error", _LITERALS[kind])
    return value


def check_shelf(shelf: str | None, topic: str | None) -> None:
    """The rule between `shelf` and `topic` (after every field passed)."""
    if shelf == "topic" and topic is None:
        raise _value_error((), "a topic skill needs a topic")
    if shelf != "topic" and topic is not None:
        raise _value_error((), "only a topic skill has a topic")


def check_values(values: Mapping[str, Any]) -> dict[str, Any]:
    """The fields in `values` (by field name, every field present) checked, as kept."""
    out = {name: check_field(name, FIELDS[name][0], values[name]) for name in FIELDS}
    check_shelf(out["shelf"], out["topic"])
    return out


def check_mapping(data: object, title: str = "MemoryUnit") -> dict[str, Any]:
    """The fields a mapping gives (keys as in a file: `schema`, or the name `schema_version`),
    checked as the model validated them; by field name, only those given.

    Raises:
        InvalidUnit: the first error: a field in the model's order (missing, wrong type,
            failed check), then a key it does not know, then the rule between fields.
    """
    if not isinstance(data, dict):
        raise InvalidUnit(
            (), "model_type", f"Input should be a valid dictionary or instance of {title}"
        )
    out: dict[str, Any] = {}
    used: set[Any] = set()
    for name, (key, _, _) in FIELDS.items():
        if key in data:
            given = key
        elif name != key and name in data:  # populated by the field's name
            given = name
        elif name in REQUIRED:
            raise InvalidUnit((key,), "missing", "Field required")
        else:
            continue
        used.add(given)
        out[name] = check_field(name, given, data[given])
    if len(used) != len(data):
        for key in data:
            if key in used:
                continue
            if not isinstance(key, str):
                where: str | int = int(key) if isinstance(key, int) else str(key)
                raise InvalidUnit((where,), "invalid_key", "Keys should be strings")
            raise InvalidUnit((key,), "extra_forbidden", "Extra inputs are not permitted")
    check_shelf(out.get("shelf"), out.get("topic"))
    return out
