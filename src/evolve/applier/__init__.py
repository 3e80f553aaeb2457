"""The applier: validates proposed operations and writes them; the store commits them."""

from evolve.applier._caps import CapFit, Overflow, fit_files, make_room, overflows
from evolve.applier._files import EVOLVABLE, check_files, write_files
from evolve.applier._journal import NoJournal, WriteJournal
from evolve.applier._memory import ApplyResult, MemoryApplier, tombstone_for
from evolve.applier._prompts import (
    PromptChanges,
    guidance_of,
    plan_prompt_changes,
    with_guidance,
)
from evolve.ops import TEXT_OPS, Op, OpName, Refusal

__all__ = [
    "CapFit",
    "Overflow",
    "fit_files",
    "make_room",
    "overflows",
    "PromptChanges",
    "guidance_of",
    "plan_prompt_changes",
    "with_guidance",
    "EVOLVABLE",
    "check_files",
    "NoJournal",
    "WriteJournal",
    "write_files",
    "TEXT_OPS",
    "ApplyResult",
    "MemoryApplier",
    "Op",
    "OpName",
    "Refusal",
    "tombstone_for",
]
