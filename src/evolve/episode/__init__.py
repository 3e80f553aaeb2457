"""One episode: running it, judging it, and its record."""

from evolve.episode._records import EPISODE_SCHEMA, CallRecord, EpisodeRecord, TurnRecord
from evolve.episode._redact import REDACTED, Redactor, redact, redact_text
from evolve.episode._run import (
    EpisodeResult,
    EpisodeSetup,
    redact_judgement,
    redact_trace,
    run_episode,
)

__all__ = [
    "EPISODE_SCHEMA",
    "REDACTED",
    "CallRecord",
    "EpisodeRecord",
    "EpisodeResult",
    "EpisodeSetup",
    "Redactor",
    "TurnRecord",
    "redact",
    "redact_judgement",
    "redact_text",
    "redact_trace",
    "run_episode",
]
