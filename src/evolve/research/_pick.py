"""Picking the cards a search tries for a module: round-robin across topics, or by relevance.

`"topics"` (ScholarEvolve §3.2.3): the module's topics in turn, one card from each before a
second from any, so the cards tried spread over distinct mechanisms. Within a topic the card
closest to the brief comes first (without a brief, the card closest to its topic's centre);
topics are visited in the order of their best card's closeness to the brief (without one,
largest first). `"relevance"` (the ablation's baseline): the module's cards ranked by TF-IDF
cosine similarity to the brief's text alone (to the module's name without one), which tends
to pick several cards of one mechanism.

Ties break by card id, so a pick is deterministic for a pool, a brief and a seed.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any, Literal

from evolve.research._card import Card
from evolve.research._topics import module_cards, topics, vectorizer

if TYPE_CHECKING:
    from evolve.research._brief import Brief

STRATEGIES = ("topics", "relevance")


def pick(
    cards: Sequence[Card],
    module: str,
    n: int,
    *,
    strategy: Literal["topics", "relevance"],
    brief: Brief | None = None,
    seed: int = 0,
    exclude: Collection[str] = (),
) -> list[Card]:
    """Up to `n` of `module`'s cards, leaving out the ids in `exclude` (cards tried before).

    Raises:
        ValueError: an unknown module or strategy, or a negative `n`.
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy {strategy!r}: use one of {', '.join(STRATEGIES)}.")
    if n < 0:
        raise ValueError("n must be zero or more.")
    mine = module_cards(cards, module)
    if n == 0 or not mine:
        return []
    query = brief.text if brief is not None and brief.text.strip() else module
    closeness = _closeness(mine, query)
    left = [c for c in mine if c.id not in set(exclude)]
    if strategy == "relevance":
        return sorted(left, key=lambda c: (-closeness[c.id], c.id))[:n]
    # Topics over the whole module (what was tried included), so a module's topics stay the
    # same from one pick to the next; only the cards left are drawn.
    groups = topics(mine, module, seed=seed)
    centre = _centrality(mine, groups)
    use_brief = brief is not None and brief.text.strip() != ""
    queues = []
    for group in groups:
        rest = [c for c in group.cards if c.id in {x.id for x in left}]
        if use_brief:
            rest.sort(key=lambda c: (-closeness[c.id], c.id))
        else:
            rest.sort(key=lambda c: (-centre[c.id], c.id))
        if rest:
            queues.append((-closeness[rest[0].id] if use_brief else 0.0, rest))
    if use_brief:  # the topic whose best card is closest first; stable, so size order breaks ties
        queues.sort(key=lambda q: q[0])
    chosen: list[Card] = []
    depth = 0
    while len(chosen) < n and any(depth < len(q) for _, q in queues):
        for _, queue in queues:
            if depth < len(queue) and len(chosen) < n:
                chosen.append(queue[depth])
        depth += 1
    return chosen


def _closeness(cards: Sequence[Card], query: str) -> dict[str, float]:
    """Cosine similarity of each card's TF-IDF vector to `query`'s (fitted on the cards)."""
    vec = vectorizer()
    try:
        matrix = vec.fit_transform([c.text for c in cards])
    except ValueError:
        return {c.id: 0.0 for c in cards}
    scores = (matrix @ vec.transform([query]).T).toarray().ravel()
    return {c.id: round(float(s), 12) for c, s in zip(cards, scores, strict=True)}


def _centrality(cards: Sequence[Card], groups: Sequence[Any]) -> dict[str, float]:
    """Each card's cosine similarity to the mean of its topic's vectors."""
    vec = vectorizer()
    try:
        matrix = vec.fit_transform([c.text for c in cards])
    except ValueError:
        return {c.id: 0.0 for c in cards}
    row = {c.id: i for i, c in enumerate(cards)}
    out: dict[str, float] = {}
    for group in groups:
        rows = [row[c.id] for c in group.cards]
        centre = matrix[rows].mean(axis=0).A1
        for c in group.cards:
            out[c.id] = round(float(matrix[row[c.id]].toarray().ravel() @ centre), 12)
    return out
