"""Topics: a module's cards grouped into distinct mechanisms (ScholarEvolve's topic modelling).

Offline, each card's words (title, mechanism, summary) become a TF-IDF vector (scikit-learn's
`TfidfVectorizer`, words and word pairs, English stop words out), and k-means groups them:
every k from 2 to min(n - 1, 8) is tried with the given seed and the k of the best cosine
silhouette kept (the smaller on a tie); a module of one or two cards gives each its own topic.
A topic's label is its most distinctive terms (the cluster's mean weight less the module's).

With a model, the model proposes each label and the code checks it: a label must be a phrase
of two to six words found in the cluster's cards' own text, unlike every other label;
anything else (or a failed request) keeps the term label.

scikit-learn is imported here, inside the functions, and nowhere on the train, run or log
paths.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from evolve.research._card import MODULES, Card

if TYPE_CHECKING:
    from evolve.llm import LLM

MAX_K = 8
# Words every card uses, which say nothing about its mechanism.
_DOMAIN_STOP = [
    "agent",
    "agents",
    "language",
    "model",
    "models",
    "llm",
    "llms",
    "large",
    "task",
    "tasks",
    "method",
    "methods",
    "approach",
    "paper",
    "propose",
    "proposes",
    "proposed",
    "using",
    "use",
    "uses",
    "used",
    "based",
    "work",
    "works",
]
_TOKEN = r"(?u)\b[a-zA-Z][a-zA-Z-]{2,}\b"


@dataclass(frozen=True)
class Topic:
    """A group of a module's cards that share a mechanism, and its label."""

    label: str
    cards: tuple[Card, ...]
    terms: tuple[str, ...] = ()  # the most distinctive terms, best first
    labelled_by: Literal["terms", "model"] = "terms"


def module_cards(cards: Sequence[Card], module: str) -> list[Card]:
    """The cards of `module`, sorted by id.

    Raises:
        ValueError: `module` is not one of the five.
    """
    if module not in MODULES:
        raise ValueError(f"{module!r} is not a module; the modules are {', '.join(MODULES)}.")
    return sorted((c for c in cards if c.module == module), key=lambda c: c.id)


def vectorizer() -> Any:
    """The TF-IDF vectorizer topics and relevance share."""
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS, TfidfVectorizer

    return TfidfVectorizer(
        stop_words=sorted(ENGLISH_STOP_WORDS | set(_DOMAIN_STOP)),
        ngram_range=(1, 2),
        sublinear_tf=True,
        token_pattern=_TOKEN,
        lowercase=True,
    )


def cluster(matrix: Any, seed: int) -> list[int]:
    """A cluster number for each row of `matrix` (n rows, L2-normalised TF-IDF)."""
    n = matrix.shape[0]
    if n <= 2:
        return list(range(n))
    import warnings

    import numpy as np
    from sklearn.cluster import KMeans
    from sklearn.metrics import silhouette_score
    from threadpoolctl import threadpool_limits

    dense = matrix.toarray()  # a pool is small: dense rows cluster faster than sparse ones
    # Cards whose words are the same are one point: no more clusters than distinct points.
    distinct = int(np.unique(dense, axis=0).shape[0])
    best: tuple[float, list[int]] | None = None
    # One thread: a few dozen points gain nothing from more, and on a loaded machine
    # OpenMP's waiting threads cost several times the work itself.
    with threadpool_limits(1), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for k in range(2, min(n - 1, distinct, MAX_K) + 1):
            found = KMeans(n_clusters=k, random_state=seed, n_init=10).fit_predict(dense)
            if len(set(found)) < 2:
                continue
            score = float(silhouette_score(dense, found, metric="cosine"))
            if best is None or score > best[0] + 1e-9:
                best = (score, [int(x) for x in found])
    return best[1] if best is not None else [0] * n


def topics(
    cards: Sequence[Card], module: str, *, seed: int = 0, llm: LLM | None = None
) -> list[Topic]:
    """`module`'s cards grouped into topics, largest first (then by their first card's id).

    Deterministic for a given pool and `seed`. With `llm`, each label is the model's when the
    code accepts it (see the module's docstring), else the term label.

    Raises:
        ValueError: `module` is not one of the five.
    """
    mine = module_cards(cards, module)
    if not mine:
        return []
    made = list(_term_topics(tuple(mine), module, seed))
    if llm is not None:
        made = _model_labels(made, module, llm, seed)
    return made


_CACHE: dict[tuple[tuple[Card, ...], str, int], tuple[Topic, ...]] = {}
_CACHE_SIZE = 64


