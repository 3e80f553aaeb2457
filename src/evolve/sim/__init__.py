"""`sim`: the offline, seeded model simulator (docs/sim.md).

Names are imported on first use (PEP 562): a dev run asks the sim for agent actions only, so
it does not import the updater, reflector, evolver and selector roles; `SimLLM` imports them
(they register themselves) the first time another role is asked for, and `ROLES` here lists
them all.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

_WHERE = {
    "SimAgent": "evolve.sim._agent",
    "read_directives": "evolve.sim._agent",
    "read_stats": "evolve.sim._agent",
    "ROLES": "evolve.sim._model",
    "SimLLM": "evolve.sim._model",
    "role": "evolve.sim._model",
    "SimRates": "evolve.sim._rates",
    "Proposal": "evolve.sim._updater",
    "complaint_of": "evolve.sim._updater",
    "learn": "evolve.sim._updater",
    "proposals_from_complaint": "evolve.sim._updater",
    "slot_of": "evolve.sim._updater",
    "user_name": "evolve.sim._updater",
    "vague_slot_of": "evolve.sim._updater",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'evolve.sim' has no attribute {name!r}")
    if name == "ROLES":
        from evolve.sim._model import load_roles

        load_roles()
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


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
