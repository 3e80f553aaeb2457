"""What `evolve log --json` prints of each commit, remembered in `.git/evolve-log.cache`.

A commit never changes, so what the log prints of it never does either: the cache maps a
commit id to (its number of parents, whether it changed memory/ or prompts/, its JSON entry).
A full `evolve log -n 0 --json` then asks git only for the list of commits
(`git rev-list --parents HEAD`, read from the commit-graph) and reads messages only for the
commits it has not seen. The file is written atomically (a reader sees the old or the new
one); a corrupt, foreign or outdated file (another evolve, another format) is ignored and
rewritten; it is never needed: without it the log reads every message, as before.
"""

from __future__ import annotations

import os

from evolve.quick._git import Repo, Unhandled

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from evolve.quick._log import Commit

LOG_CACHE = "evolve-log.cache"
_FORMAT = 1
Record = tuple[int, bool, str]  # parents, changed memory/ or prompts/, JSON entry
# Entries beyond twice this history's length plus this many are pruned at the next write.
PRUNE_SLACK = 1_000


def _stamp() -> tuple[object, ...]:
    """What a cached entry depends on besides the commit: this code (its version and the
    sources that write an entry)."""
    from evolve import __version__

    here = os.path.dirname(__file__)
    out: list[object] = [_FORMAT, __version__]
    for name in ("_message.py", "_log.py", "_logcache.py"):
        try:
            st = os.stat(os.path.join(here, name))
            out += [st.st_mtime_ns, st.st_size]
        except OSError:
            out += [0, 0]
    return tuple(out)


def _replaced(repo: Repo) -> bool:
    """Whether git may show a commit with other parents than it has (replace refs, grafts,
    a shallow clone): then what a commit id shows can change, and the cache is not used."""
    if os.environ.get("GIT_REPLACE_REF_BASE") or os.environ.get("GIT_GRAFT_FILE"):
        return True
    common = repo.common_dir
    if os.path.exists(os.path.join(common, "info", "grafts")) or os.path.exists(
        os.path.join(common, "shallow")  # a shallow clone's edge shows no parents, for now
    ):
        return True
    if any(files for _, _, files in os.walk(os.path.join(common, "refs", "replace"))):
        return True
    try:
        with open(os.path.join(common, "packed-refs"), "rb") as f:
            return b" refs/replace/" in f.read()
    except OSError:
        return False


def load(repo: Repo) -> dict[str, Record] | None:
    """The cache, or None when there is none (or it cannot be used)."""
    import marshal

    if _replaced(repo):
        return None
    try:
        with open(os.path.join(repo.git_dir, LOG_CACHE), "rb") as f:
            data = marshal.loads(f.read())
    except (OSError, EOFError, ValueError, TypeError):
        return None
    if not isinstance(data, tuple) or len(data) != 2 or data[0] != _stamp():
        return None
    entries = data[1]
    return entries if isinstance(entries, dict) else None


def save(repo: Repo, entries: dict[str, Record]) -> None:
    """Write the cache atomically; never fails the command (no cache is only slower)."""
    import marshal

    path = os.path.join(repo.git_dir, LOG_CACHE)
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        with open(tmp, "wb") as f:
            f.write(marshal.dumps((_stamp(), entries)))  # type: ignore[arg-type]
        os.replace(tmp, path)
    except OSError:
        try:  # noqa: SIM105 - contextlib costs start-up here
            os.unlink(tmp)
        except OSError:
            pass


def _valid(record: object) -> bool:
    return (
        isinstance(record, tuple)
        and len(record) == 3
        and isinstance(record[0], int)
        and isinstance(record[1], bool)
        and isinstance(record[2], str)
    )


def all_lines(repo: Repo, encoder: Callable[[], Callable[[str], str]]) -> list[str] | None:
    """Every JSON entry `evolve log -n 0 --json` prints, in its order (refusal records
    included), from the cache and git's list of commits; None when there is no cache yet
    (the caller reads every message and calls :func:`remember`). `encoder()` gives the JSON
    string encoder, asked for only when an entry must be written (a new commit, a record).

    Raises:
        Unhandled: a merge in the history.
    """
    from evolve.quick._log import (
        LOG_FORMAT,
        LOG_OPTIONS,
        TRAIN_REF,
        _made_by_evolve,
        _records,
        _touching,
        json_line,
        place_records,
    )

    if not os.path.exists(os.path.join(repo.git_dir, LOG_CACHE)):
        return None
    listing = repo.start("rev-list", "--parents", "HEAD")  # git lists while the cache loads
    try:
        cache = load(repo)
        if cache is None:
            return None
        out = listing.wait().decode("ascii").splitlines()
    finally:
        listing.kill()
    order = [line[: line.find(" ")] if " " in line else line for line in out]
    if any(line.count(" ") > 1 for line in out):
        raise Unhandled("a merge: git's history simplification decides")
    get = cache.get
    missing = [sha for sha in order if not _valid(get(sha))]
    if missing:
        esc = encoder()
        raw = repo.git(
            "log", "--no-walk=unsorted", "--stdin", "-z", f"--format={LOG_FORMAT}", *LOG_OPTIONS,
            input="".join(f"{sha}\n" for sha in missing).encode("ascii"),
        )  # fmt: skip
        fields = raw.split(b"\x00")
        if len(fields) % 4 != 1 or fields[-1]:
            raise Unhandled("unreadable git log output")
        fresh = list(_records(fields))
        if [c.sha for c in fresh] != missing:
            raise Unhandled("git listed other commits")
        unsure = [
            c.sha for c in fresh if c.parents and len(c.parents) < 2 and not _made_by_evolve(c)
        ]
        touched = _touching(repo, unsure)
        for c in fresh:
            evolve_made = c.sha not in unsure
            cache[c.sha] = (len(c.parents), evolve_made or c.sha in touched, json_line(c, esc))
        if len(cache) > 2 * len(order) + PRUNE_SLACK:
            # Mostly commits no longer on this branch (rebases, amends, resets): keep this
            # history's, so the file does not grow without end.
            cache = {sha: cache[sha] for sha in order}
        save(repo, cache)
    records = [cache[sha] for sha in order]
    found = [sha for sha, r in zip(order, records, strict=True) if r[0] and r[1]]
    if repo.read_ref(TRAIN_REF) is None:  # no refusal records: the commits, in order
        return [r[2] for r in records if r[0] and r[1]]
    position = {sha: i for i, sha in enumerate(order)}
    lines: list[tuple[int, int, int, str]] = [(position[sha], 1, 0, cache[sha][2]) for sha in found]
    esc = encoder()
    for at, rank, record in place_records(repo, found, position, None):
        lines.append((at, 0, rank, json_line(record, esc)))
    lines.sort(key=lambda item: item[:3])
    return [line for *_, line in lines]


def remember(
    repo: Repo, walked: list[Commit], tracked: set[str], esc: Callable[[str], str]
) -> dict[str, Record]:
    """Start the cache from a full walk (every commit of HEAD, newest first); returns it.
    Under replace refs or grafts nothing is written: what git showed is not what the
    commits hold."""
    from evolve.quick._log import json_line

    entries = {c.sha: (len(c.parents), c.sha in tracked, json_line(c, esc)) for c in walked}
    if not _replaced(repo):
        save(repo, entries)
    return entries
