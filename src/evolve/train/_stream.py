"""The training stream: which task each episode gets, and the history before it."""

from __future__ import annotations

import random
from collections.abc import Iterable
from typing import Any

from evolve._format._message import STREAM as STREAM  # re-exported
from evolve.envs import Environment, Task
from evolve.store import EPISODE, CommitInfo, GitStore, digest
from evolve.train._histref import RecordsHistory, StreamHistory

STREAMS_DIGEST = "1"  # the version of what `_fold_streams` keeps


def stream_tasks(env: Environment, seed: int, episodes: int) -> list[Task]:
    """Tasks sampled with replacement from the train split (as the Q3 experiment's stream does).

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


def _fold_streams(
    state: dict[str, str], commits: Iterable[tuple[CommitInfo, str]]
) -> dict[str, str]:
    """Fold commits (newest first) into {stream: the `Evolve-Episode` of the newest commit
    that carries the stream as a trailer, an episode, and the line `Evolve-Stream: <stream>`
    (git's `--grep`)}."""
    newer: dict[str, str] = {}
    for info, message in commits:
        t = info.trailers
        sid = t.get(STREAM)
        if sid is None or sid in newer or EPISODE not in t:
            continue
        if f"{STREAM}: {sid}" in message:
            newer[sid] = t[EPISODE]
    return {**state, **newer}


def last_episodes(store: GitStore) -> dict[str, str]:
    """{stream: the `Evolve-Episode` trailer of its newest commit on HEAD's history}, kept
    per commit (`evolve.store.digest`), so a new stream costs no walk of the whole history."""
    return digest(store, "streams", STREAMS_DIGEST, _fold_streams, dict, _streams_shape)


def _streams_shape(value: object) -> bool:
    return isinstance(value, dict) and all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    )


def own_last_episode(store: GitStore, stream: str, newest: str | None) -> int | None:
    """The stream's last episode on HEAD's history, by its own record: `newest` (what the
    commits' trailers say) unless the record names another commit for that episode that is not
    on HEAD's history, i.e. the commit there is a copy (a cherry-pick or a rebase from
    elsewhere); then the newest episode whose commit is the stream's own, or that the record
    does not know (a run stopped before it wrote the record, a workspace older than it)."""
    from evolve.train._trainref import stream_commits

    if newest is None:
        return None
    recorded = stream_commits(store, stream)
    own = recorded.get(int(newest))
    if own is None or _on_head(store, own):
        return int(newest)
    on_head = set(store.git("rev-list", "HEAD").split())
    out = store.git(
        "log",
        "--fixed-strings",
        f"--grep={STREAM}: {stream}",
        f"--format=%H%x00%(trailers:key={EPISODE},valueonly=true,unfold=true)",
        "HEAD",
    )
    for line in out.splitlines():
        sha, _, value = line.partition("\x00")
        if not value.strip().isdigit():
            continue
        episode = int(value.strip())
        mine = recorded.get(episode)
        if mine is None or mine == sha or mine in on_head:
            return episode
    return None


def _on_head(store: GitStore, sha: str) -> bool:
    from evolve.store import GitFailed

    try:
        store.git("merge-base", "--is-ancestor", sha, "HEAD")
    except GitFailed:
        return False
    return True