def _term_topics(mine: tuple[Card, ...], module: str, seed: int) -> tuple[Topic, ...]:
    """The topics of `mine` (one module's cards) with term labels; remembered per process,
    since a search picks from the same pool many times."""
    key = (mine, module, seed)
    if key in _CACHE:
        return _CACHE[key]
    vec = vectorizer()
    try:
        matrix = vec.fit_transform([c.text for c in mine])
    except ValueError:  # no word left after the stop words: one topic, labelled by module
        return (Topic(module, mine),)
    groups: dict[int, list[int]] = {}
    for row, number in enumerate(cluster(matrix, seed)):
        groups.setdefault(number, []).append(row)
    ordered = sorted(groups.values(), key=lambda rows: (-len(rows), mine[rows[0]].id))
    terms = vec.get_feature_names_out()
    overall = matrix.mean(axis=0).A1
    made: list[Topic] = []
    used: set[str] = set()
    for rows in ordered:
        weights = matrix[rows].mean(axis=0).A1 - overall
        present = matrix[rows].sum(axis=0).A1 > 0
        ranked = [str(terms[i]) for i in weights.argsort(kind="stable")[::-1] if present[i]]
        top = _distinct(ranked, 4)
        label = _term_label(top, used)
        used.add(label)
        made.append(Topic(label, tuple(mine[r] for r in rows), tuple(top)))
    if len(_CACHE) >= _CACHE_SIZE:
        _CACHE.pop(next(iter(_CACHE)))
    _CACHE[key] = tuple(made)
    return _CACHE[key]


def _stem(word: str) -> str:
    """A crude stem, enough to tell `notes` from `note` and `memories` from `memory`."""
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    for end in ("ing", "ed", "s"):
        if word.endswith(end) and not word.endswith("ss") and len(word) - len(end) >= 3:
            return word[: -len(end)]
    return word


def _distinct(ranked: list[str], n: int) -> list[str]:
    """The first `n` terms of `ranked`, leaving out a term that repeats one kept (a word of
    it, or the same word in another form)."""
    kept: list[str] = []
    for term in ranked:
        words = {_stem(w) for w in term.split()}
        if any(words & {_stem(w) for w in k.split()} for k in kept):
            continue
        kept.append(term)
        if len(kept) == n:
            break
    return kept


def _term_label(top: list[str], used: set[str]) -> str:
    for size in (3, 4):
        label = ", ".join(top[:size])
        if label and label not in used:
            return label
    label = ", ".join(top) or "other"
    k = 2
    while f"{label} ({k})" in used:
        k += 1
    return label if label not in used else f"{label} ({k})"


_WORDS = re.compile(r"[a-z0-9]+(?:[-'][a-z0-9]+)*")


def _normal(text: str) -> str:
    return " ".join(_WORDS.findall(text.lower()))


def check_label(label: str, topic: Topic, others: Sequence[str]) -> str | None:
    """`label` (normalised: lower case, words only) when it is a phrase of two to six words
    of `topic`'s cards' own text and differs from every label in `others`; else None."""
    if not isinstance(label, str) or len(label) > 80:
        return None
    said = _normal(label.strip().strip("\"'`.").strip())
    if not 2 <= len(said.split()) <= 6:
        return None
    source = " | ".join(_normal(c.text) for c in topic.cards)
    if f" {said} " not in f" {source} ":
        return None
    if said in {_normal(o) for o in others}:
        return None
    return said


def _model_labels(made: list[Topic], module: str, llm: LLM, seed: int) -> list[Topic]:
    from evolve.errors import EvolveError
    from evolve.llm import Message

    out: list[Topic] = []
    for i, topic in enumerate(made):
        papers = "\n".join(f"- {c.title}: {c.mechanism}. {c.summary}" for c in topic.cards)
        prompt = (
            f"These research papers propose mechanisms for an agent's {module} module:\n"
            f"{papers}\n\nName the mechanism they share with a phrase of two to six words "
            "copied exactly from the text above. Reply with the phrase only."
        )
        others = [t.label for t in out] + [t.label for t in made[i + 1 :]]
        try:
            reply = llm.complete([Message("user", prompt)], seed=seed, max_tokens=32)
            label = check_label(reply.text.strip().splitlines()[0] if reply.text.strip() else "",
                                topic, others)  # fmt: skip
        except (EvolveError, OSError, ValueError):
            label = None
        if label is None:
            out.append(topic)
        else:
            out.append(Topic(label, topic.cards, topic.terms, "model"))
    return out
