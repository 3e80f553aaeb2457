"""Executors: how independent jobs (scoring episodes) are spread over threads, an event
loop or processes. Every executor returns the results in the order of the items."""

from evolve.executors._base import (
    EXECUTORS,
    EpisodeFailed,
    Executor,
    Progress,
    choose_executor,
    get_executor,
)

__all__ = [
    "EXECUTORS",
    "EpisodeFailed",
    "Executor",
    "Progress",
    "choose_executor",
    "get_executor",
]
