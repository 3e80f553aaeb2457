"""The model seam: one narrow protocol and backends selected by name."""

from evolve.llm._mock import MockLLM
from evolve.llm._registry import KNOWN, make_llm
from evolve.llm._types import (
    LLM,
    Completion,
    JsonSchema,
    Message,
    Usage,
    estimate_tokens,
)

__all__ = [
    "KNOWN",
    "LLM",
    "Completion",
    "JsonSchema",
    "Message",
    "MockLLM",
    "Usage",
    "estimate_tokens",
    "make_llm",
]
