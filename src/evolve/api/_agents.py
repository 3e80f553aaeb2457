"""Any callable as an agent: a function `(AgentRequest, World) -> Trace | str`, or an Agent."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from evolve.agent import Agent, AgentRequest, Trace, Turn
from evolve.envs import World

AgentFunction = Callable[[AgentRequest, World], "Trace | str | None"]
"""A plain function that plays one episode: it makes its tool calls through `world.call`
and returns a :class:`~evolve.agent.Trace`, or its final answer as text (or None)."""


@dataclass(frozen=True)
class FunctionAgent:
    """An :class:`~evolve.agent.Agent` made of a plain function (see :data:`AgentFunction`).

    A function that returns text (or None) gets a trace made of the calls it made through
    `world.call`, then its answer as the last turn.

    Attributes:
        function: the function that plays each episode.
        label: the name episode records give the agent ("": the function's own name).
    """

    function: AgentFunction
    label: str = ""

    @property
    def name(self) -> str:
        """What episode records name as the model: `label`, else the function's name."""
        return self.label or getattr(self.function, "__name__", None) or "function"

    def run(self, request: AgentRequest, world: World) -> Trace:
        """Play one episode with the function."""
        out = self.function(request, world)
        if isinstance(out, Trace):
            return out
        turns = [Turn(call=call) for call in world.calls]
        if out:
            turns.append(Turn(reply=str(out)))
        return Trace(turns=turns)


def as_agent(agent: Agent | AgentFunction, name: str = "") -> Agent:
    """`agent` itself when it is an :class:`~evolve.agent.Agent` (a `run` method and a
    `name`), else a :class:`FunctionAgent` around the callable.

    Raises:
        TypeError: `agent` is neither.
    """
    if callable(getattr(agent, "run", None)) and isinstance(getattr(agent, "name", None), str):
        return agent  # type: ignore[return-value]
    if callable(agent):
        return FunctionAgent(agent, name)
    raise TypeError(
        f"an agent must be a function (request, world) -> Trace | str or an object with "
        f"`name` and `run(request, world)`, not {type(agent).__name__}"
    )
