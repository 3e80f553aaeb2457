"""One episode: running it, judging it, and its record.

Names are imported on first use (PEP 562), so that `evolve.episode._run` (what `evolve run`
scores with) is imported without the record models' neighbours being imported for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evolve._lazy import lazy_exports

if TYPE_CHECKING:
    from evolve.episode._records import EPISODE_SCHEMA, CallRecord, EpisodeRecord, TurnRecord
    from evolve.episode._redact import REDACTED, Redactor, redact, redact_text
    from evolve.episode._run import (
        EpisodeResult,
        EpisodeSetup,
        redact_judgement,
        redact_trace,
        run_episode,
    )

_MODULES = {
    "evolve.episode._records": ("EPISODE_SCHEMA", "CallRecord", "EpisodeRecord", "TurnRecord"),
    "evolve.redact": ("REDACTED", "Redactor", "redact", "redact_text"),
    "evolve.episode._run": (
        "EpisodeResult",
        "EpisodeSetup",
        "redact_judgement",
        "redact_trace",
        "run_episode",
    ),
}

__getattr__, __dir__ = lazy_exports(__name__, globals(), _MODULES)


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
