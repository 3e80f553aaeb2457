"""Checking plain YAML data against the `evolve.yaml` sections (msgspec Structs), in pydantic's
words.

The sections (`evolve.workspace._config`) are msgspec Structs: cheap to import and to build.
This module validates a parsed document against them the way pydantic's lax mode did (the
same coercions: `true` is 1 for a number, `'3'` is 3, `'yes'` is true) and words every refusal
as pydantic did, so `evolve.yaml`'s errors read exactly as before: the same `type`, `loc`,
`msg` and `input` for each problem, every problem of the document collected, fields in their
declared order before unknown keys, and a section's own check run only when its fields pass.

A field's type is read from its annotation: `int`, `float`, `bool`, `str`, `Literal[...]`,
`tuple[T, ...]`, `dict[K, V]`, a section, `T | None`, `Literal[...] | tuple[T, ...]`, and
`Annotated[T, ...]` with :class:`msgspec.Meta` bounds (`ge`, `gt`, `le`, `lt`), :class:`Check`
(a function run on the checked value, as pydantic's `AfterValidator`) and :class:`Before` (run
on the raw value first). A section's `_check(self)` is its whole-section rule (pydantic's
`model_validator(mode="after")`). A plan per section is built on first use, not at import.
"""

from __future__ import annotations

import math
import types
import typing
from collections.abc import Callable
from typing import Any

import msgspec

from evolve._lazy import pattern

Loc = tuple[str | int, ...]
Errors = list[dict[str, Any]]
Validator = Callable[[Any, Loc, Errors], Any]
_FAIL: Any = object()  # a value that did not validate (its errors are in the list)
_I64 = 2**63
_INT_TEXT = pattern(r"[+-]?[0-9](?:_?[0-9])*(?:\.0+)?")
_TRUE = frozenset({"1", "on", "t", "true", "y", "yes"})
_FALSE = frozenset({"0", "off", "f", "false", "n", "no"})


class Check:
    """A check run on a field's value once its type passed (pydantic's `AfterValidator`):
    returns the value, or raises ValueError with the sentence to show."""

    __slots__ = ("fn",)

    def __init__(self, fn: Callable[[Any], Any]) -> None:
        self.fn = fn


class Before:
    """A function applied to a field's raw value before its type is checked."""

    __slots__ = ("fn",)

    def __init__(self, fn: Callable[[Any], Any]) -> None:
        self.fn = fn


class Invalid(ValueError):
    """The data does not fit the section; :meth:`errors` lists every problem, as pydantic's
    `ValidationError.errors()` did (`type`, `loc`, `msg`, `input`)."""

    def __init__(self, title: str, errors: Errors) -> None:
        lines = [f"{len(errors)} validation error{'s' if len(errors) > 1 else ''} for {title}"]
        for e in errors:  # as pydantic printed them
            shown = f"input_value={e['input']!r}, input_type={type(e['input']).__name__}"
            where = ".".join(str(p) for p in e["loc"])
            lines += (
                [where, f"  {e['msg']} [type={e['type']}, {shown}]"]
                if where
                else [f"  {e['msg']} [type={e['type']}, {shown}]"]
            )
        super().__init__("\n".join(lines))
        self._errors = errors

    def errors(self) -> Errors:
        return list(self._errors)


def _error(errors: Errors, kind: str, loc: Loc, msg: str, value: Any) -> Any:
    errors.append({"type": kind, "loc": loc, "msg": msg, "input": value})
    return _FAIL


def _number(bound: float) -> str:
    """A bound as pydantic printed it (Rust's display: `3600.0` is `3600`)."""
    if isinstance(bound, float) and bound.is_integer():
        return str(int(bound))
    return str(bound)


# --- scalars ------------------------------------------------------------------------------


def _int(value: Any, loc: Loc, errors: Errors) -> Any:
    if type(value) is int:
        return value
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            return _error(errors, "finite_number", loc, "Input should be a finite number", value)
        if abs(value) >= _I64:
            msg = "Unable to parse input string as an integer, exceeded maximum size"
            return _error(errors, "int_parsing_size", loc, msg, value)
        if not value.is_integer():
            msg = "Input should be a valid integer, got a number with a fractional part"
            return _error(errors, "int_from_float", loc, msg, value)
        return int(value)
    if isinstance(value, str | bytes):
        text = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
        text = text.strip()
        if text.isascii() and _INT_TEXT.fullmatch(text):
            return int(text.split(".")[0].replace("_", ""))
        msg = "Input should be a valid integer, unable to parse string as an integer"
        return _error(errors, "int_parsing", loc, msg, value)
    if isinstance(value, int):  # an int subclass
        return int(value)
    return _error(errors, "int_type", loc, "Input should be a valid integer", value)


