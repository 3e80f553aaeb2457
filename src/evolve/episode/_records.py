"""Episode records (versioned pydantic models, one canonical JSON line each)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

EPISODE_SCHEMA = 1


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CallRecord(_Record):
    tool: str
    args: dict[str, Any]
    ok: bool
    result: Any = None
    error: str | None = None


class TurnRecord(_Record):
    """One agent turn: a call, or a reply that could not be used (a failed turn)."""

    call: CallRecord | None = None
    bad_reply: str | None = None
    # A failed turn keeps the start of what the model said (redacted, control characters
    # escaped), so a log shows the reply and not only the reason.
    reply: str | None = None


class EpisodeRecord(_Record):
    """Everything one episode did and how it was judged. Credentials are redacted."""

    schema_version: Literal[1] = 1
    task_id: str
    family: str
    split: str
    persona: str
    run: int
    seed: int
    episode: int | None = None
    attempt: int = 1
    model: str
    turns: list[TurnRecord]
    hit_turn_limit: bool
    final_state: dict[str, Any]
    task_success: bool
    failure: str | None
    applicable_rules: list[str]
    violations: dict[str, str]
    accepted: bool
    input_tokens: int
    output_tokens: int
    cost: float = 0.0  # US dollars at the prices in evolve.yaml (0 without a price)
    prompt_chars: int
    duration_s: float
    # Training only: the memory commit the episode made, and the proposals refused.
    commit: str | None = None
    refused: list[str] = []
    # Skills (issue 13): the skills injected into this episode's prompt, and those that
    # matched but were held out of it (the scoreboard's comparison episodes).
    skills_injected: list[str] = []
    skills_held_out: list[str] = []

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens
