"""`sim`: the offline, seeded model simulator (docs/sim.md).

Names are imported on first use (PEP 562): a dev run asks the sim for agent actions only, so
it does not import the updater, reflector, evolver and selector roles; `SimLLM` imports them
(they register themselves) the first time another role is asked for, and `ROLES` here lists
them all.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evolve._lazy import lazy_exports

if TYPE_CHECKING:
    from evolve.sim._agent import SimAgent, read_directives, read_stats
    from evolve.sim._model import SimLLM
    from evolve.sim._rates import SimRates
    from evolve.sim._role import ROLES, Sim, role
    from evolve.sim._updater import (
        Proposal,
        complaint_of,
        learn,
        proposals_from_complaint,
        slot_of,
        user_name,
        vague_slot_of,
    )

_MODULES = {
    "evolve.sim._agent": ("SimAgent", "read_directives", "read_stats"),
    "evolve.sim._model": ("SimLLM",),
    "evolve.sim._rates": ("SimRates",),
    "evolve.sim._role": ("ROLES", "Sim", "role"),
    "evolve.sim._updater": (
        "Proposal",
        "complaint_of",
        "learn",
        "proposals_from_complaint",
        "slot_of",
        "user_name",
        "vague_slot_of",
    ),
}


def _before(name: str) -> None:
    if name == "ROLES":  # complete only once every role has registered itself
        from evolve.sim._model import load_roles

        load_roles()


__getattr__, __dir__ = lazy_exports(__name__, globals(), _MODULES, before=_before)


__all__ = [
    "ROLES",
    "Proposal",
    "Sim",
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
