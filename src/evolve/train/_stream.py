"""The training stream: which task each episode gets, and the history before it."""

from __future__ import annotations

import random
from typing import Any

from evolve.envs import Environment, Task


def stream_tasks(env: Environment, seed: int, episodes: int) -> list[Task]:
    """Tasks sampled with replacement from the train split (as seed 000's Q3 stream does).

    The sequence for a seed is prefix-stable: asking for more episodes extends it.
    """
    pool = sorted(env.tasks("train"), key=lambda t: t.id)
    rng = random.Random(f"stream|{seed}")
    return [pool[rng.randrange(len(pool))] for _ in range(episodes)]


def history_before(env: Environment, tasks: list[Task], persona: str, episode: int) -> Any:
    """The user's history at the start of `episode`, replayed from the stream (no model calls)."""
    history = env.initial_history(persona)
    for k in range(episode):
        history = env.advance_history(history, tasks[k], persona, k)
    return history


def stream_id(persona: str, recipe: str, seed: int, feedback: str) -> str:
    return f"{persona}/{recipe}/{seed}/{feedback}"
