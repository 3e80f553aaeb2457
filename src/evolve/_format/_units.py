"""Unit files and counter sidecars: their layout, their fields, and a reader and a writer of
the canonical form in the standard library (no pydantic, no PyYAML).

evolve writes unit files canonically (`evolve.memory.dump_unit`: fixed key order, one
`key: value` line per field, strings plain or quoted on one line). For such a file this
module produces exactly the values `evolve.memory.parse_unit` produces, as a light read-only
:class:`Unit`. Anything else (a comment, a multi-line value, a key it does not know, a value
it cannot prove valid, any error) is :class:`Unhandled`, and the caller parses that one file
with `parse_unit` itself, which also reports a malformed file with its path, in its words.

The writer (`dump_front`, `dump_counters`) writes the bytes PyYAML's safe dumper writes, for
the values it can prove them of (one-line strings, integers, lists of strings; counters);
anything else is :class:`Unhandled`, and the caller dumps with PyYAML. `parse_unit` reads
front matter in that form with `read_front`, and anything else with PyYAML.

What both readers share is defined here once: where a unit lives (scope from its folder, the
skills folder, a hand note's id), the rules of ids and scopes (`MemoryUnit` validates with
them), the sidecar's name and fields, and the overlay of counters onto units.

The field table below mirrors `MemoryUnit`; a test compares the two, so a field added to the
model and not here only sends files that carry it to `parse_unit`.
"""

from __future__ import annotations

import os

from evolve import _confine as confined
from evolve._format import Unhandled

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Mapping
    from typing import Any, Protocol, TypeVar

    class Countable(Protocol):
        @property
        def id(self) -> str: ...
        @property
        def scope(self) -> str: ...
        @property
        def shelf(self) -> str | None: ...
        @property
        def topic(self) -> str | None: ...
        def with_(self, **changes: Any) -> Any: ...

    C = TypeVar("C", bound=Countable)

GLOBAL_SCOPE = "global"
# Skills live in their own folder, whatever their scope:
# memory/skills/general/<id>.md and memory/skills/topics/<topic>/<id>.md.
SKILLS_FOLDER = "skills"
STATUSES = frozenset({"active", "revoked", "pending", "tombstoned", "retired"})
# name -> (key in the file, kind, default). kinds: str, int, uint (>= 0), float (> 0), and
# `skill` for the skill fields whose checks need the model (shelf and path agree, list values):
# a file that sets one is left to `parse_unit`.
FIELDS: dict[str, tuple[str, str, Any]] = {
    "id": ("id", "id", None),
    "schema_version": ("schema", "int", 1),
    "recipe": ("recipe", "str", None),
    "kind": ("kind", "str", None),
    "status": ("status", "status", "active"),
    "scope": ("scope", "scope", GLOBAL_SCOPE),
    "created_episode": ("created_episode", "int", None),
    "updated_episode": ("updated_episode", "int", None),
    "valid_from": ("valid_from", "str", None),
    "valid_to": ("valid_to", "str", None),
    "helpful": ("helpful", "uint", None),
    "harmful": ("harmful", "uint", None),
    "injected": ("injected", "uint", None),
    "injected_pass": ("injected_pass", "uint", None),
    "held_out": ("held_out", "uint", None),
    "held_out_pass": ("held_out_pass", "uint", None),
    "key": ("key", "str", None),
    "revoked_at": ("revoked_at", "int", None),
    "revoked_by": ("revoked_by", "str", None),
    "api": ("api", "str", None),
    "argument": ("argument", "str", None),
    "predicate": ("predicate", "str", None),
    "value": ("value", "str", None),
    "alpha": ("alpha", "float", None),
    "beta": ("beta", "float", None),
    "shelf": ("shelf", "skill", None),
    "topic": ("topic", "str", None),
    "trigger": ("trigger", "str", None),
    "evidence": ("evidence", "skill", None),
    "supersedes": ("supersedes", "str", None),
    "reason": ("reason", "str", None),
    "reverted_commit": ("reverted_commit", "str", None),
    "source_task": ("source_task", "str", None),
    "complaint": ("complaint", "str", None),
    "text": ("text", "str", ""),
}
REQUIRED = ("id", "recipe", "kind")
# The recipes evolve ships (`evolve.updaters`), and `hand` for what a person wrote: a unit of
# any other recipe goes to `evolve.memory.parse_unit`, which also knows installed ones.
BUILTIN_RECIPES = frozenset(
    {"ace", "tepa", "trace", "reflexion", "rewrite", "topl", "skills", "hand"}
)
_BY_KEY = {key: name for name, (key, _, _) in FIELDS.items() if name != "text"}
_DEFAULTS = {name: default for name, (_, _, default) in FIELDS.items()}
# Plain scalars that YAML reads as something other than a string.
_WORDS = frozenset(
    [
        "yes",
        "Yes",
        "YES",
        "no",
        "No",
        "NO",
        "true",
        "True",
        "TRUE",
        "false",
        "False",
        "FALSE",
        "on",
        "On",
        "ON",
        "off",
        "Off",
        "OFF",
        "null",
        "Null",
        "NULL",
    ]
)
_ID_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
_USER_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_-")


