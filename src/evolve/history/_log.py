"""`evolve log`: the history of memory and prompts, newest first.

Git does the walking: one walk without a pathspec, where evolve's trailers say which commits
changed memory/ or prompts/ (see :func:`tracked_commits`); `evolve log PATH` uses git's pathspec
walk, which a commit-graph with changed-path Bloom filters, refreshed after each writing
command, keeps fast on long histories.

Refusals (a tombstoned, out-of-scope or capped proposal) of an episode that committed nothing
else are recorded on the side ref `refs/evolve/train` (see `evolve.train._trainref`); the
log shows each such record beside the commits, right above the commit the episode ran on,
when that commit is on the current branch. Side refs are not fetched by a plain clone: push and
fetch them with `git push origin 'refs/evolve/*:refs/evolve/*'` and `git fetch origin
'refs/evolve/*:refs/evolve/*'`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from evolve._format._message import BASE as BASE  # re-exported
from evolve._format._message import clip as clip  # re-exported (evolve.history.clip)
from evolve._format._message import commit_kind as commit_kind
from evolve._format._message import complaint_line as complaint_line
from evolve._format._message import refused_lines
from evolve.store import (
    EPISODE,
    KIND,
    OPS,
    RECIPE,
    TASK,
    CommitInfo,
    GitFailed,
    GitStore,
    parse_ops,
)

TRACKED = ("memory", "prompts")
TRAIN_REF = "refs/evolve/train"
REFUSAL_KIND = "refusal"


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
    kind: str = "learned"
    refused: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "commit": self.commit,
            "time": self.time,
            "subject": self.subject,
            "episode": self.episode,
            "recipe": self.recipe,
            "task": self.task,
            "complaint": self.complaint,
            "ops": [{"op": op, "id": ident} for op, ident in self.ops],
            "trailers": dict(self.trailers),
            "kind": self.kind,
            "refused": list(self.refused),
        }


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
        kind=commit_kind(info),
        refused=refused_lines(info.body),
    )


def side_ref_sha(store: GitStore, ref: str) -> str | None:
    """The commit `ref` points at, or None when the ref does not exist (yet, or in a clone)."""
    if ref.startswith("refs/"):
        return store.ref_sha(ref)  # read from the ref files: no process
    try:
        out = store.git("rev-parse", "--verify", "--quiet", ref).strip()
    except GitFailed:
        return None
    return out or None


def refusal_records(store: GitStore) -> list[CommitInfo]:
    """Every refusal record on the side ref, newest first."""
    if side_ref_sha(store, TRAIN_REF) is None:
        return []
    return [
        info
        for info in store.log(rev=TRAIN_REF, grep_trailer=KIND, grep_value=REFUSAL_KIND)
        if info.trailers.get(KIND) == REFUSAL_KIND
    ]


# Kinds of commit that evolve itself makes only from files under memory/ or prompts/ (the
# store commits exactly the paths the applier wrote there, and never an empty commit).
EVOLVE_KINDS = frozenset(
    {"train", "learned", "reflector", "revert", "cascade revert", "cascade-revert", "review"}
)


def _made_by_evolve(info: CommitInfo) -> bool:
    kind = info.trailers.get(KIND, "").strip().lower()
    return kind in EVOLVE_KINDS if kind else EPISODE in info.trailers


def tracked_commits(store: GitStore, max_count: int | None = None) -> list[CommitInfo]:
    """The commits `git log --min-parents=1 HEAD -- memory prompts` lists, found faster.

    A pathspec walk diffs the tracked folders of every commit against its parent, and since
    nearly every commit changes memory/, changed-path Bloom filters skip none of it. Instead one
    walk with no pathspec reads every message; a commit evolve made (its `Evolve-Kind` or
    `Evolve-Episode` trailer) is known to change memory/ or prompts/; the others (hand edits,
    commits touching other files) are checked in one batched `git diff-tree --stdin`. A merge
    (where git's history simplification decides what is shown) sends the request to git's own
    pathspec walk, so the answer is always the pathspec walk's.
    """
    need = max_count if max_count else None
    found: list[CommitInfo] = []
    unsure: list[CommitInfo] = []

    def settle() -> None:
        touched = store.commits_touching([i.sha for i in unsure], TRACKED)
        drop = {i.sha for i in unsure if i.sha not in touched}
        found[:] = [i for i in found if i.sha not in drop]
        unsure.clear()

    commits = store.walk()
    try:
        for info in commits:
            if len(info.parents) > 1:
                return list(store.log(list(TRACKED), max_count=max_count, min_parents=1))
            if not info.parents:
                continue  # the scaffold commit: it taught nothing
            found.append(info)
            if not _made_by_evolve(info):
                unsure.append(info)
            if need is not None and len(found) >= need:
                settle()
                if len(found) >= need:
                    return found[:need]
    finally:
        commits.close()
    settle()
    return found


def history(
    store: GitStore,
    paths: Sequence[str] = (),
    *,
    max_count: int | None = 50,
    refusals: bool = False,
) -> list[LogEntry]:
    """Commits that touched `paths` (default: memory/ and prompts/), newest first.

    With `refusals` (what `evolve log` shows) and no `paths`, the refusal records of episodes
    that committed nothing are listed too, each right above the commit its episode ran on
    (when that commit is on HEAD's history).
    """
    # The workspace's first commit (no parent) scaffolds memory/ and prompts/; it taught nothing.
    if paths:
        infos = list(store.log(list(paths), max_count=max_count, min_parents=1))
    else:
        infos = tracked_commits(store, max_count)
    records = refusal_records(store) if refusals and not paths else []
    if not records:
        return [to_entry(info) for info in infos]
    order = {sha: i for i, sha in enumerate(store.git("rev-list", "HEAD").split())}
    complete = max_count is None or len(infos) < max_count
    horizon = order[infos[-1].sha] if infos and not complete else len(order)
    keyed: list[tuple[tuple[int, int, int], CommitInfo]] = [
        ((order[info.sha], 1, 0), info) for info in infos
    ]
    for rank, info in enumerate(records):
        at = order.get(info.trailers.get(BASE, ""))
        if at is None or at > horizon:
            continue  # its episode ran on a commit this branch no longer has
        keyed.append(((at, 0, rank), info))
    keyed.sort(key=lambda pair: pair[0])
    entries = [to_entry(info) for _, info in keyed]
    return entries[:max_count] if max_count is not None else entries


def refresh_commit_graph(store: GitStore) -> None:
    """Keep a commit-graph with changed-path Bloom filters up to date (incremental)."""
    try:
        store.git("commit-graph", "write", "--reachable", "--changed-paths", "--split")
    except Exception:  # noqa: BLE001 - an optimisation; never fail a command over it
        return
