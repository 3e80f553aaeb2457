"""Model text at the boundary: what a reply may contain before it reaches a unit, a file or git.

Every reply from a model (agent, updater, reflector) is parsed with :func:`loads_reply`, which
refuses, with one sentence saying why:

- JSON nested deeper than :data:`MAX_DEPTH` (checked before parsing, so a deep reply can never
  raise ``RecursionError`` here or in anything that walks the value later);
- numbers that are not finite (``NaN``, ``Infinity``, ``1e999``) or too long to convert;
- any string (object key or value) holding an *unsafe character*: a control character other
  than newline and tab (Unicode category Cc: ``\\x00``-``\\x1f``, ``\\x7f``-``\\x9f``, so
  ``\\r`` and the ``\\x1f`` that git log framing uses are refused), a lone surrogate (Cs, which
  cannot be written as UTF-8), or the line and paragraph separators U+2028/U+2029 (which
  ``str.splitlines`` treats as line breaks);
- any *hidden character* (``HIDDEN``, defined with the commit-message escapes in
  :mod:`evolve._format._message`): the bidi controls (embeddings and overrides
  U+202A-U+202E, isolates U+2066-U+2069, the marks U+200E, U+200F and U+061C), the byte-order
  mark U+FEFF and the zero-width space and word joiner (U+200B, U+2060, U+180E). They change
  how text *looks* without changing what it *is* (a reversed file name, an instruction a reader
  cannot see), so a reply holding one is refused like one holding a control character. The
  zero-width joiner and non-joiner (U+200C, U+200D) stay allowed in text: emoji sequences and
  Persian and Indic scripts need them. Path names refuse every format character, those two
  included (`evolve.workspace._paths`).

The policy is: **data is refused, diagnostics are escaped.** Text that would be stored as data
(unit text, file names, prompt text, API arguments) is never silently altered; the whole reply
is refused and the refusal is logged. Fragments of a bad reply that are quoted in a diagnostic
(a refusal line, a failed turn) go through :func:`printable`, which escapes the same characters
as ``\\xNN``/``\\uNNNN``, so a log line or commit body can always be written.

:func:`is_placeholder` recognizes text that says nothing (``...``, ``<bullet>``, ``TODO``),
which no unit may hold.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from typing import Any

from evolve._format._message import HIDDEN
from evolve._lazy import pattern
from evolve.redact import redact_text

MAX_DEPTH = 16
_ALLOWED_CONTROLS = frozenset("\n\t")
_SEPARATORS = frozenset("\u2028\u2029")
# Strings are skipped as whole tokens so brackets inside them are not counted.
_JSON_TOKENS = pattern(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.S)


class ReplyError(ValueError):
    """A model reply that may not be used; the message says why in one clause."""


class NotJson(ReplyError):
    """The text is not JSON at all (as opposed to JSON that may not be used)."""


def unsafe_char(text: str) -> str | None:
    """The first unsafe character of `text` (see the module docstring), or None."""
    for ch in text:
        if ch in _ALLOWED_CONTROLS:
            continue
        if ch in _SEPARATORS or unicodedata.category(ch) in ("Cc", "Cs"):
            return ch
    return None


def hidden_char(text: str) -> str | None:
    """The first hidden character of `text` (a bidi control, a BOM, a zero-width space), or
    None."""
    if text.isascii():
        return None
    for ch in text:
        if ch in HIDDEN:
            return ch
    return None


def describe_char(ch: str) -> str:
    """`U+001F`-style name of a character, for messages."""
    return f"U+{ord(ch):04X}"


def check_text(text: str, what: str = "the text") -> str:
    """Return `text` if it holds no unsafe or hidden character.

    Raises:
        ReplyError: naming the first unsafe or hidden character.
    """
    bad = unsafe_char(text)
    if bad is not None:
        raise ReplyError(
            f"{what} contains the character {describe_char(bad)}; "
            "only printable text, newlines and tabs are allowed"
        )
    hidden = hidden_char(text)
    if hidden is not None:
        raise ReplyError(
            f"{what} contains the character {describe_char(hidden)} (a bidi control or an "
            "invisible character), which could make text look other than it is"
        )
    return text


def _escape(ch: str) -> str:
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str, limit: int | None = None) -> str:
    """`text` with unsafe and hidden characters, newlines and tabs escaped, cut to `limit`
    characters.

    For quoting reply fragments in one-line diagnostics; the result is always valid UTF-8.
    """
    if limit is not None and len(text) > limit:
        text = text[:limit]
    out = []
    for ch in text:
        if (
            ch in _ALLOWED_CONTROLS
            or ch in _SEPARATORS
            or ch in HIDDEN
            or unicodedata.category(ch) in ("Cc", "Cs")
        ):
            out.append(_escape(ch))
        else:
            out.append(ch)
    return "".join(out)


def encodable(text: str) -> bool:
    """Whether `text` can be written as UTF-8 (it holds no lone surrogate)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def fragment(text: str, limit: int = 80) -> str:
    """A piece of a reply to quote in a diagnostic: secrets redacted first, then escaped and cut."""
    return printable(redact_text(text[: limit * 4]), limit)


