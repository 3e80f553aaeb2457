"""Training: the episode stream that turns complaints into memory commits."""

from evolve.train._stream import STREAM, history_before, stream_id, stream_tasks
from evolve.train._train import (
    EpisodeOutcome,
    TrainReport,
    commit_message,
    last_episode,
    train,
)

__all__ = [
    "STREAM",
    "EpisodeOutcome",
    "TrainReport",
    "commit_message",
    "history_before",
    "last_episode",
    "stream_id",
    "stream_tasks",
    "train",
]
