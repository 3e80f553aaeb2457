"""One episode: running it, judging it, and its record."""

from evolve.episode._records import EPISODE_SCHEMA, CallRecord, EpisodeRecord, TurnRecord
from evolve.episode._redact import REDACTED, redact
from evolve.episode._run import EpisodeResult, EpisodeSetup, run_episode

__all__ = [
    "EPISODE_SCHEMA",
    "REDACTED",
    "CallRecord",
    "EpisodeRecord",
    "EpisodeResult",
    "EpisodeSetup",
    "TurnRecord",
    "redact",
    "run_episode",
]
