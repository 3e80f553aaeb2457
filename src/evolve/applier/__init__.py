"""The applier: validates proposed operations and writes them; the store commits them.

Names are imported on first use (PEP 562): a training episode needs the memory applier, not
the caps' room-making, the prompt and harness changes a generation plans, nor PyYAML.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evolve._lazy import lazy_exports

if TYPE_CHECKING:
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

__getattr__, __dir__ = lazy_exports(
    __name__,
    globals(),
    {
        "evolve.applier._caps": ("CapFit", "Overflow", "fit_files", "make_room", "overflows"),
        "evolve.applier._files": ("EVOLVABLE", "check_files", "write_files"),
        "evolve.applier._journal": ("NoJournal", "WriteJournal"),
        "evolve.applier._memory": ("ApplyResult", "MemoryApplier", "tombstone_for"),
        "evolve.applier._prompts": (
            "PromptChanges",
            "guidance_of",
            "plan_prompt_changes",
            "with_guidance",
        ),
        "evolve.ops": ("TEXT_OPS", "Op", "OpName", "Refusal"),
    },
)

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
