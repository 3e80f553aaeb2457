"""Typed operations: what a proposer returns and the applier writes.

This module imports nothing of the writer, so a proposer (recipe, reflector, review) that
builds operations cannot reach the applier or the store by construction.
"""

from __future__ import annotations

from copy import copy
from typing import TYPE_CHECKING, Any, Literal, get_args

import msgspec
from msgspec.structs import force_setattr

from evolve._text import printable
from evolve.memory import MemoryUnit
from evolve.redact import redact_text

OpName = Literal[
    "add",
    "modify",
    "revoke",
    "reactivate",
    "evict",
    "rewrite",
    "tag",
    "tombstone",
    "approve",
    "restore",
    "count",  # moves only evidence counters: written to the scope's _counters.yaml sidecar
    # an active unit proposed again: it counts as learned now (a new `valid_from`, so it renders
    # as the newest), its text and status unchanged
    "reaffirm",
]
# Ops that put (possibly new) text in front of the agent: tombstones are checked for these.
TEXT_OPS: frozenset[str] = frozenset({"add", "modify", "reactivate", "rewrite"})


_OP_NAMES = frozenset(get_args(OpName))


class _Model(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The part of pydantic's model API callers use: `model_copy` (unchecked, as pydantic's)
    and `model_dump`."""

    def model_copy(self, *, update: dict[str, Any] | None = None) -> Any:
        out = copy(self)
        for name, value in (update or {}).items():
            force_setattr(out, name, value)
        return out

    def model_dump(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__struct_fields__}


class Op(_Model, frozen=True, kw_only=True):
    """One change to one memory unit.

    `unit` is the unit's full new state (for `evict`, the state it had), so a record of
    operations says exactly what was written.

    An `evict` that makes room for a new unit names it in `room_for` (the id the batch's add
    or reactivate writes): the applier applies the two together or neither, so memory never
    shrinks for a unit that was then refused. An evict without it (memory already over a
    cap, an archive bound) stands alone and says why in `reason`.
    """

    op: OpName
    unit: MemoryUnit
    reason: str = ""
    room_for: str | None = None

    if TYPE_CHECKING:  # `op` is checked when built, as pydantic did: any string is given

        def __init__(
            self, *, op: str, unit: MemoryUnit, reason: str = "", room_for: str | None = None
        ) -> None: ...

    def __post_init__(self) -> None:
        if self.op not in _OP_NAMES:
            raise ValueError(f"op: {self.op!r} is not one of {', '.join(sorted(_OP_NAMES))}")
        if not isinstance(self.unit, MemoryUnit):
            raise ValueError("unit: not a MemoryUnit")
        if not isinstance(self.reason, str) or not isinstance(self.room_for, str | None):
            raise ValueError("reason and room_for are strings")

    @property
    def id(self) -> str:
        return self.unit.id


class Refusal(_Model, frozen=True, kw_only=True):
    """A proposal that was not written, and why (logged in the episode's commit)."""

    op: str
    what: str
    reason: str

    def __post_init__(self) -> None:
        # Refusals quote model text into logs and commit bodies: secrets never; control
        # characters escaped (`what` is shown with repr() by line(), which escapes them).
        for name in ("op", "what", "reason"):
            value = getattr(self, name)
            if not isinstance(value, str):
                raise ValueError(f"{name}: Input should be a valid string")
            kept = redact_text(value)
            kept = kept if name == "what" else printable(kept)
            if kept != value:
                force_setattr(self, name, kept)

    def line(self) -> str:
        return f"refused {self.op} {self.what!r}: {self.reason}"
