"""evolve: agents that learn from their users safely.

The Python API (`evolve.open`, the agent types) is imported on first use, so `import evolve`
stays cheap: see :mod:`evolve.api` and docs/api.md.
"""

from typing import TYPE_CHECKING

from evolve._lazy import lazy_exports

__version__ = "0.1.0"

if TYPE_CHECKING:
    from evolve.api import (
        Agent,
        AgentContext,
        AgentFunction,
        AgentRequest,
        ApiCall,
        FunctionAgent,
        Recorded,
        Sections,
        Task,
        Trace,
        Turn,
        Workspace,
        World,
        agents,
        as_agent,
        open,
    )

__getattr__, __dir__ = lazy_exports(
    __name__,
    globals(),
    {
        "evolve.api": (
            "Agent",
            "AgentContext",
            "AgentFunction",
            "AgentRequest",
            "ApiCall",
            "FunctionAgent",
            "Recorded",
            "Sections",
            "Task",
            "Trace",
            "Turn",
            "Workspace",
            "World",
            "agents",
            "as_agent",
            "open",
        )
    },
)

__all__ = [
    "Agent",
    "AgentContext",
    "AgentFunction",
    "AgentRequest",
    "ApiCall",
    "FunctionAgent",
    "Recorded",
    "Sections",
    "Task",
    "Trace",
    "Turn",
    "Workspace",
    "World",
    "__version__",
    "agents",
    "as_agent",
    "open",
]
