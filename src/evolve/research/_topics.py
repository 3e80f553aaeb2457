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
    from sklearn.cluster import KMeans
    from sklearn.metrics import silhouette_score

    best: tuple[float, list[int]] | None = None
    for k in range(2, min(n - 1, MAX_K) + 1):
        found = KMeans(n_clusters=k, random_state=seed, n_init=10).fit_predict(matrix)
        if len(set(found)) < 2:
            continue
        score = float(silhouette_score(matrix, found, metric="cosine"))
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
    vec = vectorizer()
    try:
        matrix = vec.fit_transform([c.text for c in mine])
    except ValueError:  # no word left after the stop words: one topic, labelled by module
        return [Topic(module, tuple(mine))]
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
        ranked = [str(terms[i]) for i in weights.argsort()[::-1] if matrix[rows, i].sum() > 0]
        top = _distinct(ranked, 4)
        label = _term_label(top, used)
        used.add(label)
        made.append(Topic(label, tuple(mine[r] for r in rows), tuple(top)))
    if llm is not None:
        made = _model_labels(made, module, llm, seed)
    return made


def _distinct(ranked: list[str], n: int) -> list[str]:
    """The first `n` terms of `ranked`, leaving out a term that repeats one kept."""
    kept: list[str] = []
    for term in ranked:
        words = set(term.split())
        if any(words <= set(k.split()) or set(k.split()) <= words for k in kept):
            continue
        kept.append(term)
        if len(kept) == n:
            break
    return kept


def _term_label(top: list[str], used: set[str]) -> str:
    for size in (2, 3, 4):
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
