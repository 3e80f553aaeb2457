"""The applier: validates proposed operations and writes them; the store commits them."""

from evolve.applier._journal import recover
from evolve.applier._memory import ApplyResult, MemoryApplier, tombstone_for
from evolve.applier._ops import TEXT_OPS, Op, OpName, Refusal

__all__ = [
    "TEXT_OPS",
    "ApplyResult",
    "MemoryApplier",
    "Op",
    "OpName",
    "Refusal",
    "recover",
    "tombstone_for",
]
