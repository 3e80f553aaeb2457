"""The module-level harness search: research cards to single-module candidates, crossover,
and a champion replaced only on a paired-bootstrap gain (docs/search.md)."""

from evolve.search._mutate import (
    Blueprint,
    BuiltinMutator,
    Candidate,
    CardLike,
    Mutator,
    probe,
)
from evolve.search._run import run_search
from evolve.search._score import Scorer, probe_player
from evolve.search._search import (
    CANDIDATES_PREFIX,
    SEARCH_REF,
    Search,
    SearchResult,
    Tried,
    load_searches,
    next_cycle,
    tried_cards,
)

__all__ = [
    "CANDIDATES_PREFIX",
    "SEARCH_REF",
    "Blueprint",
    "BuiltinMutator",
    "Candidate",
    "CardLike",
    "Mutator",
    "Scorer",
    "Search",
    "SearchResult",
    "Tried",
    "load_searches",
    "next_cycle",
    "probe",
    "probe_player",
    "run_search",
    "tried_cards",
]
