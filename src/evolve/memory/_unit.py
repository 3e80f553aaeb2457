"""Memory units: one Markdown file each, with YAML front matter.

A unit file is ``---\\n<front matter>---\\n<body>\\n``. The serialization is canonical (fixed
key order, no empty fields, one trailing newline), so a unit that did not change produces no
diff. A malformed file is reported with its path; it is never dropped or rewritten.

A Markdown file without front matter is a hand-written note: it is rendered for every scope
as it is, which is how a person adds a fact without learning the format.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import PurePosixPath
from typing import Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from evolve._format._units import BUILTIN_RECIPES, folder_scope, hand_id, skill_folder, valid_id
from evolve._format._units import GLOBAL_SCOPE as GLOBAL_SCOPE  # re-exported
from evolve._format._units import SKILLS_FOLDER as SKILLS_FOLDER  # re-exported
from evolve._format._units import valid_scope as valid_scope  # re-exported
from evolve._registry import is_import_path
from evolve._text import describe_char, unsafe_char
from evolve._yaml import load as load_yaml
from evolve.errors import EvolveError

UNIT_SCHEMA = 1
# libyaml when available (its loader is evolve._yaml's strict one): units are read every episode.
_DUMPER: type = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
# `retired`: a skill the scoreboard found harmful (not rendered, not injected, like revoked).
Status = Literal["active", "revoked", "pending", "tombstoned", "retired"]
TOPIC_PATTERN = re.compile(r"^[a-z][a-z0-9_]{0,31}$")
TOPIC_RULE = "1-32 lower-case letters, digits or '_', starting with a letter"  # TOPIC_PATTERN
Shelf = Literal["general", "topic"]


class MalformedUnit(EvolveError):
    """A unit file that cannot be read; the message names the path."""


class MemoryUnit(BaseModel):
    """One unit of memory. Recipe-specific fields are optional and typed."""

    # strict: a hand edit such as `helpful: true` is reported, not coerced and rewritten.
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, populate_by_name=True)

    id: str
    schema_version: int = Field(default=UNIT_SCHEMA, alias="schema")
    recipe: str
    kind: str
    status: Status = "active"
    scope: str = GLOBAL_SCOPE
    created_episode: int | None = None
    updated_episode: int | None = None
    valid_from: str | None = None
    valid_to: str | None = None
    # ACE
    helpful: int | None = Field(default=None, ge=0)
    harmful: int | None = Field(default=None, ge=0)
    # skills scoreboard (evolve.skills._scoreboard): training episodes with the skill injected
    # or held out, and how many of each passed
    injected: int | None = Field(default=None, ge=0)
    injected_pass: int | None = Field(default=None, ge=0)
    held_out: int | None = Field(default=None, ge=0)
    held_out_pass: int | None = Field(default=None, ge=0)
    # TEPA
    key: str | None = None
    revoked_at: int | None = None
    revoked_by: str | None = None
    # TRACE
    api: str | None = None
    argument: str | None = None
    predicate: str | None = None
    value: str | None = None
    # Beta posterior (topl)
    alpha: float | None = Field(default=None, gt=0)
    beta: float | None = Field(default=None, gt=0)
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

    @field_validator("*")
    @classmethod
    def _printable(cls, v: Any) -> Any:
        # The last line of defence: no control character (but newline and tab) or lone
        # surrogate reaches a unit file, a commit or git's log framing (see evolve._text).
        bad = unsafe_char(v) if isinstance(v, str) else None
        if bad is not None:
            raise ValueError(f"contains the character {describe_char(bad)}")
        return v

    @field_validator("id")
    @classmethod
    def _id(cls, v: str) -> str:
        if not valid_id(v):
            raise ValueError("must be 1-64 letters, digits, '.', '_' or '-'")
        return v

    @field_validator("scope")
    @classmethod
    def _scope(cls, v: str) -> str:
        if not valid_scope(v):
            raise ValueError("must be 'global' or 'user:<name>'")
        return v

    @field_validator("topic")
    @classmethod
    def _topic(cls, v: str | None) -> str | None:
        if v is not None and not TOPIC_PATTERN.match(v):
            raise ValueError(f"must be {TOPIC_RULE}")
        return v

    @model_validator(mode="after")
    def _shelved(self) -> MemoryUnit:
        if self.shelf == "topic" and self.topic is None:
            raise ValueError("a topic skill needs a topic")
        if self.shelf != "topic" and self.topic is not None:
            raise ValueError("only a topic skill has a topic")
        return self

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
        return self.model_copy(update=changes)


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


_ORDER = [name for name in MemoryUnit.model_fields if name != "text"]
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
    data = unit.model_dump(by_alias=True, exclude_none=True, exclude=set(FILE_EXCLUDED))
    text = str(data.pop("text", "")).strip()
    ordered = {}
    for name in _ORDER:
        alias = "schema" if name == "schema_version" else name
        if alias in data:
            ordered[alias] = data[alias]
    front = yaml.dump(ordered, Dumper=_DUMPER, sort_keys=False, allow_unicode=True, width=10_000)
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
        except ValidationError as exc:
            what = exc.errors()[0].get("msg", "invalid")
            raise MalformedUnit(f"{path}: {what}.") from exc
    end = raw.find("\n---\n", 3)
    if end < 0:
        end_at_eof = raw.rstrip().endswith("\n---")
        if not end_at_eof:
            raise MalformedUnit(f"{path}: the front matter is not closed with a '---' line.")
        end = raw.rstrip().rfind("\n---")
    front_text, body = raw[4:end], raw[end + 5 :]
    try:
        front = load_yaml(front_text, str(path), error=MalformedUnit, line_offset=1)
    except yaml.YAMLError as exc:
        raise MalformedUnit(f"{path}: the front matter is not valid YAML.") from exc
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
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err.get("loc", ())) or "?"
        what = (
            "unknown field" if err.get("type") == "extra_forbidden" else err.get("msg", "invalid")
        )
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


def known_recipe(name: str) -> bool:
    """Whether a unit's `recipe` names a recipe evolve can find: one it ships, `hand`, an
    installed package's (entry point group `evolve.recipes`), or an import path."""
    return name in BUILTIN_RECIPES or is_import_path(name) or name in installed_recipes()


@cache
def installed_recipes() -> frozenset[str]:
    """The recipe names installed packages register (read once per process)."""
    from importlib.metadata import entry_points

    return frozenset(point.name for point in entry_points(group="evolve.recipes"))
