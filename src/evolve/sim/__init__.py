"""`sim`: the offline, seeded model simulator (docs/sim.md)."""

from evolve.sim import (  # noqa: F401  (these register roles)
    _roles,
    _selector,
    _skills,
)
from evolve.sim._agent import SimAgent, read_directives, read_stats
from evolve.sim._model import ROLES, SimLLM, role
from evolve.sim._rates import SimRates
from evolve.sim._updater import (
    Proposal,
    complaint_of,
    learn,
    proposals_from_complaint,
    slot_of,
    user_name,
    vague_slot_of,
)

__all__ = [
    "ROLES",
    "Proposal",
    "SimAgent",
    "SimLLM",
    "SimRates",
    "complaint_of",
    "learn",
    "proposals_from_complaint",
    "read_directives",
    "read_stats",
    "role",
    "slot_of",
    "user_name",
    "vague_slot_of",
]
