"""`sim`: a deterministic, seeded simulation of a competent model (see docs/sim.md).

Its numbers are not a claim about any real model: it exists so that evolve runs end to end
offline and so that harness mechanics (what a recipe writes, dedup, revoke, caps, tombstones,
revert, review, the gate) change measured scores.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from typing import Any

from evolve._io import derive_seed
from evolve.envs import Environment
from evolve.errors import ModelError, UnknownName
from evolve.llm import LLM, Completion, JsonSchema, Message, Usage, estimate_tokens
from evolve.llm._registry import models
from evolve.sim._agent import SimAgent
from evolve.sim._rates import SimRates
from evolve.sim._role import ROLES, Sim, role

# Where the roles that are not the recipes' live (the recipes', the reflector's: `_roles`), so
# that a request loads only the module of its own role: a training run on the sim loads neither
# the skill library's roles nor the selector's unless skills are on.
ROLE_MODULES = {
    "skill_selection": "evolve.sim._selector",
    "skill_reflection": "evolve.sim._skills",
    "skill_evolve": "evolve.sim._skills",
    "skill_consolidate": "evolve.sim._skills",
}


def load_roles(name: str | None = None) -> None:
    """Import the module that registers role `name` (the agent's is built in); every role's
    module without a name, or when that one does not register it."""
    import importlib

    importlib.import_module(ROLE_MODULES.get(name or "", "evolve.sim._roles"))
    if name is None or name not in ROLES:
        from evolve.sim import _roles, _selector, _skills  # noqa: F401  (they register roles)


@role("statements")
def _statements(sim: Sim, messages: Sequence[Message], rng: random.Random) -> Any:
    # Here, not at the top: scoring (the agent role) never learns, so `evolve run` skips it.
    from evolve.sim._updater import learn

    return {"statements": [p.statement for p in learn(messages, rng, sim.rates.instance_vague)]}


class SimLLM:
    """The `sim` backend. Randomness is keyed by (seed, role, task, run, episode)."""

    def __init__(self, env: Environment, *, rates: SimRates | None = None, seed: int = 0) -> None:
        from evolve.envs.persona_world import PersonaWorldEnv

        if not isinstance(env, PersonaWorldEnv):
            raise ModelError("the sim model only knows the persona_world environment.")
        self.name = "sim"
        self.env = env
        self.rates = rates or SimRates()
        self.seed = seed
        self._agent = SimAgent(env, self.rates)

    def complete(
        self,
        messages: Sequence[Message],
        *,
        json_schema: JsonSchema | None = None,
        temperature: float = 0.0,
        seed: int | None = None,
        max_tokens: int | None = None,
    ) -> Completion:
        name = json_schema.name if json_schema is not None else "text"
        key = f"{self.seed}|{seed}"
        if name != "agent_action" and name not in ROLES:
            load_roles(name)
        if name == "agent_action":
            payload: Any = self._agent.act(messages, derive_seed(key))
        elif name in ROLES:
            rng = random.Random(
                f"{key}|{name}|{len(messages)}|{messages[-1].content if messages else ''}"
            )
            payload = ROLES[name](self, messages, rng)
        else:
            raise ModelError(f"the sim model does not play the role {name!r}.")
        text = json.dumps(payload, ensure_ascii=False)
        prompt = sum(estimate_tokens(m.content) for m in messages)
        return Completion(text=text, usage=Usage(prompt, estimate_tokens(text)), model=self.name)


@models.register("sim", "sim:")
def sim_model(variant: str, /, *, env: Environment | None = None, **options: Any) -> LLM:
    """The `sim` backend (`sim:<variant>` too) over the workspace's environment."""
    if env is None:
        raise UnknownName("the sim model needs an environment; run it inside a workspace.")
    return SimLLM(env, **options)
