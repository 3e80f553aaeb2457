"""Memory units: one Markdown file each, with YAML front matter.

A unit file is ``---\\n<front matter>---\\n<body>\\n``. The serialization is canonical (fixed
key order, no empty fields, one trailing newline), so a unit that did not change produces no
diff. A malformed file is reported with its path; it is never dropped or rewritten.

A Markdown file without front matter is a hand-written note: it is rendered for every scope
as it is, which is how a person adds a fact without learning the format.
"""

from __future__ import annotations

from copy import copy
from functools import cache
from pathlib import PurePosixPath
from typing import Any, ClassVar, Literal

import msgspec
from msgspec.structs import astuple, force_setattr

from evolve._format import Unhandled
from evolve._format._units import (
    BUILTIN_RECIPES,
    dump_front,
    folder_scope,
    hand_id,
    read_front,
    skill_folder,
)
from evolve._format._units import GLOBAL_SCOPE as GLOBAL_SCOPE  # re-exported
from evolve._format._units import SKILLS_FOLDER as SKILLS_FOLDER  # re-exported
from evolve._format._units import valid_scope as valid_scope  # re-exported
from evolve._registry import is_import_path
from evolve.errors import EvolveError
from evolve.memory import _checks
from evolve.memory._checks import (
    FIELDS,
    REQUIRED,
    TOPIC_PATTERN,
    TOPIC_RULE,
    UNIT_SCHEMA,
    InvalidUnit,
    check_field,
    check_mapping,
    check_shelf,
)

__all__ = ["TOPIC_PATTERN", "TOPIC_RULE", "UNIT_SCHEMA", "InvalidUnit"]

# `retired`: a skill the scoreboard found harmful (not rendered, not injected, like revoked).
Status = Literal["active", "revoked", "pending", "tombstoned", "retired"]
Shelf = Literal["general", "topic"]


class MalformedUnit(EvolveError):
    """A unit file that cannot be read; the message names the path."""


