"""Surface similarity and polarity, judged separately.

A character-trigram vector cannot see a "not" or a changed value: "Text messages should end
with my first name." and the same sentence with "not" score 0.93. So similarity says *which*
units are about the same thing, and :func:`conflicts` says whether two similar statements
disagree (one negates the other, or they state different values).
"""

from __future__ import annotations

import hashlib
import math
from functools import lru_cache
from typing import Protocol

from evolve._lazy import pattern

_NEGATIONS = frozenset(
    {"not", "never", "no", "don't", "dont", "doesn't", "stop", "avoid", "without"}
)
_STOP = frozenset(
    [
        "a",
        "an",
        "the",
        "my",
        "i",
        "me",
        "to",
        "of",
        "and",
        "or",
        "in",
        "on",
        "at",
        "for",
        "with",
        "every",
        "each",
        "all",
        "any",
        "be",
        "is",
        "are",
        "should",
        "must",
        "always",
        "please",
        "when",
        "you",
        "your",
        "their",
        "them",
        "that",
        "this",
        "it",
        "as",
        "by",
        "from",
    ]
)
_WORD = pattern(r"[a-z0-9$@.\[\]'-]+")
_QUOTED = pattern(r"['\"“‘]([^'\"”’]+)['\"”’]")


class Similarity(Protocol):
    """Surface similarity of two statements in [0, 1]."""

    def __call__(self, a: str, b: str) -> float: ...


@lru_cache(maxsize=8192)
def _trigrams(text: str, buckets: int = 1000) -> frozenset[int]:
    padded = f"  {text.lower().strip()}  "
    out = set()
    for i in range(len(padded) - 2):
        digest = hashlib.md5(padded[i : i + 3].encode("utf-8"), usedforsecurity=False).digest()
        out.add(int.from_bytes(digest[:4], "big") % buckets)
    return frozenset(out)


def trigram_cosine(a: str, b: str) -> float:
    """Cosine of binary character-trigram vectors hashed into 1,000 buckets (the seed's
    default)."""
    ta, tb = _trigrams(a), _trigrams(b)
    if not ta or not tb:
        return 0.0
    return len(ta & tb) / math.sqrt(len(ta) * len(tb))


def _words(text: str) -> list[str]:
    return [w.strip(".'-") for w in _WORD.findall(text.lower()) if w.strip(".'-")]


def negated(text: str) -> bool:
    words = set(_words(text))
    return bool(words & _NEGATIONS) or "n't" in text.lower()


def content_words(text: str) -> frozenset[str]:
    """Words that carry the statement's value: not stop words, not negations."""
    quoted = {q.strip().lower() for q in _QUOTED.findall(text)}
    words = {w for w in _words(text) if w not in _STOP and w not in _NEGATIONS}
    return frozenset(words | quoted)


def conflicts(a: str, b: str) -> bool:
    """Whether two (similar) statements disagree: opposite polarity or different values."""
    if negated(a) != negated(b):
        return True
    return content_words(a) != content_words(b)


def normalize(text: str) -> str:
    """The form in which two texts count as the same statement (tombstones, duplicates)."""
    return " ".join(_words(text))
