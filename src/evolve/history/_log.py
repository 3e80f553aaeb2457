"""`evolve log`: the history of memory and prompts, newest first.

Git does the walking and the path filtering (`git log -- memory prompts`); a commit-graph with
changed-path Bloom filters, refreshed after each writing command, keeps that fast on long
histories.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from evolve.store import EPISODE, OPS, RECIPE, TASK, CommitInfo, GitStore, parse_ops

TRACKED = ("memory", "prompts")


@dataclass(frozen=True)
class LogEntry:
    commit: str
    time: str
    subject: str
    episode: int | None
    recipe: str | None
    task: str | None
    complaint: str | None
    ops: list[tuple[str, str]] = field(default_factory=list)
    trailers: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["ops"] = [{"op": op, "id": ident} for op, ident in self.ops]
        return data


def clip(text: str, limit: int) -> str:
    """`text` on one line, cut at a word boundary to at most `limit` characters (with "…").

    Never cuts inside a word: a first word longer than `limit` is kept whole.
    """
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    cut = flat.rfind(" ", 0, limit - 1)  # the kept part plus " …" stays within the limit
    if cut <= 0:
        first = flat.split(" ", 1)[0]
        return first if first == flat else first + " …"
    return flat[:cut].rstrip(" ,;:") + " …"


def complaint_line(body: str) -> str | None:
    """The first line of the complaint recorded in a training commit's body."""
    lines = body.splitlines()
    for i, line in enumerate(lines):
        if line.strip() == "Complaint:":
            rest = [ln.strip() for ln in lines[i + 1 :] if ln.strip()]
            return rest[0] if rest else None
    return None


def to_entry(info: CommitInfo) -> LogEntry:
    t = info.trailers
    episode = t.get(EPISODE)
    return LogEntry(
        commit=info.sha,
        time=info.time,
        subject=info.subject,
        episode=int(episode) if episode and episode.isdigit() else None,
        recipe=t.get(RECIPE),
        task=t.get(TASK),
        complaint=complaint_line(info.body),
        ops=parse_ops(t.get(OPS, "")),
        trailers=dict(t),
    )


def history(
    store: GitStore, paths: Sequence[str] = (), *, max_count: int | None = 50
) -> list[LogEntry]:
    """Commits that touched `paths` (default: memory/ and prompts/), newest first."""
    # The workspace's first commit (no parent) scaffolds memory/ and prompts/; it taught nothing.
    infos = store.log(list(paths) or list(TRACKED), max_count=max_count, min_parents=1)
    return [to_entry(info) for info in infos]


def refresh_commit_graph(store: GitStore) -> None:
    """Keep a commit-graph with changed-path Bloom filters up to date (incremental)."""
    try:
        store.repo.git.commit_graph("write", "--reachable", "--changed-paths", "--split")
    except Exception:  # noqa: BLE001 - an optimisation; never fail a command over it
        return
