"""The training stream: which task each episode gets, and the history before it."""

from __future__ import annotations

import random
from typing import Any

from evolve.envs import Environment, Task
from evolve.train._histref import RecordsHistory, StreamHistory


def stream_tasks(env: Environment, seed: int, episodes: int) -> list[Task]:
    """Tasks sampled with replacement from the train split (as seed 000's Q3 stream does).

    The sequence for a seed is prefix-stable: asking for more episodes extends it.
    """
    pool = sorted(env.tasks("train"), key=lambda t: t.id)
    rng = random.Random(f"stream|{seed}")
    return [pool[rng.randrange(len(pool))] for _ in range(episodes)]


def history_before(
    env: Environment,
    tasks: list[Task],
    persona: str,
    episode: int,
    recorded: StreamHistory | None = None,
) -> Any:
    """The user's history at the start of `episode`, replayed from the stream (no model calls).

    An environment whose history depends on what the agent did (`RecordsHistory`, AppWorld)
    replays the stream's `recorded` history (`evolve.train._histref`) instead of the tasks.
    """
    history = env.initial_history(persona)
    if recorded is not None and isinstance(env, RecordsHistory):
        return recorded.replay(env, history, episode)
    for k in range(episode):
        history = env.advance_history(history, tasks[k], persona, k)
    return history


def stream_id(persona: str, recipe: str, seed: int, feedback: str) -> str:
    return f"{persona}/{recipe}/{seed}/{feedback}"
