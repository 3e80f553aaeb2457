"""evolve from Python: put evolve's memory, gate and undo around an agent of your own.

    import evolve

    ws = evolve.open("path/to/workspace")
    sections = ws.sections("Pay back Sam for dinner")    # memory and skills for a prompt
    ws.record(task_id="t1", instruction="...", success=False, complaint="Use the note.")
    report = ws.score("dev", agent=my_agent)              # any callable agent

See docs/api.md ("Bring your own agent").
"""

from evolve.agent import Agent, AgentContext, AgentRequest, Trace, Turn, agents
from evolve.api._agents import AgentFunction, FunctionAgent, as_agent
from evolve.api._workspace import Recorded, Sections, Workspace, open
from evolve.envs import ApiCall, Task, World

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
    "agents",
    "as_agent",
    "open",
]
