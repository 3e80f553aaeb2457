"""The agent seam: whatever plays one episode's turns in a world.

evolve's own function-call loop over a model (:class:`ModelAgent`) is one agent; a Python
callable given through the `evolve` API and any program named by ``agent: {command: [...]}``
(run in the sandbox) are others. Each gets one :class:`AgentRequest` and the episode's world,
makes its tool calls through ``world.call`` (so every call is recorded and judged), and returns
a :class:`~evolve.agent.Trace`. What the agent does is judged by the environment afterwards;
the agent never sees the checkers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from evolve.agent._agent import Trace, run_agent
from evolve.envs import World
from evolve.llm import LLM


@dataclass(frozen=True)
class AgentRequest:
    """What an agent is given for one episode.

    `system_prompt` is the whole rendered prompt (prompt files, API docs, memory, skills,
    stats); `sections` holds the same parts by name (``prompt_files``, ``api_docs``,
    ``memory``, ``skills``, ``stats``) for an agent that builds its own prompt.
    """

    task_id: str
    instruction: str
    task_message: str
    system_prompt: str
    tools: tuple[str, ...]
    max_turns: int
    seed: int
    sections: Mapping[str, str] = field(default_factory=dict)


class Agent(Protocol):
    """Plays one episode: `run` makes its calls through `world.call` and returns the trace."""

    @property
    def name(self) -> str:
        """What episode records name as the model (evolve's own agent: the model's name)."""
        ...

    def run(self, request: AgentRequest, world: World) -> Trace: ...


@dataclass(frozen=True)
class ModelAgent:
    """evolve's own agent: the function-call loop (:func:`run_agent`) over a model."""

    llm: LLM

    @property
    def name(self) -> str:
        return self.llm.name

    def run(self, request: AgentRequest, world: World) -> Trace:
        return run_agent(
            self.llm,
            world,
            system_prompt=request.system_prompt,
            task_message=request.task_message,
            tools=request.tools,
            max_turns=request.max_turns,
            seed=request.seed,
        )
