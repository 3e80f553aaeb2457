"""evolve: agents that learn from their users safely.

The Python API (`evolve.open`, the agent types; see :mod:`evolve.api` and docs/api.md) is
imported on first use, so `import evolve` (which every `evolve` command runs first) imports
nothing: not even `typing`, which the reading commands' start-up does without. That is why
this module writes its PEP 562 hooks itself instead of using `evolve._lazy`.
"""

from __future__ import annotations

__version__ = "0.1.0"

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

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

_API = frozenset(__all__) - {"__version__"}


def __getattr__(name: str) -> Any:
    if name not in _API:
        raise AttributeError(f"module 'evolve' has no attribute {name!r}")
    from evolve import api

    value = getattr(api, name)
    globals()[name] = value  # later reads are plain attribute reads
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_API})
