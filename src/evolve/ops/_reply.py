"""How a proposer reads a model's reply: JSON found in it and checked, list entries kept or refused.

Every proposer (the recipes, the skills reflection and evolver, the reflector) parses model
replies through here, below all of them: the checks are `evolve._text`'s (depth, non-finite
numbers, unsafe characters, the schema's top level), and secret-shaped strings are redacted.
"""

from __future__ import annotations

import re
from typing import Any, Protocol

from evolve._lazy import pattern
from evolve._text import NotJson, ReplyError, loads_reply, shape_error
from evolve.ops._ops import Refusal
from evolve.redact import redact


class Schema(Protocol):
    """What a reply's top level is checked against (`evolve.llm.JsonSchema` is one): the
    operations know no model."""

    @property
    def schema(self) -> dict[str, Any]: ...


class BadReply(ValueError):
    """A model's reply that is not the JSON asked for (the reason, one clause)."""


_FENCE = pattern(r"```(?:json)?\s*(.*?)```", re.S)


def parse_json_reply(text: str, schema: Schema | None = None) -> Any:
    """Parse a JSON reply, tolerating a code fence or prose around one object or array.

    The first candidate that is JSON decides: it is refused if it nests too deep, holds a
    non-finite number or an unsafe character (see :mod:`evolve._text`), or departs from the
    top level of `schema`. Secret-shaped strings in it are redacted.

    Raises:
        BadReply: with the reason, one clause.
    """
    candidates = [text.strip()]
    candidates += [m.strip() for m in _FENCE.findall(text)]
    for opener, closer in (("{", "}"), ("[", "]")):
        start, end = text.find(opener), text.rfind(closer)
        if 0 <= start < end:
            candidates.append(text[start : end + 1])
    first: NotJson | None = None
    for candidate in candidates:
        try:
            data = loads_reply(candidate)
        except NotJson as exc:
            first = first or exc
            continue
        except ReplyError as exc:
            raise BadReply(str(exc)) from None
        if schema is not None:
            error = shape_error(data, schema.schema)
            if error:
                raise BadReply(error)
        return redact(data)
    raise BadReply(str(first) if first else "the reply is not valid JSON")


class Refusals(Protocol):
    """Anything that collects refusals (a recipe's :class:`Update`, a skills batch plan)."""

    refused: list[Refusal]


def items(
    data: dict[str, Any], key: str, update: Refusals, op: str = "reply"
) -> list[dict[str, Any]]:
    """The list under `key` of a reply; anything else is refused (as `op`)."""
    value = data.get(key, [])
    if not isinstance(value, list):
        update.refused.append(Refusal(op=op, what=str(value)[:80], reason=f"'{key}' is not a list"))
        return []
    out = []
    for entry in value:
        if isinstance(entry, dict):
            out.append(entry)
        else:
            update.refused.append(Refusal(op=op, what=str(entry)[:80], reason="not a JSON object"))
    return out
