"""The model seam: one narrow protocol and backends selected by name."""

from evolve.llm._budget import Budget
from evolve.llm._cache import CACHE_MODES, CachedLLM, RequestCache, canonical_request, request_key
from evolve.llm._cost import PricedLLM, Rate
from evolve.llm._errors import (
    BudgetSpent,
    ReplayMiss,
    ReplyCut,
    ReplyRefused,
    ShapeRefused,
    TurnPaused,
)
from evolve.llm._mock import MockLLM
from evolve.llm._registry import KNOWN, make_llm
from evolve.llm._roles import ROLES, make_role_llm, with_models
from evolve.llm._types import (
    LLM,
    Completion,
    JsonSchema,
    Message,
    Usage,
    estimate_tokens,
)

__all__ = [
    "CACHE_MODES",
    "KNOWN",
    "ROLES",
    "Budget",
    "BudgetSpent",
    "CachedLLM",
    "PricedLLM",
    "Rate",
    "ReplayMiss",
    "ReplyCut",
    "ReplyRefused",
    "RequestCache",
    "ShapeRefused",
    "TurnPaused",
    "canonical_request",
    "make_role_llm",
    "request_key",
    "with_models",
    "LLM",
    "Completion",
    "JsonSchema",
    "Message",
    "MockLLM",
    "Usage",
    "estimate_tokens",
    "make_llm",
]