class Unit:
    """A unit as read: the attributes of `MemoryUnit` (read-only by convention)."""

    id: str
    schema_version: int
    recipe: str
    kind: str
    status: str
    scope: str
    created_episode: int | None
    updated_episode: int | None
    valid_from: str | None
    valid_to: str | None
    helpful: int | None
    harmful: int | None
    key: str | None
    revoked_at: int | None
    revoked_by: str | None
    api: str | None
    argument: str | None
    predicate: str | None
    value: str | None
    injected: int | None
    injected_pass: int | None
    held_out: int | None
    held_out_pass: int | None
    alpha: float | None
    beta: float | None
    shelf: str | None
    topic: str | None
    trigger: str | None
    evidence: list[str] | None
    supersedes: str | None
    reason: str | None
    reverted_commit: str | None
    source_task: str | None
    complaint: str | None
    text: str

    def __init__(self, values: Mapping[str, Any]) -> None:
        self.__dict__.update(_DEFAULTS)
        self.__dict__.update(values)

    @classmethod
    def of(cls, unit: Any) -> Unit:
        """A `MemoryUnit` (read by `parse_unit`) as a :class:`Unit`."""
        return cls(dict(unit))

    def with_(self, **changes: Any) -> Unit:
        return Unit({**self.__dict__, **changes})

    def dump(self) -> dict[str, Any]:
        """`MemoryUnit.model_dump(by_alias=True, exclude_none=True)`."""
        values = self.__dict__
        out = {}
        for name, (key, _, _) in FIELDS.items():
            value = values.get(name)
            if value is not None:
                out[key] = value
        for name, value in values.items():  # fields a newer model has and this table lacks
            if name not in FIELDS and value is not None:
                out[name] = value
        return out


def valid_id(v: str) -> bool:
    return 0 < len(v) <= 64 and v[0].isascii() and v[0].isalnum() and set(v) <= _ID_CHARS


# New unit ids: `<recipe>-<10 hex>`, the digest of where the unit was made (scope,
# stream episode, seed, the recipe's count within the episode) AND of what it says. Two
# branches of one stream that diverge make their units at the same (scope, episode, seed, n),
# so an id of the origin alone gave one id to two different texts; with the text in the
# digest, one id names one text on every machine. Deterministic (a seeded run is
# reproducible, no random bits). The shape is the old one (10 hex, what people's scripts
# match): 40 bits give two different texts one id with odds of 1e-12, ten thousand units
# any collision with odds of about 5e-5, and a merge that meets one still keeps both units
# (`evolve.merge`: theirs under a new id). Ids made before (origin only) stay valid.
UNIT_ID_HEX = 10


def content_id(prefix: str, origin: str, text: str) -> str:
    """A unit id from its origin (`scope|episode|seed|recipe|n`, or a batch's) and its text."""
    import hashlib

    digest = hashlib.sha256(f"{origin}\x00{text.strip()}".encode()).hexdigest()
    return f"{prefix}-{digest[:UNIT_ID_HEX]}"


def valid_scope(v: str) -> bool:
    if v == GLOBAL_SCOPE:
        return True
    name = v[5:]
    return (
        v.startswith("user:")
        and 0 < len(name) <= 40
        and name[0] != "_"
        and name[0] != "-"
        and set(name) <= _USER_CHARS
    )


def safe_text(v: str) -> bool:
    """No control character but newline and tab, no separator, no lone surrogate (a subset
    of what `evolve._text.unsafe_char` allows: anything else goes to the full parser)."""
    return v.isprintable() or v.replace("\n", "").replace("\t", "").isprintable()


