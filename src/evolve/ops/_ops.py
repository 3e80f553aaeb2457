"""Typed operations: what a proposer returns and the applier writes.

This module imports nothing of the writer, so a proposer (recipe, reflector, review) that
builds operations cannot reach the applier or the store by construction.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationInfo, field_validator

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


class Op(BaseModel):
    """One change to one memory unit.

    `unit` is the unit's full new state (for `evict`, the state it had), so a record of
    operations says exactly what was written.

    An `evict` that makes room for a new unit names it in `room_for` (the id the batch's add
    or reactivate writes): the applier applies the two together or neither, so memory never
    shrinks for a unit that was then refused. An evict without it (memory already over a
    cap, an archive bound) stands alone and says why in `reason`.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    op: OpName
    unit: MemoryUnit
    reason: str = ""
    room_for: str | None = None

    @property
    def id(self) -> str:
        return self.unit.id


class Refusal(BaseModel):
    """A proposal that was not written, and why (logged in the episode's commit)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    op: str
    what: str
    reason: str

    @field_validator("op", "what", "reason")
    @classmethod
    def _quotable(cls, v: str, info: ValidationInfo) -> str:
        # Refusals quote model text into logs and commit bodies: secrets never; control
        # characters escaped (`what` is shown with repr() by line(), which escapes them).
        v = redact_text(v)
        return v if info.field_name == "what" else printable(v)

    def line(self) -> str:
        return f"refused {self.op} {self.what!r}: {self.reason}"
