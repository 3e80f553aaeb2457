"""One episode: running it, judging it, and its record.

Names are imported on first use (PEP 562), so that `evolve.episode._run` (what `evolve run`
scores with) is imported without the record models' neighbours being imported for it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

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

_WHERE = {
    "EPISODE_SCHEMA": "evolve.episode._records",
    "CallRecord": "evolve.episode._records",
    "EpisodeRecord": "evolve.episode._records",
    "TurnRecord": "evolve.episode._records",
    "REDACTED": "evolve.redact",
    "Redactor": "evolve.redact",
    "redact": "evolve.redact",
    "redact_text": "evolve.redact",
    "EpisodeResult": "evolve.episode._run",
    "EpisodeSetup": "evolve.episode._run",
    "redact_judgement": "evolve.episode._run",
    "redact_trace": "evolve.episode._run",
    "run_episode": "evolve.episode._run",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'evolve.episode' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


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