def scalar(v: str) -> str | int:
    """A one-line YAML value as the safe loader reads it, for the forms the canonical dumper
    writes (a plain string, a quoted string, a decimal integer).

    Raises:
        Unhandled: any other form.
    """
    if not v:
        raise Unhandled("empty value")
    first = v[0]
    if first == "'":
        inner = v[1:-1]
        if len(v) < 2 or v[-1] != "'" or "'" in inner.replace("''", ""):
            raise Unhandled("quoted value")
        return inner.replace("''", "'")
    if first == '"':
        inner = v[1:-1]
        if len(v) < 2 or v[-1] != '"' or '"' in inner or "\\" in inner:
            raise Unhandled("quoted value")
        return inner
    if first.isalpha():
        if (
            v in _WORDS
            or ": " in v
            or " #" in v
            or v[-1] == ":"
            or v != v.strip()
            or "\t" in v
            or not v.isprintable()
        ):
            raise Unhandled("plain value")
        return v
    digits = v[1:] if first == "-" else v
    if digits.isascii() and digits.isdigit() and (digits == "0" or digits[0] != "0"):
        return int(v)
    raise Unhandled("value")


# --- writing front matter (`evolve.memory.dump_unit`) ------------------------------------
#
# What PyYAML's safe dumper (libyaml's emitter, `allow_unicode=True`, `width=10_000`, keys in
# the order given) writes for a mapping of one-line strings, integers and lists of such
# strings, decided here without it: a string is plain unless YAML would read it as something
# else or an indicator forbids it, then single-quoted. Anything this cannot prove (a line
# break, a tab or other character the emitter escapes, a float, a long value) is Unhandled,
# and the caller dumps with PyYAML. A test compares the bytes with PyYAML's on generated
# values.

# YAML 1.1's implicit types (the safe resolver's): a plain scalar matching one is not a string.
_IMPLICIT = None
_FIRST_INDICATORS = frozenset("#,[]{}&*!|>'\"%@`")
_SPACE_AFTER = frozenset(" \t\r\n\x85\u2028\u2029")
_MAX_SCALAR = 4_000  # far below the width, where the emitter would fold a line


def _implicit() -> Any:
    global _IMPLICIT
    if _IMPLICIT is None:
        import re

        _IMPLICIT = re.compile(
            r"""[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+
            |[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+
            |[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?
            |[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)
            |[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]
            |[0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?(?:[Tt]|[\ \t]+)[0-9][0-9]?:[0-9][0-9]
             :[0-9][0-9](?:\.[0-9]*)?(?:[\ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?
            |<<|=|~""",
            re.VERBOSE,
        )
    return _IMPLICIT


def _printable_char(c: str) -> bool:
    """What libyaml writes as it is: printable ASCII and the printable part of the Basic
    Multilingual Plane (it escapes a character beyond it, such as an emoji); a line break
    (U+0085, U+2028 and U+2029 too), a tab and U+FEFF are left to PyYAML."""
    o = ord(c)
    return (
        0x20 <= o <= 0x7E
        or (0xA0 <= o <= 0xD7FF and o != 0x2028 and o != 0x2029)
        or (0xE000 <= o <= 0xFFFD and o != 0xFEFF)
    )


def yaml_scalar(v: str) -> str:
    """`v` as the safe dumper writes it as a block mapping's value or sequence item.

    Raises:
        Unhandled: a value this writer cannot prove the emitter's bytes of.
    """
    if not v:
        return "''"
    if len(v) > _MAX_SCALAR or (
        not (v.isascii() and v.isprintable()) and not all(_printable_char(c) for c in v)
    ):
        raise Unhandled("scalar")
    plain = v[0] != " " and v[-1] != " "
    if plain:
        first = v[0]
        spaced = len(v) == 1 or v[1] in _SPACE_AFTER
        if (
            first in _FIRST_INDICATORS
            or (first in "?:-" and spaced)
            or v.startswith(("---", "..."))
            or ": " in v
            or " #" in v
            or v[-1] == ":"
        ):
            plain = False
    if plain and (v in _WORDS or (v[0] in "-+0123456789.<=~" and _implicit().fullmatch(v))):
        plain = False
    if plain:
        return v
    return "'" + v.replace("'", "''") + "'"


def dump_front(data: Mapping[str, Any]) -> str:
    """The safe dumper's text of a mapping of strings, integers and lists of strings (keys
    plain names), in the order given.

    Raises:
        Unhandled: any other value, or a string `yaml_scalar` leaves to PyYAML.
    """
    lines = []
    for key, value in data.items():
        kind = type(value)
        if kind is str:
            lines.append(f"{key}: {yaml_scalar(value)}\n")
        elif kind is int:
            lines.append(f"{key}: {value}\n")
        elif kind is list:
            if not value:
                lines.append(f"{key}: []\n")
                continue
            lines.append(f"{key}:\n")
            for item in value:
                if type(item) is not str:
                    raise Unhandled("list item")
                lines.append(f"- {yaml_scalar(item)}\n")
        else:
            raise Unhandled("value")
    return "".join(lines) if lines else "{}\n"


