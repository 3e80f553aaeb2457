"""The model seam: one narrow protocol and backends selected by name.

`make_role_llm`, `with_models` and `ROLES` (which bring in httpx and the HTTP backends), the
request cache, the time budget and the scripted `MockLLM` are imported on first use, so a
proposer, a reading command or a training run on the sim models that needs only the protocol
types does not pay for them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evolve._lazy import lazy_exports
from evolve.llm._cost import PricedLLM, Rate
from evolve.llm._errors import (
    BudgetSpent,
    ContextTooSmall,
    ReplayMiss,
    ReplyCut,
    ReplyMalformed,
    ReplyRefused,
    RequestFailed,
    ShapeRefused,
    TurnPaused,
)
from evolve.llm._meter import (
    Meter,
    MeteredLLM,
    RoleUsage,
    metering,
    usage_json,
    usage_line,
)
from evolve.llm._registry import ModelFactory, make_llm, models
from evolve.llm._types import (
    LLM,
    Completion,
    JsonSchema,
    Message,
    Usage,
    estimate_tokens,
)

if TYPE_CHECKING:
    from evolve.llm._budget import Budget
    from evolve.llm._cache import (
        CACHE_MODES,
        CachedLLM,
        RequestCache,
        canonical_request,
        request_key,
    )
    from evolve.llm._mock import MockLLM
    from evolve.llm._roles import ROLES, make_role_llm, with_models

__getattr__, __dir__ = lazy_exports(
    __name__,
    globals(),
    {
        "evolve.llm._roles": ("ROLES", "make_role_llm", "with_models"),
        "evolve.llm._budget": ("Budget",),
        "evolve.llm._cache": (
            "CACHE_MODES",
            "CachedLLM",
            "RequestCache",
            "canonical_request",
            "request_key",
        ),
        "evolve.llm._mock": ("MockLLM",),
    },
)


__all__ = [
    "CACHE_MODES",
    "ROLES",
    "Budget",
    "BudgetSpent",
    "ContextTooSmall",
    "CachedLLM",
    "PricedLLM",
    "Rate",
    "ReplayMiss",
    "ReplyCut",
    "ReplyMalformed",
    "ReplyRefused",
    "RequestFailed",
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
    "Meter",
    "MeteredLLM",
    "MockLLM",
    "RoleUsage",
    "metering",
    "usage_json",
    "usage_line",
    "ModelFactory",
    "Usage",
    "estimate_tokens",
    "make_llm",
    "models",
]