class MemoryUnit(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One unit of memory. Recipe-specific fields are optional and typed.

    Checked when built (`evolve.memory._checks`): strictly, so a hand edit such as
    `helpful: true` is reported, not coerced and rewritten; a wrong field raises `InvalidUnit`
    (a ValueError) in the words pydantic used. The part of pydantic's model API evolve uses
    is kept (`model_validate`, `model_dump`, `model_copy`, `model_construct`, `model_fields`).
    """

    id: str
    schema_version: int = msgspec.field(default=UNIT_SCHEMA, name="schema")
    recipe: str
    kind: str
    status: Status = "active"
    scope: str = GLOBAL_SCOPE
    created_episode: int | None = None
    updated_episode: int | None = None
    valid_from: str | None = None
    valid_to: str | None = None
    # ACE (>= 0)
    helpful: int | None = None
    harmful: int | None = None
    # skills scoreboard (evolve.skills._scoreboard): training episodes with the skill injected
    # or held out, and how many of each passed (>= 0)
    injected: int | None = None
    injected_pass: int | None = None
    held_out: int | None = None
    held_out_pass: int | None = None
    # TEPA
    key: str | None = None
    revoked_at: int | None = None
    revoked_by: str | None = None
    # TRACE
    api: str | None = None
    argument: str | None = None
    predicate: str | None = None
    value: str | None = None
    # Beta posterior (topl), > 0
    alpha: float | None = None
    beta: float | None = None
    # skills: the shelf (general or topic) and topic, when it applies, and what it came from
    shelf: Shelf | None = None
    topic: str | None = None
    trigger: str | None = None
    evidence: list[str] | None = None
    # history between units
    supersedes: str | None = None
    # tombstones (a reverted or rejected unit's text/key, refused if proposed again)
    reason: str | None = None
    reverted_commit: str | None = None
    # review / provenance visible to people (never rule provenance)
    source_task: str | None = None
    complaint: str | None = None
    text: str = ""

    # field name -> key in a file (the name but for `schema`), in the model's order
    model_fields: ClassVar[dict[str, str]] = {name: key for name, (key, _, _) in FIELDS.items()}

    def __post_init__(self) -> None:
        # Every field, in order (the first error is reported); no control character (but
        # newline and tab) or lone surrogate reaches a unit file, a commit or git's log framing.
        for (name, kind, nullable), value in zip(_SPECS, astuple(self), strict=True):
            if value is None:
                if nullable:
                    continue
            elif type(value) is str:
                if kind == "plain" and _checks.string_fault(value) is None:
                    continue  # what most fields hold: nothing more to check
            elif type(value) is int and kind == "int":
                continue
            kept = check_field(name, name, value)
            if kept is not value:  # an int for a float field
                force_setattr(self, name, kept)
        check_shelf(self.shelf, self.topic)

    @property
    def is_hand_written(self) -> bool:
        return self.recipe == "hand"

    def path(self) -> PurePosixPath:
        """Where the unit lives: `memory/<user>/<id>.md`, or `memory/<id>.md` if global; a
        skill on its shelf's folder (`memory/skills/general/` or `.../topics/<topic>/`)."""
        if self.shelf is not None:
            return skill_path(self.shelf, self.topic, self.id)
        return unit_path(self.scope, self.id)

    def with_(self, **changes: Any) -> MemoryUnit:
        """A copy with `changes` (field names), unchecked, as pydantic's `model_copy`."""
        out = copy(self)
        for name, value in changes.items():
            force_setattr(out, name, value)
        return out

    # --- the part of pydantic's model API evolve's callers use ---------------------------

    @classmethod
    def model_validate(cls, data: object) -> MemoryUnit:
        """The unit a mapping describes (keys as in a file, or field names), checked.

        Raises:
            InvalidUnit: the first thing wrong, as pydantic reported it.
        """
        if isinstance(data, dict) and len(data) <= len(_NAMES):
            values: dict[str, Any] = {}
            for key, value in data.items():
                name = _KEYS.get(key) if isinstance(key, str) else None
                if name is None or name in values:
                    break  # an unknown key, or a field given twice: the full check says
                values[name] = value
            else:
                if values.keys() >= REQUIRED:
                    try:
                        return cls(**values)
                    except InvalidUnit as exc:  # named by the key it was given under
                        if exc.loc[:1] == ("schema_version",) and "schema" in data:
                            raise InvalidUnit(("schema", *exc.loc[1:]), exc.type, exc.msg) from None
                        raise
        values = check_mapping(data)
        return cls.model_construct(**values)

    @classmethod
    def model_construct(cls, **values: Any) -> MemoryUnit:
        """A unit of `values` (field names or keys) without checks: for values proved valid."""
        out = copy(_prototype())
        for name, value in values.items():
            force_setattr(out, _KEYS.get(name, name), value)
        return out

    def model_copy(self, *, update: dict[str, Any] | None = None) -> MemoryUnit:
        return self.with_(**(update or {}))

    def model_dump(
        self,
        *,
        mode: Literal["python", "json"] = "python",
        by_alias: bool = False,
        exclude_none: bool = False,
        exclude: set[str] | frozenset[str] | None = None,
    ) -> dict[str, Any]:
        """The fields as a dict, in the model's order (`mode` is accepted: every value is JSON's
        already)."""
        del mode
        out: dict[str, Any] = {}
        for name, key in _ITEMS:
            if exclude is not None and name in exclude:
                continue
            value = getattr(self, name)
            if value is None and exclude_none:
                continue
            out[key if by_alias else name] = list(value) if type(value) is list else value
        return out

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        # unpickled as it was, unchecked (as pydantic did): a copy made by `with_` included
        return _rebuilt, (astuple(self),)

    def __iter__(self) -> Any:
        """(name, value) pairs, as a pydantic model iterates (`dict(unit)`)."""
        return ((name, getattr(self, name)) for name in _NAMES)


_NAMES = tuple(FIELDS)
# (name, kind, nullable): `plain` for a string without a check of its own, `int` for one
# without a bound; anything else goes to `check_field`
_SPECS = tuple(
    (
        name,
        "plain" if kind == "str" and name not in ("id", "scope", "topic") else kind,
        nullable,
    )
    for name, (_, kind, nullable) in FIELDS.items()
)
_ITEMS = tuple((name, key) for name, (key, _, _) in FIELDS.items())
_KEYS = {**{name: name for name in FIELDS}, **{key: name for name, (key, _, _) in FIELDS.items()}}


def _rebuilt(values: tuple[Any, ...]) -> MemoryUnit:
    return MemoryUnit.model_construct(**dict(zip(_NAMES, values, strict=True)))


@cache
def _prototype() -> MemoryUnit:
    """The unit every unchecked one is copied from (required fields are set after)."""
    return MemoryUnit(id="x", recipe="x", kind="x")


def scope_for(persona: str) -> str:
    return f"user:{persona}"


def unit_path(scope: str, unit_id: str) -> PurePosixPath:
    """A unit's path from its scope (or, for a skill, its counter key: the shelf folder)."""
    if scope.startswith("memory/"):
        return PurePosixPath(scope) / f"{unit_id}.md"
    if scope == GLOBAL_SCOPE:
        return PurePosixPath("memory") / f"{unit_id}.md"
    return PurePosixPath("memory") / scope.removeprefix("user:") / f"{unit_id}.md"


def skill_path(shelf: str, topic: str | None, unit_id: str) -> PurePosixPath:
    return PurePosixPath(skill_folder(shelf, topic)) / f"{unit_id}.md"


def skill_shelf_of(rel: PurePosixPath) -> tuple[Shelf, str | None] | None:
    """(shelf, topic) of a path under `memory/skills/`, or None for any other path.

    Raises:
        MalformedUnit: a path under `memory/skills/` that is not on a shelf folder.
    """
    parts = rel.parts
    if len(parts) < 3 or parts[1] != SKILLS_FOLDER:
        return None
    if len(parts) == 4 and parts[2] == "general":
        return "general", None
    if len(parts) == 5 and parts[2] == "topics":
        if TOPIC_PATTERN.match(parts[3]):
            return "topic", parts[3]
        # on the shelf's path, but the folder cannot be a topic (`vénmo`, `My-App`)
        raise MalformedUnit(f"{rel}: the topic folder {parts[3]!r} must be {TOPIC_RULE}.")
    raise MalformedUnit(
        f"{rel}: skills live in memory/skills/general/<id>.md or "
        "memory/skills/topics/<topic>/<id>.md."
    )


def hand_skill_defaults(rel: PurePosixPath, shelved: tuple[Shelf, str | None]) -> dict[str, Any]:
    """What a skill file on a shelf may leave out of its front matter: a person writing one by
    hand gives what matters (`trigger:`, perhaps `scope:` or `status:`) and the rest follows
    from where the file is: its id is the file name, its shelf and topic the folder, its recipe
    `hand`. Fields the file gives win (a wrong one is refused as before)."""
    out: dict[str, Any] = {"id": rel.stem, "recipe": "hand", "kind": "skill", "shelf": shelved[0]}
    if shelved[1] is not None:
        out["topic"] = shelved[1]
    return out


# Evidence counters live in the scope's `_counters.yaml` sidecar (evolve.memory._counters),
# never in the unit file: a unit file changes only when what it says or its status changes.
# They stay fields of the model so that old files that still carry them are read.
FILE_EXCLUDED = frozenset(
    {
        "helpful",
        "harmful",
        "alpha",
        "beta",
        "injected",
        "injected_pass",
        "held_out",
        "held_out_pass",
    }
)


def dump_unit(unit: MemoryUnit) -> str:
    """The canonical file text of a unit (its counters belong to the sidecar, not the file)."""
    data = unit.model_dump(by_alias=True, exclude_none=True, exclude=FILE_EXCLUDED)
    text = str(data.pop("text", "")).strip()
    try:
        front = dump_front(data)
    except Unhandled:  # a value the canonical writer leaves to PyYAML (a line break, a float)
        import yaml

        dumper: type = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
        front = yaml.dump(data, Dumper=dumper, sort_keys=False, allow_unicode=True, width=10_000)
    return f"---\n{front}---\n{text}\n"


def parse_unit(path: str, raw: str) -> MemoryUnit:
    """Parse a unit file; `path` is workspace-relative (e.g. ``memory/alex/u-1.md``).

    Raises:
        MalformedUnit: for bad YAML, an unknown field, a wrong type, or a scope that does not
            match the folder.
    """
    rel = PurePosixPath(path)
    # A byte-order mark (an editor's UTF-8 signature) is not text: front matter after it is
    # still front matter, not a hand note holding the YAML.
    raw = raw.removeprefix("\ufeff").replace("\r\n", "\n")
    shelved = skill_shelf_of(rel)
    if not raw.startswith("---\n"):
        if shelved is not None and not raw.strip():
            raise MalformedUnit(f"{path}: the skill file is empty; write its lesson, or delete it.")
        try:
            if shelved is not None:  # a skill a person wrote as plain text: a lesson, no trigger
                return MemoryUnit(
                    id=hand_id(str(rel)),
                    recipe="hand",
                    kind="skill",
                    shelf=shelved[0],
                    topic=shelved[1],
                    text=raw.strip(),
                )
            return MemoryUnit(
                id=hand_id(str(rel)),
                recipe="hand",
                kind="note",
                scope=folder_scope(list(rel.parts)) or GLOBAL_SCOPE,
                text=raw.strip(),
            )
        except InvalidUnit as exc:
            what = exc.msg
            raise MalformedUnit(f"{path}: {what}.") from exc
    end = raw.find("\n---\n", 3)
    if end < 0:
        end_at_eof = raw.rstrip().endswith("\n---")
        if not end_at_eof:
            raise MalformedUnit(f"{path}: the front matter is not closed with a '---' line.")
        end = raw.rstrip().rfind("\n---")
    front_text, body = raw[4:end], raw[end + 5 :]
    try:
        front: Any = read_front(front_text)  # the canonical form, without PyYAML
    except Unhandled:
        front = _load_front(front_text, path)
    if not isinstance(front, dict):
        raise MalformedUnit(f"{path}: the front matter must be a mapping of fields.")
    if "text" in front:
        raise MalformedUnit(f"{path}: 'text' is the file's body, not a front-matter field.")
    if shelved is not None:
        if not body.strip():
            raise MalformedUnit(
                f"{path}: the skill has no lesson (the text below the front matter); write "
                "one, or delete the file."
            )
        front = {**hand_skill_defaults(rel, shelved), **front}
    try:
        unit = MemoryUnit.model_validate({**front, "text": body.strip()})
    except InvalidUnit as exc:
        loc = ".".join(str(p) for p in exc.loc) or "?"
        what = "unknown field" if exc.type == "extra_forbidden" else exc.msg
        raise MalformedUnit(f"{path}: field '{loc}': {what}.") from exc
    if shelved is not None:
        if (unit.shelf, unit.topic) != shelved:
            where = f"topics/{unit.topic}" if unit.topic else str(unit.shelf or "no shelf")
            raise MalformedUnit(f"{path}: the skill's shelf ({where}) does not match its folder.")
    elif unit.shelf is not None:
        raise MalformedUnit(f"{path}: a skill (shelf {unit.shelf}) belongs under memory/skills/.")
    elif len(rel.parts) > 3:
        raise MalformedUnit(f"{path}: units live in memory/ or memory/<user>/, not deeper.")
    folder = folder_scope(list(rel.parts)) if shelved is None else None
    if folder is not None and folder != unit.scope:
        raise MalformedUnit(f"{path}: scope '{unit.scope}' does not match its folder ({folder}).")
    if rel.stem != unit.id:
        raise MalformedUnit(f"{path}: the file name does not match the unit id '{unit.id}'.")
    if not known_recipe(unit.recipe):
        raise MalformedUnit(
            f"{path}: field 'recipe': {unit.recipe!r} names no registered recipe (one of "
            f"{', '.join(sorted(BUILTIN_RECIPES | installed_recipes()))}, or module:Object)."
        )
    return unit


def _load_front(text: str, path: str) -> Any:
    """Front matter that is not in the canonical form, read by PyYAML (libyaml's strict
    loader, `evolve._yaml`)."""
    import yaml

    from evolve._yaml import load as load_yaml

    try:
        return load_yaml(text, str(path), error=MalformedUnit, line_offset=1)
    except yaml.YAMLError as exc:
        raise MalformedUnit(f"{path}: the front matter is not valid YAML.") from exc


def known_recipe(name: str) -> bool:
    """Whether a unit's `recipe` names a recipe evolve can find: one it ships, `hand`, an
    installed package's (entry point group `evolve.recipes`), or an import path."""
    return name in BUILTIN_RECIPES or is_import_path(name) or name in installed_recipes()


@cache
def installed_recipes() -> frozenset[str]:
    """The recipe names installed packages register (read once per process)."""
    from importlib.metadata import entry_points

    return frozenset(point.name for point in entry_points(group="evolve.recipes"))
