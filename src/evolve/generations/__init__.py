"""The evolve loop and its generation records.

The loop is imported on first use, so that the records and the generation journal (which every
writer's recovery reads) do not pull in training, the reflector and the gate's scoring.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from evolve.generations._records import (
    RECORDS_REF,
    ChangeRecord,
    GainRecord,
    GenerationRecord,
    ScoreRecord,
    candidate_ref,
    load_records,
    save_record,
)

if TYPE_CHECKING:
    from evolve.generations._loop import EvolveResult, evolve

__all__ = [
    "RECORDS_REF",
    "ChangeRecord",
    "EvolveResult",
    "GainRecord",
    "GenerationRecord",
    "ScoreRecord",
    "candidate_ref",
    "evolve",
    "load_records",
    "save_record",
]


def __getattr__(name: str) -> Any:
    if name in ("evolve", "EvolveResult"):
        from evolve.generations import _loop

        return getattr(_loop, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
