"""Executors: how independent jobs (scoring episodes) are spread over threads, an event
loop, processes or a Ray cluster. Every executor returns the results in the order of the
items."""

from evolve.executors._base import (
    EXECUTORS,
    SPAWNING,
    Executor,
    ExecutorFactory,
    Progress,
    choose_executor,
    executor_session,
    executors,
    get_executor,
)
from evolve.executors._failure import EpisodeFailed

__all__ = [
    "EXECUTORS",
    "SPAWNING",
    "EpisodeFailed",
    "Executor",
    "ExecutorFactory",
    "Progress",
    "choose_executor",
    "executor_session",
    "executors",
    "get_executor",
]
