"""`evolve log` on the fast path: the same entries as `evolve.history.history`, read with one
streamed `git log` (and, where a commit evolve did not make is met, one `git diff-tree`).

Entries are the JSON objects `LogEntry.to_json` makes. A history with a merge (where git's
history simplification decides what a pathspec walk shows) is read as the full command reads
it: with git's pathspec walk.
"""

from __future__ import annotations

from evolve._format._message import (
    BASE,
    EPISODE,
    KIND,
    OPS,
    RECIPE,
    TASK,
    commit_kind,
    complaint_line,
    parse_ops,
    refused_lines,
    split_message,
)
from evolve.quick._git import Repo, Run, Unhandled

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any

LOG_FORMAT = "%H%x00%P%x00%cI%x00%B"  # as the store reads history
LOG_OPTIONS = ("--encoding=UTF-8", "--no-show-signature")
TRACKED = ("memory", "prompts")
TRAIN_REF = "refs/evolve/train"
REFUSAL_KIND = "refusal"
# as evolve.history._log.EVOLVE_KINDS
EVOLVE_KINDS = frozenset(
    {"train", "learned", "reflector", "revert", "cascade revert", "cascade-revert", "review"}
)


class Commit:
    """One commit as the store's `CommitInfo` holds it."""

    __slots__ = ("body", "parents", "sha", "subject", "time", "trailers")

    def __init__(self, sha: bytes, parents: bytes, when: bytes, message: bytes) -> None:
        self.subject, self.body, self.trailers = split_message(message.decode("utf-8", "replace"))
        self.sha = sha.decode("ascii")
        self.parents = tuple(parents.decode("ascii").split())
        self.time = when.decode("ascii")


def _records(fields: list[bytes]) -> Iterator[Commit]:
    for n in range(0, len(fields) - len(fields) % 4, 4):
        yield Commit(fields[n], fields[n + 1], fields[n + 2], fields[n + 3])


def log(repo: Repo, rev: str, *extra: str, paths: tuple[str, ...] = ()) -> list[Commit]:
    """`git log` of `rev` (of `paths` only, if given), parsed (as `GitStore.log`)."""
    out = repo.git(
        "log", "-z", f"--format={LOG_FORMAT}", *LOG_OPTIONS, *extra, "--end-of-options", rev,
        *(("--", *paths) if paths else ()),
    )  # fmt: skip
    fields = out.split(b"\x00")
    if len(fields) % 4 != 1 or fields[-1]:
        raise Unhandled("unreadable git log output")
    return list(_records(fields))


def walk(run: Run) -> Iterator[Commit]:
    """The commits of a running `git log -z --format=LOG_FORMAT`, as they stream."""
    fields: list[bytes] = []
    rest = b""
    for chunk in run.chunks():
        parts = (rest + chunk).split(b"\x00")
        rest = parts.pop()
        fields += parts
        whole = len(fields) - len(fields) % 4
        yield from _records(fields[:whole])
        del fields[:whole]
    run.finish()
    if fields or rest:
        raise Unhandled("unreadable git log output")


def _made_by_evolve(c: Commit) -> bool:
    kind = c.trailers.get(KIND, "").strip().lower()
    return kind in EVOLVE_KINDS if kind else EPISODE in c.trailers


def _touching(repo: Repo, shas: list[str]) -> set[str]:
    if not shas:
        return set()
    out = repo.git(
        "diff-tree", "--stdin", "-r", "--name-only", "-z", "--no-renames", "--", *TRACKED,
        input="".join(f"{sha}\n" for sha in shas).encode("ascii"),
    )  # fmt: skip
    wanted = set(shas)
    return {t for t in out.decode("utf-8", "surrogateescape").split("\x00") if t in wanted}


def tracked(
    repo: Repo, max_count: int | None, keep: list[Commit] | None = None
) -> tuple[list[Commit], dict[str, int]]:
    """(the commits `evolve.history.tracked_commits` finds, the walk position of every commit
    walked), from one `git log` with no pathspec; `keep` receives every commit walked."""
    need = max_count or None
    found: list[Commit] = []
    unsure: list[Commit] = []
    position: dict[str, int] = {}

    def settle() -> None:
        touched = _touching(repo, [c.sha for c in unsure])
        drop = {c.sha for c in unsure if c.sha not in touched}
        if drop:
            found[:] = [c for c in found if c.sha not in drop]
        unsure.clear()

    run = repo.stream(
        "log", "-z", f"--format={LOG_FORMAT}", *LOG_OPTIONS, "--end-of-options", "HEAD"
    )
    try:
        for c in walk(run):
            position[c.sha] = len(position)
            if keep is not None:
                keep.append(c)
            if len(c.parents) > 1:
                if keep is not None:
                    raise Unhandled("a merge: git's history simplification decides")
                run.kill()
                return _pathspec_walk(repo, max_count)
            if not c.parents:
                continue
            found.append(c)
            if not _made_by_evolve(c):
                unsure.append(c)
            if need is not None and len(found) >= need:
                settle()
                if len(found) >= need:
                    return found[:need], position
    finally:
        run.kill()
    settle()
    return found, position


