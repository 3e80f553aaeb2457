"""Agents by name: the `evolve.agents` registry, and the agent a workspace names.

An agent is registered as a factory: a callable that takes an :class:`AgentContext` (the agent
role's model, the workspace's root) and returns an :class:`~evolve.agent.Agent`. evolve's own
is ``model`` (:class:`~evolve.agent.ModelAgent` over the role's model); an installed package
adds one with an ``evolve.agents`` entry point, and evolve.yaml may name an import path
(``agent: {name: mypkg.bot:make_agent}``), found on the import path or in a folder of the
workspace that ``agent.path`` names (`use_agent_path`). Every command that plays episodes (`run`, `train`,
the gate of `evolve`, `compare`) plays them with the agent the workspace names.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from evolve._registry import Registry
from evolve.agent._seam import Agent, ModelAgent
from evolve.errors import ConfigError
from evolve.llm import LLM

BUILT_IN_AGENT = "model"


@dataclass(frozen=True)
class AgentContext:
    """What an agent factory is given to build its agent.

    Attributes:
        llm: the agent role's model (`models.agent`, `--model`): an agent that asks a model
            may use it, or ignore it and reach its own.
        root: the root of the workspace whose episodes it plays (when the gate scores a
            generation, a temporary copy of exactly the candidate commit).
    """

    llm: LLM
    root: Path


AgentFactory = Callable[[AgentContext], Agent]

agents: Registry[AgentFactory] = Registry("agent", "evolve.agents")


@agents.register(BUILT_IN_AGENT)
def model_agent(context: AgentContext) -> Agent:
    """evolve's own agent: the function-call loop over the agent role's model."""
    return ModelAgent(context.llm)


def make_agent(name: str, context: AgentContext) -> Agent:
    """The agent `name` names (a registered name, an entry point or ``module:factory``),
    built by its factory for `context`.

    Raises:
        UnknownName: no agent answers to `name` (one sentence listing the choices).
        ConfigError: the factory did not return an agent (no `run` method, no `name`).
    """
    factory = agents.lookup(name)
    agent = factory(context)
    if not callable(getattr(agent, "run", None)) or not isinstance(
        getattr(agent, "name", None), str
    ):
        raise ConfigError(
            f"the agent factory {name!r} returned {type(agent).__name__}, not an agent; return "
            "an object with a `name` string and a `run(request, world)` method."
        )
    return agent


def workspace_agent(name: str, llm: LLM, root: Path) -> Agent | None:
    """The agent of a workspace whose `agent.name` is `name`, over its agent model `llm`;
    None for evolve's own (``model``: the episode plays `llm` as it always did).

    Raises:
        UnknownName: no agent answers to `name`.
        ConfigError: the factory did not return an agent.
    """
    if name.strip() == BUILT_IN_AGENT:
        return None
    return make_agent(name, AgentContext(llm=llm, root=root))


_PATH_LOCK = threading.Lock()


def use_agent_path(
    root: Path, folders: Sequence[str], protected: Callable[[PurePosixPath], bool]
) -> None:
    """Put the workspace folders `folders` (``agent.path``, relative to `root`) at the front
    of the import path, so that ``agent.name`` and a model named ``module:factory`` are found
    in them. Running them is running the workspace's own code, as its ``evalset/checks.py``
    is run: each folder must lie under a protected prefix (`protected`), so the evolving side
    can never edit the code that plays or judges; a folder added once stays (imports are
    cached for the process).

    Raises:
        ConfigError: a folder that is not protected, is missing, or leaves the workspace
            through a link.
    """
    top = root.resolve()
    for entry in folders:
        if not protected(PurePosixPath(entry)):
            raise ConfigError(
                f"agent.path {entry!r} is not protected; add it to `protected` in evolve.yaml "
                "so the evolving side cannot edit the agent's code."
            )
        folder = (root / entry).resolve()
        if not folder.is_relative_to(top):
            raise ConfigError(
                f"agent.path {entry!r} leads out of the workspace; name a folder in it."
            )
        if not folder.is_dir():
            raise ConfigError(f"agent.path {entry!r} is not a folder of the workspace.")
        with _PATH_LOCK:
            if str(folder) not in sys.path:
                sys.path.insert(0, str(folder))
