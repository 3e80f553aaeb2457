"""Generation records (re-exported: the format lives in `evolve.txn._records`, because the
transaction's recovery writes the record of a generation a killed process left)."""

from evolve.txn._records import (
    CANDIDATES,
    GENERATION_SCHEMA,
    RECORDS_REF,
    ChangeRecord,
    GainRecord,
    GenerationRecord,
    RoleUsageRecord,
    ScoreRecord,
    candidate_ref,
    load_records,
    save_record,
    score_record,
)

__all__ = [
    "GENERATION_SCHEMA",
    "CANDIDATES",
    "RECORDS_REF",
    "ChangeRecord",
    "GainRecord",
    "GenerationRecord",
    "RoleUsageRecord",
    "ScoreRecord",
    "load_records",
    "save_record",
    "candidate_ref",
    "score_record",
]
