"""Training: the episode stream that turns complaints into memory commits."""

from evolve.train._batch import BatchResult, SkillsBatches
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
