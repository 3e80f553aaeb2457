"""The sim's roles: its answer to each kind of request, by the request's JSON schema name.

Each role is registered where it is written (`@role("ace_deltas")`); `SimLLM` imports the
modules that hold them when a request needs one (`evolve.sim._model.load_roles`). A role reads
of the model only what :class:`Sim` names, so the role modules need not import the model.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from evolve.envs.persona_world import PersonaWorldEnv
from evolve.llm import Message
from evolve.sim._rates import SimRates


class Sim(Protocol):
    """What a role reads of the sim model that asks it."""

    @property
    def env(self) -> PersonaWorldEnv: ...

    @property
    def rates(self) -> SimRates: ...


Role = Callable[[Sim, Sequence[Message], random.Random], Any]

ROLES: dict[str, Role] = {}


def role(name: str) -> Callable[[Role], Role]:
    """Register the sim's answer to requests whose JSON schema is named `name`."""

    def wrap(func: Role) -> Role:
        ROLES[name] = func
        return func

    return wrap
