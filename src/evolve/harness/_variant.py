"""A built-in variant: its module, its name, the mechanism it implements, its parameters."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from evolve._lazy import pattern
from evolve.llm import estimate_tokens


@dataclass(frozen=True)
class Param:
    """An integer parameter of a variant, with its default and its allowed range."""

    default: int
    low: int
    high: int


@dataclass(frozen=True)
class Variant:
    """One built-in variant of a module.

    `mechanism` names the published mechanism it implements (docs/harness.md gives each
    with its source); `make` builds the module from the parameters (each checked against
    `params` first).
    """

    module: str
    name: str
    mechanism: str
    make: Callable[..., object]
    params: Mapping[str, Param] = field(default_factory=dict)


# --- lexical similarity, shared by the relevance variants ------------------------------

_WORD = pattern(r"[a-z]+")
_STOP = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "do",
        "for",
        "from",
        "i",
        "in",
        "is",
        "it",
        "its",
        "me",
        "my",
        "of",
        "on",
        "or",
        "so",
        "that",
        "the",
        "their",
        "them",
        "they",
        "this",
        "to",
        "with",
        "you",
        "your",
        "every",
        "each",
        "all",
        "any",
    ]
)


def stems(text: str) -> frozenset[str]:
    """The words of `text` as crude stems: lower case, hyphens dropped, first 3 letters,
    common words left out ("payments" and "pay" meet; "E-mails" and "email" too)."""
    words = _WORD.findall(text.lower().replace("-", ""))
    return frozenset(w[:3] for w in words if w not in _STOP and len(w) > 1)


def similarity(line: str, task: frozenset[str]) -> int:
    """How many of the task's stems `line` shares."""
    return len(stems(line) & task)


def tokens(text: str) -> int:
    """The token count every budget here uses (evolve.llm.estimate_tokens: 4 chars a token)."""
    return estimate_tokens(text)
