"""The pool: the starter cards shipped with evolve, and the workspace's own `research/*.yaml`.

A workspace reads both: the starter pool from the installed package (never copied into the
workspace, so an upgrade of evolve brings its new cards and `evolve init` writes nothing new),
and its own cards, which replace a starter card of the same id. `starter=False` reads the
workspace's cards alone.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from evolve.research._card import Card, parse_card, read_cards

STARTER_PACKAGE = "evolve.research"
STARTER_DIR = "starter"


@cache
def starter_pool() -> tuple[Card, ...]:
    """The cards shipped with evolve (`evolve/research/starter/*.yaml`), sorted by id."""
    from importlib.resources import files

    folder = files(STARTER_PACKAGE) / STARTER_DIR
    cards = []
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".yaml"):
            stem = entry.name[: -len(".yaml")]
            text = entry.read_text(encoding="utf-8")
            cards.append(parse_card(text, stem, f"the starter pool's {entry.name}"))
    return tuple(cards)


def load_pool(root: Path, *, starter: bool = True) -> list[Card]:
    """The research pool of the workspace at `root`: the starter pool (unless `starter` is
    False) with the workspace's `research/*.yaml` over it (a workspace card replaces the
    starter card of the same id), sorted by id.

    Raises:
        ConfigError: a bad card (one sentence naming its file).
        PathRefused: `research/` or a card is a link out of the workspace.
    """
    own = read_cards(root)
    pool = {card.id: card for card in (starter_pool() if starter else ())}
    pool.update((card.id, card) for card in own)
    return [pool[k] for k in sorted(pool)]