def _float(value: Any, loc: Loc, errors: Errors) -> Any:
    if isinstance(value, bool | int):
        number = float(value)
    elif isinstance(value, float):
        number = value
    elif isinstance(value, str | bytes):
        text = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
        text = text.strip()
        try:
            if not text.isascii():
                raise ValueError(text)
            number = float(text)
        except ValueError:
            msg = "Input should be a valid number, unable to parse string as a number"
            return _error(errors, "float_parsing", loc, msg, value)
    else:
        return _error(errors, "float_type", loc, "Input should be a valid number", value)
    if not math.isfinite(number):
        return _error(errors, "finite_number", loc, "Input should be a finite number", value)
    return number


def _bool(value: Any, loc: Loc, errors: Errors) -> Any:
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float) and (not isinstance(value, float) or value.is_integer()):
        if value in (0, 1):
            return bool(value)
        if abs(value) < _I64:
            msg = "Input should be a valid boolean, unable to interpret input"
            return _error(errors, "bool_parsing", loc, msg, value)
    if isinstance(value, str):
        word = value.lower()
        if word in _TRUE or word in _FALSE:
            return word in _TRUE
        msg = "Input should be a valid boolean, unable to interpret input"
        return _error(errors, "bool_parsing", loc, msg, value)
    if isinstance(value, bytes):
        msg = "Input should be a valid boolean, unable to interpret input"
        return _error(errors, "bool_parsing", loc, msg, value)
    return _error(errors, "bool_type", loc, "Input should be a valid boolean", value)


def _str(value: Any, loc: Loc, errors: Errors) -> Any:
    if isinstance(value, str):
        return value
    if isinstance(value, bytes | bytearray):
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            pass
    return _error(errors, "string_type", loc, "Input should be a valid string", value)


_SCALARS: dict[Any, Validator] = {int: _int, float: _float, bool: _bool, str: _str}


def _literal(choices: tuple[Any, ...]) -> Validator:
    shown = [repr(c) for c in choices]
    msg = "Input should be " + (
        shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} or {shown[-1]}"
    )

    numbers = any(isinstance(c, int) and not isinstance(c, bool) for c in choices)

    def check(value: Any, loc: Loc, errors: Errors) -> Any:
        if numbers and type(value) is int and abs(value) >= _I64:  # pydantic reads it first
            size = "Unable to parse input string as an integer, exceeded maximum size"
            return _error(errors, "int_parsing_size", loc, size, value)
        for choice in choices:
            same = type(choice) is type(value)
            if (same or (not isinstance(choice, str) and isinstance(value, int | float))) and (
                value == choice
            ):
                return choice
        return _error(errors, "literal_error", loc, msg, value)

    return check


def _bounded(inner: Validator, meta: msgspec.Meta) -> Validator:
    checks = []
    for attr, kind, words in (
        ("gt", "greater_than", "greater than"),
        ("ge", "greater_than_equal", "greater than or equal to"),
        ("lt", "less_than", "less than"),
        ("le", "less_than_equal", "less than or equal to"),
    ):
        bound = getattr(meta, attr)
        if bound is not None:
            checks.append((attr, bound, kind, f"Input should be {words} {_number(bound)}"))

    def check(value: Any, loc: Loc, errors: Errors) -> Any:
        out = inner(value, loc, errors)
        if out is _FAIL:
            return out
        for attr, bound, kind, msg in checks:
            ok = {"gt": out > bound, "ge": out >= bound, "lt": out < bound, "le": out <= bound}
            if not ok[attr]:
                return _error(errors, kind, loc, msg, value)
        return out

    return check


def _checked(inner: Validator, fn: Callable[[Any], Any]) -> Validator:
    def check(value: Any, loc: Loc, errors: Errors) -> Any:
        out = inner(value, loc, errors)
        if out is _FAIL:
            return out
        try:
            return fn(out)
        except ValueError as exc:
            return _error(errors, "value_error", loc, f"Value error, {exc}", value)

    return check


def _before(inner: Validator, fn: Callable[[Any], Any]) -> Validator:
    return lambda value, loc, errors: inner(fn(value), loc, errors)


# --- containers ---------------------------------------------------------------------------


def _tuple(item: Validator) -> Validator:
    def check(value: Any, loc: Loc, errors: Errors) -> Any:
        if not isinstance(value, list | tuple | set | frozenset):
            return _error(errors, "tuple_type", loc, "Input should be a valid tuple", value)
        before = len(errors)
        out = tuple(item(v, (*loc, i), errors) for i, v in enumerate(value))
        return _FAIL if len(errors) > before else out

    return check


def _dict(key: Validator, item: Validator) -> Validator:
    def check(value: Any, loc: Loc, errors: Errors) -> Any:
        if not isinstance(value, dict):
            return _error(errors, "dict_type", loc, "Input should be a valid dictionary", value)
        before = len(errors)
        out = {}
        for k, v in value.items():
            name = key(k, (*loc, k, "[key]"), errors)
            checked = item(v, (*loc, k), errors)
            out[name if name is not _FAIL else k] = checked
        return _FAIL if len(errors) > before else out

    return check