def read_front(text: str) -> dict[str, Any]:
    """The mapping YAML's safe loader reads from front matter `text` in the form `dump_front`
    writes (one `key: value` line per field, a list as `key: []` or `key:` and `- item` lines),
    keys the unit fields' only.

    Raises:
        Unhandled: anything else (a comment, a multi-line value, a key given twice, a value
            form `scalar` does not read): the caller parses with PyYAML.
    """
    out: dict[str, Any] = {}
    items: list[Any] | None = None
    for line in text.split("\n"):
        if items is not None and line.startswith("- "):
            items.append(scalar(line[2:]))
            continue
        if items is not None and not items:
            raise Unhandled("empty list")  # `key:` alone is null, not a list
        items = None
        key, sep, value = line.partition(":")
        if key not in _BY_KEY or key in out:
            raise Unhandled("line")
        if value == "":
            items = out[key] = []
        elif value == " []":
            out[key] = []
        elif value[:1] == " ":
            out[key] = scalar(value[1:])
        else:
            raise Unhandled("line")
    if items is not None and not items:
        raise Unhandled("empty list")
    return out


def _checked(name: str, kind: str, value: str | int) -> Any:
    if kind == "skill":
        raise Unhandled(name)
    if kind == "int" or kind == "uint":
        if not isinstance(value, int) or (kind == "uint" and value < 0):
            raise Unhandled(name)
        return value
    if kind == "float":
        if not isinstance(value, int) or value <= 0:  # the dumper writes floats as 1.0
            raise Unhandled(name)
        return float(value)
    if not isinstance(value, str) or not safe_text(value):
        raise Unhandled(name)
    if (
        (kind == "id" and not valid_id(value))
        or (kind == "scope" and not valid_scope(value))
        or (kind == "status" and value not in STATUSES)
    ):
        raise Unhandled(name)
    return value


def folder_scope(parts: list[str]) -> str | None:
    """The scope a path's folder gives (`parts`: the path split at "/"): memory/x.md is
    global, memory/<user>/... is the user's."""
    if len(parts) == 2:
        return GLOBAL_SCOPE
    if len(parts) >= 3:
        return f"user:{parts[1]}"
    return None


def hand_id(rel: str) -> str:
    """An id for a hand-written note at `rel`, always valid whatever the file is called."""
    name = rel.rsplit("/", 1)[-1]
    dot = name.rfind(".")
    stem = name[:dot] if dot > 0 else name
    clean = "".join(c if c in _ID_CHARS else "-" for c in stem).lstrip("_.-")[:48]
    if clean and clean == stem:
        return clean
    import hashlib

    digest = hashlib.sha256(rel.encode("utf-8")).hexdigest()[:8]
    return f"{clean or 'note'}-{digest}"


def scan(folder: str, prefix: str = "memory") -> Iterator[tuple[str, os.DirEntry[str], bool]]:
    """(workspace-relative path, entry, whether it is a counter sidecar) of every unit file
    (`*.md`, not hidden) and sidecar under `folder` (whose relative path is `prefix`), folders
    first as the system lists them, links not followed. A file or folder that another writer
    removes while the walk runs is gone, as a later walk sees it.

    A link out of the workspace (or into `.git/`) is refused by name (`PathRefused`): the
    folder itself (`memory/` as a link) or a link where a unit, a sidecar or a folder would
    be; a link that stays inside is skipped, as before (see `evolve._confine`)."""
    root = folder[: len(folder) - len(prefix)].rstrip("/") if folder.endswith(prefix) else None
    if root is not None and "/" not in prefix:
        confined.check(root, prefix)
    yield from _scan(folder, prefix, root)


