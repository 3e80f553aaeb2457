"""Training: the episode stream that turns complaints into memory commits.

The skills batch writer (`BatchResult`, `SkillsBatches`) is imported on first use: a run of
any other recipe does not load it, nor the skill library's batch plan behind it.
"""

from typing import TYPE_CHECKING

from evolve._lazy import lazy_exports
from evolve.train._stream import history_before, stream_id, stream_tasks
from evolve.train._train import (
    STREAM,
    EpisodeOutcome,
    TrainReport,
    TrainRequest,
    commit_message,
    last_episode,
    train,
)

if TYPE_CHECKING:
    from evolve.train._batch import BatchResult, SkillsBatches

__getattr__, __dir__ = lazy_exports(
    __name__, globals(), {"evolve.train._batch": ("BatchResult", "SkillsBatches")}
)

__all__ = [
    "STREAM",
    "BatchResult",
    "SkillsBatches",
    "EpisodeOutcome",
    "TrainReport",
    "TrainRequest",
    "commit_message",
    "history_before",
    "last_episode",
    "stream_id",
    "stream_tasks",
    "train",
]