def _optional(inner: Validator) -> Validator:
    return lambda value, loc, errors: None if value is None else inner(value, loc, errors)


def _union(members: list[tuple[str, Validator]]) -> Validator:
    """A union of a literal and a container (smart mode, as pydantic): the first member that
    takes the value; else every member's errors, each under the member's name."""

    def check(value: Any, loc: Loc, errors: Errors) -> Any:
        tried: Errors = []
        for name, member in members:
            mine: Errors = []
            out = member(value, (*loc, name), mine)
            if out is not _FAIL:
                return out
            tried += mine
        errors.extend(tried)
        return _FAIL

    return check


def _label(annotation: Any) -> str:
    """A union member's name in a location, as pydantic wrote it."""
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return f"literal[{', '.join(repr(a) for a in typing.get_args(annotation))}]"
    if origin is tuple:
        return f"tuple[{_label(typing.get_args(annotation)[0])}, ...]"
    return getattr(annotation, "__name__", str(annotation))


def compile_type(annotation: Any) -> Validator:
    """The validator of values of `annotation`."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        base, *extras = typing.get_args(annotation)
        out = compile_type(base)
        for extra in extras:
            if isinstance(extra, msgspec.Meta):
                out = _bounded(out, extra)
        for extra in extras:
            if isinstance(extra, Check):
                out = _checked(out, extra.fn)
        for extra in extras:
            if isinstance(extra, Before):
                out = _before(out, extra.fn)
        return out
    if origin is typing.Literal:
        return _literal(typing.get_args(annotation))
    if origin is tuple:
        return _tuple(compile_type(typing.get_args(annotation)[0]))
    if origin is dict:
        key, item = typing.get_args(annotation)
        return _dict(compile_type(key), compile_type(item))
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(annotation)
        if type(None) in args:
            (rest,) = [a for a in args if a is not type(None)]  # one type or None
            return _optional(compile_type(rest))
        return _union([(_label(a), compile_type(a)) for a in args])
    if isinstance(annotation, type) and issubclass(annotation, msgspec.Struct):
        return lambda value, loc, errors: validate(annotation, value, loc, errors)
    scalar = _SCALARS.get(annotation)
    if scalar is None:
        raise TypeError(f"no validator for {annotation!r}")
    return scalar


# --- sections -----------------------------------------------------------------------------

_PLANS: dict[type, list[tuple[str, Validator, Any]]] = {}


def _plan(cls: type[msgspec.Struct]) -> list[tuple[str, Validator, Any]]:
    """(name, validator, default maker or None when required) of each field of `cls`."""
    plan = _PLANS.get(cls)
    if plan is None:
        plan = []
        for field in msgspec.structs.fields(cls):
            if field.default is not msgspec.NODEFAULT:
                default: Any = (lambda d: lambda: d)(field.default)
            elif field.default_factory is not msgspec.NODEFAULT:
                default = field.default_factory
            else:
                default = None
            plan.append((field.name, compile_type(field.type), default))
        _PLANS[cls] = plan
    return plan


def validate(cls: type[msgspec.Struct], value: Any, loc: Loc, errors: Errors) -> Any:
    """An instance of the section `cls` from `value` (a mapping, or an instance as it is),
    or `_FAIL` with the problems appended to `errors`."""
    if isinstance(value, cls):
        return value
    if not isinstance(value, dict):
        msg = f"Input should be a valid dictionary or instance of {cls.__name__}"
        return _error(errors, "model_type", loc, msg, value)
    before = len(errors)
    plan = _plan(cls)
    out: dict[str, Any] = {}
    for name, check, default in plan:
        if name in value:
            out[name] = check(value[name], (*loc, name), errors)
        elif default is None:
            _error(errors, "missing", (*loc, name), "Field required", value)
        else:
            out[name] = default()
    known = {name for name, _, _ in plan}
    for key in value:
        if not isinstance(key, str):
            _error(errors, "invalid_key", (*loc, key), "Keys should be strings", key)
        elif key not in known:
            _error(
                errors, "extra_forbidden", (*loc, key), "Extra inputs are not permitted", value[key]
            )
    if len(errors) > before:
        return _FAIL
    made = cls(**out)
    msgspec.structs.force_setattr(made, "_given", frozenset(k for k in value if k in known))
    rule = getattr(made, "_check", None)
    if rule is not None:
        try:
            rule()
        except ValueError as exc:
            return _error(errors, "value_error", loc, f"Value error, {exc}", value)
    return made


def parse(cls: type[msgspec.Struct], value: Any) -> Any:
    """An instance of `cls` from `value`.

    Raises:
        Invalid: every problem, in pydantic's order and words.
    """
    errors: Errors = []
    made = validate(cls, value, (), errors)
    if errors:
        raise Invalid(cls.__name__, errors)
    return made
