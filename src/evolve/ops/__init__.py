"""Typed operations and refusals: the vocabulary between proposers and the applier."""

from evolve.ops._ops import TEXT_OPS, Op, OpName, Refusal

__all__ = ["TEXT_OPS", "Op", "OpName", "Refusal"]