def json_depth(text: str) -> int:
    """The deepest nesting of arrays and objects in JSON-like `text` (strings skipped)."""
    depth = deepest = 0
    for match in _JSON_TOKENS.finditer(text):
        token = match.group()
        if token in ("[", "{"):
            depth += 1
            deepest = max(deepest, depth)
        elif token in ("]", "}"):
            depth = max(0, depth - 1)
    return deepest


def _finite_float(raw: str) -> float:
    value = float(raw)
    if not math.isfinite(value):
        raise ReplyError(f"the number {raw[:20]} is not finite")
    return value


def _no_constant(raw: str) -> Any:
    raise ReplyError(f"{raw} is not a JSON number")


def check_value(value: Any, what: str = "the reply") -> Any:
    """Return `value` (parsed JSON) if no string in it, key or value, is unsafe.

    Iterative, so it never recurses however the value was built.

    Raises:
        ReplyError: naming the first unsafe character.
    """
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            check_text(item, what)
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return value


def loads_reply(text: str, max_depth: int = MAX_DEPTH) -> Any:
    """Parse one JSON document from a model, refusing what the module docstring lists.

    Raises:
        ReplyError: not JSON, too deep, a non-finite number, or an unsafe character.
    """
    if json_depth(text) > max_depth:
        raise ReplyError(f"the reply nests JSON deeper than {max_depth} levels")
    try:
        data = json.loads(text, parse_float=_finite_float, parse_constant=_no_constant)
    except ReplyError:
        raise
    except json.JSONDecodeError as exc:
        raise NotJson(f"the reply is not valid JSON ({exc.msg})") from None
    except (ValueError, RecursionError) as exc:
        # int() refuses numbers over 4300 digits; RecursionError is a belt to the depth check.
        raise ReplyError(f"the reply is not usable JSON ({type(exc).__name__})") from None
    return check_value(data)


_PLACEHOLDER_WORDS = frozenset(
    {
        "todo",
        "tbd",
        "tba",
        "n/a",
        "na",
        "none",
        "null",
        "nil",
        "placeholder",
        "string",
        "text",
        "bullet",
        "example",
        "etc",
        "lorem ipsum",
        "your text here",
        "text here",
        "bullet text",
    }
)


def is_placeholder(text: str) -> bool:
    """Whether `text` says nothing a unit could hold.

    True for: empty or whitespace; text without any letter or digit (``...``, ``…``, ``-``,
    ``[]``); text wholly inside one pair of template brackets (``<bullet>``, ``{text}``,
    ``[insert rule]``); and, ignoring case and surrounding punctuation, one of a few template
    words (``TODO``, ``TBD``, ``N/A``, ``none``, ``null``, ``placeholder``, ``string``, ``text``,
    ``example``, ``etc``, ``lorem ipsum``, ``your text here``).
    """
    stripped = text.strip()
    if not any(ch.isalnum() for ch in stripped):
        return True
    if (
        len(stripped) >= 2
        and (stripped[0], stripped[-1]) in (("<", ">"), ("{", "}"), ("[", "]"))
        and not any(ch in "<>{}[]" for ch in stripped[1:-1])
    ):
        return True
    core = " ".join(stripped.strip(" .…!?:;,-*_\"'`()").casefold().split())
    return core in _PLACEHOLDER_WORDS


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "number": (int, float),
    "integer": (int,),
    "boolean": (bool,),
    "null": (type(None),),
}


def _type_ok(value: Any, kind: str) -> bool:
    if kind in ("number", "integer") and isinstance(value, bool):
        return False
    return isinstance(value, _JSON_TYPES.get(kind, (object,)))


def shape_error(value: Any, schema: dict[str, Any], levels: int = 1, where: str = "") -> str | None:
    """The first way `value` departs from `schema`, or None; `levels` bounds how deep to look.

    Understands the subset of JSON Schema evolve's own reply schemas use: `type`, `enum`,
    `properties`, `required` and `items`. Unknown object fields are allowed (a model's extra
    "thought" is harmless); a missing required field or a wrong type is not.
    """
    name = where or "the reply"
    kind = schema.get("type")
    if isinstance(kind, str) and not _type_ok(value, kind):
        return f"{name} must be a JSON {kind}"
    enum = schema.get("enum")
    if isinstance(enum, list) and value not in enum:
        return f"{name} must be one of {', '.join(json.dumps(e) for e in enum)}"
    if levels <= 0:
        return None
    if isinstance(value, dict):
        missing = [k for k in schema.get("required", []) if k not in value]
        if missing:
            return f"{name} has no {', '.join(repr(k) for k in missing)} field"
        for key, sub in schema.get("properties", {}).items():
            if key in value and isinstance(sub, dict):
                error = shape_error(value[key], sub, levels - 1, f"'{key}'")
                if error:
                    return error
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            error = shape_error(item, schema["items"], levels - 1, f"{name}[{i}]")
            if error:
                return error
    return None
