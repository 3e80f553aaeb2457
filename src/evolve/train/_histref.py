"""The user's history of a training stream, recorded where a fresh process can read it back.

An environment whose history follows from the task alone (`persona_world`: a payment task
pays its contact with a card the task fixes) replays it with `advance_history`. An
environment whose history depends on what the agent did (AppWorld: the payment is whatever
`venmo__create_transaction` the agent made) cannot: it implements `RecordsHistory`, and
training keeps one record per episode of the stream on the side ref `refs/evolve/train`,
in `history/<stream>.json` (`{"episodes": {"<k>": record}}`, committed with the store's
side-ref writer before the next episode runs). A stream resumed in a new process, or in a
clone that fetched `refs/evolve/*`, replays its history from there without model calls.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from evolve.envs import ApiCall, Task
from evolve.errors import EvolveError
from evolve.history import TRAIN_REF
from evolve.store import GitStore

__all__ = ["RecordsHistory", "StreamHistory", "history_path"]


@runtime_checkable
class RecordsHistory(Protocol):
    """An environment whose history is recorded per episode instead of derived from tasks."""

    def history_record(
        self, task: Task, persona: str, calls: Sequence[ApiCall]
    ) -> dict[str, Any]: ...

    def history_with(self, history: Any, record: Mapping[str, Any]) -> Any: ...


def history_path(stream: str) -> str:
    return f"history/{stream}.json"


class StreamHistory:
    """The recorded history of one stream (episode -> the env's JSON record)."""

    def __init__(self, stream: str, records: dict[int, dict[str, Any]] | None = None) -> None:
        self.stream = stream
        self.records: dict[int, dict[str, Any]] = dict(records or {})

    @property
    def path(self) -> str:
        return history_path(self.stream)

    @classmethod
    def load(cls, store: GitStore, stream: str) -> StreamHistory:
        path = history_path(stream)
        raw = store.read_side_ref(TRAIN_REF, path).get(path)
        if raw is None:
            return cls(stream)
        try:
            data = json.loads(raw)
            records = {int(k): dict(v) for k, v in data["episodes"].items()}
        except (ValueError, KeyError, TypeError, AttributeError):
            raise EvolveError(
                f"{TRAIN_REF}:{path} is not a valid history record; restore it with "
                f"`git update-ref {TRAIN_REF} {TRAIN_REF}~1`."
            ) from None
        return cls(stream, records)

    def replay(self, env: RecordsHistory, history: Any, episode: int) -> Any:
        """`history` advanced by the records of episodes 0..episode-1.

        Raises:
            EvolveError: an episode before `episode` has no record (a copy of the workspace
                without the side ref): judging on an incomplete history would be wrong.
        """
        missing = [k for k in range(episode) if k not in self.records]
        if missing:
            raise EvolveError(
                f"episode {missing[0]} of stream {self.stream} has no recorded history on "
                f"{TRAIN_REF} ({len(missing)} missing), so the stream cannot resume with the "
                "right history; fetch it with `git fetch <remote> 'refs/evolve/*:refs/evolve/*'`."
            )
        for k in range(episode):
            history = env.history_with(history, self.records[k])
        return history

    def save(self, store: GitStore, episode: int, record: dict[str, Any]) -> None:
        self.records[episode] = record
        data = {"episodes": {str(k): self.records[k] for k in sorted(self.records)}}
        text = json.dumps(data, indent=2, sort_keys=True) + "\n"
        store.write_side_ref(
            TRAIN_REF,
            {self.path: text.encode("utf-8")},
            f"history {self.stream}: episode {episode}",
        )
