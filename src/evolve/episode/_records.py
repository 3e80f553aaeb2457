"""Episode records (versioned, one canonical JSON line each).

Plain dataclasses with the part of pydantic's model API evolve uses (`model_dump`,
`model_dump_json`, `model_copy`): scoring a split builds one record per episode, and importing
pydantic to build them cost more than scoring a dev split with `sim`. The JSON they dump is
pydantic's JSON mode for the same fields, value for value (a test compares the two on tricky
values); a value of a type JSON has no word for is converted by pydantic-core itself.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, fields, replace
from typing import Any, Literal

EPISODE_SCHEMA = 1


def jsonable(value: Any) -> Any:
    """`value` as pydantic's JSON mode dumps a field typed `Any`."""
    kind = type(value)
    if value is None or kind is str or kind is int or kind is bool:
        return value
    if kind is float:
        return value if math.isfinite(value) else None
    if kind is list:
        return [jsonable(v) for v in value]
    if kind is dict and all(type(k) is str for k in value):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, _Record):
        return value.model_dump(mode="json")
    from pydantic_core import to_jsonable_python  # the unusual values: exactly as pydantic

    return to_jsonable_python(value, inf_nan_mode="null")


class _Record:
    """The model API of the records: dump (python or JSON mode), JSON text, copy."""

    def model_dump(self, *, mode: Literal["python", "json"] = "python") -> dict[str, Any]:
        if mode == "json":
            return {f.name: jsonable(getattr(self, f.name)) for f in fields(self)}  # type: ignore[arg-type]
        return {
            f.name: _python(getattr(self, f.name))
            for f in fields(self)  # type: ignore[arg-type]
        }

    def model_dump_json(self) -> str:
        return json.dumps(self.model_dump(mode="json"), ensure_ascii=False, separators=(",", ":"))

    def model_copy(self, *, update: dict[str, Any] | None = None) -> Any:
        """A copy with `update`'s fields replaced (not validated, as pydantic's)."""
        return replace(self, **(update or {}))  # type: ignore[type-var]


def _python(value: Any) -> Any:
    if isinstance(value, _Record):
        return value.model_dump()
    if type(value) is list:
        return [_python(v) for v in value]
    return value


@dataclass
class CallRecord(_Record):
    tool: str
    args: dict[str, Any]
    ok: bool
    result: Any = None
    error: str | None = None


@dataclass
class TurnRecord(_Record):
    """One agent turn: a call, or a reply that could not be used (a failed turn)."""

    call: CallRecord | None = None
    bad_reply: str | None = None
    # A failed turn keeps the start of what the model said (redacted, control characters
    # escaped), so a log shows the reply and not only the reason.
    reply: str | None = None


@dataclass(kw_only=True)
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
    refused: list[str] = field(default_factory=list)
    # Skills: the skills injected into this episode's prompt, and those that
    # matched but were held out of it (the scoreboard's comparison episodes).
    skills_injected: list[str] = field(default_factory=list)
    skills_held_out: list[str] = field(default_factory=list)
    # Why a model selector's reply was not (wholly) used, or None (the lexical matcher never
    # leaves one).
    skills_note: str | None = None
    # Why the episode ended early as a failed one: a model request that failed on every try
    # it was allowed (a timeout, a server down or busy), or None. The run went on without it.
    model_error: str | None = None

    def __post_init__(self) -> None:
        # As the model validated them: numbers given as int are kept as float.
        self.cost = float(self.cost)
        self.duration_s = float(self.duration_s)

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens
