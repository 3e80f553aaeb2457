"""The agent seam, the agents registry, evolve's own agent and its prompt builder."""

from evolve.agent._agent import (
    ACTION_SCHEMA,
    ERROR_PREFIX,
    RESULT_PREFIX,
    Action,
    BadReply,
    Trace,
    Turn,
    parse_action,
    run_agent,
)
from evolve.agent._prompt import (
    MEMORY_HEADER,
    STATS_HEADER,
    PromptFile,
    build_system_prompt,
    read_prompt_files,
    section,
    task_message,
    without_sections,
)
from evolve.agent._registry import (
    BUILT_IN_AGENT,
    AgentContext,
    AgentFactory,
    agents,
    make_agent,
    workspace_agent,
)
from evolve.agent._seam import Agent, AgentRequest, ModelAgent

__all__ = [
    "ACTION_SCHEMA",
    "BUILT_IN_AGENT",
    "Agent",
    "AgentContext",
    "AgentFactory",
    "AgentRequest",
    "ModelAgent",
    "ERROR_PREFIX",
    "MEMORY_HEADER",
    "RESULT_PREFIX",
    "STATS_HEADER",
    "Action",
    "BadReply",
    "PromptFile",
    "Trace",
    "Turn",
    "agents",
    "build_system_prompt",
    "make_agent",
    "parse_action",
    "read_prompt_files",
    "run_agent",
    "section",
    "task_message",
    "without_sections",
    "workspace_agent",
]
