"""The evolve loop and its generation records."""

from evolve.generations._loop import EvolveResult, evolve
from evolve.generations._records import (
    RECORDS_REF,
    ChangeRecord,
    GainRecord,
    GenerationRecord,
    ScoreRecord,
    load_records,
    save_record,
)

__all__ = [
    "RECORDS_REF",
    "ChangeRecord",
    "EvolveResult",
    "GainRecord",
    "GenerationRecord",
    "ScoreRecord",
    "evolve",
    "load_records",
    "save_record",
]
