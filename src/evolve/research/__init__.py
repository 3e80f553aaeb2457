"""The research pool: mechanism cards, their topics per module, picking them, and the brief.

A card (`research/<id>.yaml`) names one published mechanism, in our own words, and the harness
module it targets; the starter pool ships with evolve (docs/research.md). A module's cards are
grouped into topics and picked round-robin across them so a search spreads over distinct
mechanisms (or ranked by relevance, the ablation's baseline); the capability brief, drawn from
training failures, says which module to search first.

Layer: below the harness (which reads cards to build variants), above the model seam and the
workspace. scikit-learn is imported only when topics or a pick are computed.
"""

from evolve.research._brief import GAPS, Brief, brief_of, capability_brief
from evolve.research._card import (
    CARD_BYTES,
    KEYS,
    MODULES,
    RESEARCH_DIR,
    Card,
    check_variants,
    dump_card,
    parse_card,
    read_cards,
)
from evolve.research._cycle import (
    CARD,
    RESEARCH_KIND,
    ResearchCommit,
    pool_version,
    research_commits,
)
from evolve.research._pick import STRATEGIES, pick
from evolve.research._pool import load_pool, starter_pool
from evolve.research._topics import Topic, check_label, topics

__all__ = [
    "CARD",
    "CARD_BYTES",
    "GAPS",
    "KEYS",
    "MODULES",
    "RESEARCH_DIR",
    "RESEARCH_KIND",
    "STRATEGIES",
    "Brief",
    "Card",
    "ResearchCommit",
    "Topic",
    "brief_of",
    "capability_brief",
    "check_label",
    "check_variants",
    "dump_card",
    "load_pool",
    "parse_card",
    "pick",
    "pool_version",
    "read_cards",
    "research_commits",
    "starter_pool",
    "topics",
]
