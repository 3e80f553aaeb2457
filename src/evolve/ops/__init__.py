"""Typed operations and refusals: the vocabulary between proposers and the applier, and how a
proposer reads a model's reply."""

from evolve.ops._ops import TEXT_OPS, Op, OpName, Refusal
from evolve.ops._reply import BadReply, Refusals, items, parse_json_reply

__all__ = [
    "TEXT_OPS",
    "BadReply",
    "Op",
    "OpName",
    "Refusal",
    "Refusals",
    "items",
    "parse_json_reply",
]