def _scan(
    folder: str, prefix: str, root: str | None
) -> Iterator[tuple[str, os.DirEntry[str], bool]]:
    try:
        entries = os.scandir(folder)
    except (FileNotFoundError, NotADirectoryError):  # none, or removed since its parent was listed
        return
    with entries:
        for entry in entries:
            try:  # costs nothing unless raised
                name = entry.name
                if entry.is_dir(follow_symlinks=False):
                    yield from _scan(entry.path, f"{prefix}/{name}", root)
                elif name == COUNTERS_NAME:
                    if entry.is_file(follow_symlinks=False):
                        yield f"{prefix}/{name}", entry, True
                    elif root is not None and entry.is_symlink():
                        confined.check(root, f"{prefix}/{name}")
                elif name.endswith(".md") and not name.startswith("."):
                    if entry.is_file(follow_symlinks=False):
                        yield f"{prefix}/{name}", entry, False
                    elif root is not None and entry.is_symlink():
                        confined.check(root, f"{prefix}/{name}")
                elif root is not None and entry.is_symlink() and entry.is_dir():
                    confined.check(root, f"{prefix}/{name}")  # a folder of units, as a link
            except FileNotFoundError:
                continue


def parse(path: str, raw: str) -> Unit:
    """The unit in `raw` (the file at workspace-relative `path`), canonical files only.

    Raises:
        Unhandled: the file is not in canonical form, or not valid: `parse_unit` decides.
    """
    return Unit(parse_values(path, raw))


def parse_values(path: str, raw: str) -> dict[str, Any]:
    """The fields a canonical unit file sets (by field name), checked as `parse_unit` checks
    them: what `MemoryUnit.model_validate` would keep, unchanged.

    Raises:
        Unhandled: the file is not in canonical form, or not valid: `parse_unit` decides.
    """
    raw = raw.replace("\r\n", "\n")
    parts = path.split("/")
    if len(parts) > 2 and parts[0] == "memory" and parts[1] == SKILLS_FOLDER:
        raise Unhandled("skill")  # memory/skills/ holds skills, hand-written ones too
    if not raw.startswith("---\n"):
        scope = folder_scope(parts) or GLOBAL_SCOPE
        text = raw.strip()
        if not valid_scope(scope) or not safe_text(text) or "." in parts or ".." in parts:
            raise Unhandled("hand note")
        return {"id": hand_id(path), "recipe": "hand", "kind": "note", "scope": scope, "text": text}
    end = raw.find("\n---\n", 3)
    if end < 4:
        raise Unhandled("front matter")
    values: dict[str, Any] = {}
    for line in raw[4:end].split("\n"):
        key, sep, value = line.partition(": ")
        name = _BY_KEY.get(key)
        if not sep or name is None or name in values:
            raise Unhandled("line")
        values[name] = _checked(name, FIELDS[name][1], scalar(value))
    text = raw[end + 5 :].strip()
    if not safe_text(text):
        raise Unhandled("text")
    values["text"] = text
    for name in REQUIRED:
        if name not in values:
            raise Unhandled(name)
    if values["recipe"] not in BUILTIN_RECIPES:
        raise Unhandled("recipe")
    if len(parts) > 3 or parts[0] != "memory" or "" in parts:
        raise Unhandled("path")
    scope = values.get("scope", GLOBAL_SCOPE)
    stem = parts[-1][:-3] if parts[-1].endswith(".md") else None
    if folder_scope(parts) != scope or stem != values["id"]:
        raise Unhandled("scope or name")
    return values


# --- counters sidecars (`evolve.memory._counters`) -------------------------------------------

COUNTERS_NAME = "_counters.yaml"
COUNTER_FIELDS: tuple[str, ...] = (
    "helpful", "harmful", "alpha", "beta",
    # the skills scoreboard (evolve.skills._scoreboard)
    "injected", "injected_pass", "held_out", "held_out_pass",
)  # fmt: skip
INT_COUNTERS = frozenset(
    {"helpful", "harmful", "injected", "injected_pass", "held_out", "held_out_pass"}
)
# The counters the canonical reader takes; a skill's scoreboard counts have checks of their
# own (`arms_fault`), so a sidecar that holds them goes to `evolve.memory.parse_counters`.
_INT_COUNTERS = ("helpful", "harmful")
_FLOAT_COUNTERS = ("alpha", "beta")

Counters = dict[str, dict[str, float | int]]  # unit id -> counter -> value
# What an unset counter means; the sidecar records only counters that moved off it.
COUNTER_DEFAULTS: dict[str, float | int] = {
    "helpful": 0, "harmful": 0, "alpha": 1.0, "beta": 1.0,
    "injected": 0, "injected_pass": 0, "held_out": 0, "held_out_pass": 0,
}  # fmt: skip