def _pathspec_walk(repo: Repo, max_count: int | None) -> tuple[list[Commit], dict[str, int]]:
    """A history with a merge (two learners' work): git's pathspec walk decides what
    is shown, as `evolve.history.tracked_commits` lets it; positions are `rev-list HEAD`'s."""
    count = (f"--max-count={max_count}",) if max_count else ()
    found = log(repo, "HEAD", *count, "--min-parents=1", paths=TRACKED)
    order = repo.git("rev-list", "--end-of-options", "HEAD").decode("ascii").split()
    return found, {sha: i for i, sha in enumerate(order)}


def to_json(c: Commit) -> dict[str, Any]:
    """`evolve.history.to_entry(c).to_json()`."""
    t = c.trailers
    episode = t.get(EPISODE)
    return {
        "commit": c.sha,
        "time": c.time,
        "subject": c.subject,
        "episode": int(episode) if episode and episode.isdigit() else None,
        "recipe": t.get(RECIPE),
        "task": t.get(TASK),
        "complaint": complaint_line(c.body),
        "ops": [{"op": op, "id": ident} for op, ident in parse_ops(t.get(OPS, ""))],
        "trailers": dict(t),
        "kind": commit_kind(c),
        "refused": refused_lines(c.body),
    }


def json_line(c: Commit, esc: Callable[[str], str]) -> str:
    """`json.dumps(to_json(c), ensure_ascii=False)`, written directly (`esc` is the JSON
    string encoder that `json.dumps` uses): the same text at a third of the cost."""
    t = c.trailers
    episode = t.get(EPISODE)
    recipe, task, complaint = t.get(RECIPE), t.get(TASK), complaint_line(c.body)
    ops = ", ".join(
        f'{{"op": {esc(op)}, "id": {esc(ident)}}}' for op, ident in parse_ops(t.get(OPS, ""))
    )
    trailers = ", ".join(f"{esc(k)}: {esc(v)}" for k, v in t.items())
    refused = ", ".join(esc(line) for line in refused_lines(c.body))
    return (
        f'{{"commit": {esc(c.sha)}, "time": {esc(c.time)}, "subject": {esc(c.subject)}, '
        f'"episode": {int(episode) if episode and episode.isdigit() else "null"}, '
        f'"recipe": {"null" if recipe is None else esc(recipe)}, '
        f'"task": {"null" if task is None else esc(task)}, '
        f'"complaint": {"null" if complaint is None else esc(complaint)}, '
        f'"ops": [{ops}], "trailers": {{{trailers}}}, "kind": {esc(commit_kind(c))}, '
        f'"refused": [{refused}]}}'
    )


def place_records(
    repo: Repo, infos: list[str], position: dict[str, int], max_count: int | None
) -> list[tuple[int, int, Commit]]:
    """(position, rank, record) of each refusal record that `evolve.history.history` shows
    beside the commits `infos` (ids, in walk order), as it places them."""
    if repo.read_ref(TRAIN_REF) is None:
        return []
    records = [
        c
        for c in log(repo, TRAIN_REF, "--fixed-strings", f"--grep={KIND}: {REFUSAL_KIND}")
        if c.trailers.get(KIND) == REFUSAL_KIND
    ]
    complete = max_count is None or len(infos) < max_count
    horizon = position[infos[-1]] if infos and not complete else len(position)
    placed = []
    for rank, c in enumerate(records):
        at = position.get(c.trailers.get(BASE, ""))
        if at is not None and at <= horizon:
            placed.append((at, rank, c))
    return placed


def path_history(repo: Repo, paths: tuple[str, ...], max_count: int | None) -> list[Commit]:
    """`evolve.history.history(store, paths, max_count=...)`: git's pathspec walk."""
    if repo.head() is None:
        return []
    count = () if max_count is None else (f"--max-count={max_count}",)
    return log(repo, "HEAD", *count, "--min-parents=1", paths=paths)


def history(repo: Repo, max_count: int | None, keep: list[Commit] | None = None) -> list[Commit]:
    """The commits and refusal records `evolve.history.history(store, (), max_count=...,
    refusals=True)` lists, in its order; `keep` receives every commit walked."""
    if repo.head() is None:
        return []
    infos, position = tracked(repo, max_count, keep)
    placed = place_records(repo, [c.sha for c in infos], position, max_count)
    if not placed:
        return infos
    keyed: list[tuple[tuple[int, int, int], Commit]] = [((position[c.sha], 1, 0), c) for c in infos]
    keyed += [((at, 0, rank), c) for at, rank, c in placed]
    keyed.sort(key=lambda pair: pair[0])
    out = [c for _, c in keyed]
    return out[:max_count] if max_count is not None else out
