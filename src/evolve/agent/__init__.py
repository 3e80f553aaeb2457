"""The agent and its prompt builder."""

from evolve.agent._agent import (
    ACTION_SCHEMA,
    DEFAULT_HOOKS,
    ERROR_PREFIX,
    RESULT_PREFIX,
    Action,
    BadReply,
    LoopHooks,
    Review,
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
from evolve.agent._seam import Agent, AgentRequest, ModelAgent

__all__ = [
    "ACTION_SCHEMA",
    "Agent",
    "AgentRequest",
    "ModelAgent",
    "DEFAULT_HOOKS",
    "ERROR_PREFIX",
    "MEMORY_HEADER",
    "RESULT_PREFIX",
    "STATS_HEADER",
    "Action",
    "BadReply",
    "LoopHooks",
    "Review",
    "PromptFile",
    "Trace",
    "Turn",
    "build_system_prompt",
    "parse_action",
    "read_prompt_files",
    "run_agent",
    "section",
    "task_message",
    "without_sections",
]