def dump_counters(counters: Mapping[str, Mapping[str, float | int]]) -> str:
    """The canonical text of a sidecar (sorted ids and fields; empty entries dropped).

    Here rather than in `evolve.memory._counters` (which re-exports it) so that git's merge
    driver (`evolve.merge._drivers`) writes a sidecar without loading the unit model."""
    data = {
        ident: {k: fields[k] for k in sorted(fields)}
        for ident, fields in sorted(counters.items())
        if fields
    }
    if not data:
        return ""
    try:
        return _dump_counters(data)
    except Unhandled:  # a value the canonical writer leaves to PyYAML
        import yaml

        dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
        return str(yaml.dump(data, Dumper=dumper, sort_keys=True, width=10_000))


def _dump_counters(data: Mapping[str, Mapping[str, Any]]) -> str:
    """What PyYAML's safe dumper writes for sorted counters (ids as `yaml_scalar` writes a
    value, which a key of at most 64 characters is written as, numbers as it represents
    them).

    Raises:
        Unhandled: an id or a value it does not prove.
    """
    lines = []
    for ident, fields in data.items():
        if type(ident) is not str or not valid_id(ident):
            raise Unhandled("counter id")
        lines.append(f"{yaml_scalar(ident)}:\n")
        for name, value in fields.items():
            kind = type(value)
            if kind is int:
                text = str(value)
            elif kind is float and value == value and value not in (_INF, -_INF):
                text = repr(value).lower()
                if "." not in text and "e" in text:  # 1e+17: YAML's float needs the point
                    text = text.replace("e", ".0e", 1)
            else:
                raise Unhandled("counter")
            lines.append(f"  {name}: {text}\n")
    return "".join(lines)


_INF = float("inf")


def _number(v: str) -> int | float:
    whole, dot, frac = v.partition(".")
    if not (whole.isascii() and whole.isdigit()) or (
        dot and not (frac.isascii() and frac.isdigit())
    ):
        raise Unhandled("counter")
    return float(v) if dot else int(v)


def parse_counters(raw: str) -> Counters:
    """A sidecar as `evolve.memory.parse_counters` reads it, canonical form only.

    Raises:
        Unhandled: any other form, or an invalid value.
    """
    out: Counters = {}
    entry: dict[str, Any] | None = None
    for line in raw.split("\n"):
        if not line:
            continue
        if line.startswith("  ") and entry is not None:
            name, sep, value = line[2:].partition(": ")
            number = _number(value)
            if not sep or name in entry:
                raise Unhandled("counter line")
            if name in _INT_COUNTERS and isinstance(number, int) and number >= 0:
                entry[name] = number
            elif name in _FLOAT_COUNTERS and number > 0:
                entry[name] = float(number)
            else:
                raise Unhandled("counter")
            continue
        ident = line[:-1]
        if line[-1:] != ":" or not ident or ident in out or scalar(ident) != ident:
            raise Unhandled("counter id")
        entry = out[ident] = {}
    if any(not fields for fields in out.values()):
        raise Unhandled("empty counters entry")
    return out


def skill_folder(shelf: str, topic: str | None) -> str:
    """The folder of a skill's shelf: `memory/skills/general` or `.../topics/<topic>`."""
    if shelf == "general":
        return f"memory/{SKILLS_FOLDER}/general"
    return f"memory/{SKILLS_FOLDER}/topics/{topic}"


def counter_key(unit: Countable) -> str:
    """Which sidecar holds `unit`'s counters: its scope, or for a skill its shelf folder
    (`memory/skills/general`, `memory/skills/topics/<topic>`), which holds them beside it."""
    if unit.shelf is not None:
        return skill_folder(unit.shelf, unit.topic)
    return unit.scope


def scope_of_counters(path: str) -> str:
    """The scope a sidecar path belongs to (a skill shelf's sidecar: its folder)."""
    parts = path.split("/")
    if len(parts) > 3 or (len(parts) == 3 and parts[1] == SKILLS_FOLDER):
        return path.rsplit("/", 1)[0]
    return GLOBAL_SCOPE if len(parts) == 2 else f"user:{parts[1]}"


def overlay(units: Iterable[C], sidecars: Mapping[str, Mapping[str, Mapping[str, Any]]]) -> list[C]:
    """Units with the counters of their scope's sidecar (`sidecars` maps scope -> counters).

    The sidecar wins over counters still in an old unit file; a unit the sidecar does not
    mention keeps what its file says.
    """
    out = []
    for unit in units:
        entry = sidecars.get(counter_key(unit), {}).get(unit.id)
        out.append(unit.with_(**entry) if entry else unit)
    return out
