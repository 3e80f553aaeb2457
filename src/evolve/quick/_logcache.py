"""A full `evolve log --json` / `--jsonl`, streamed in constant memory, with what it prints of
each commit remembered in `.git/evolve-log.cache`.

A commit never changes, so what the log prints of it never does either. The cache is one
text file: a header line (this code's stamp and the commit it covers up to, its *tip*), then
one line per commit of the tip's history, newest first: `<id> <parents> <0|1> <JSON entry>`
(the 1 for a commit that changed memory/ or prompts/; a JSON entry holds no newline). A
full log then reads the commits since the tip (`git log --boundary TIP..HEAD`, which also
proves TIP an ancestor of HEAD with single-parent commits in between) and streams the file
after them, line by line; a moved HEAD rewrites the file the same way, as it streams.
Anything else (no file, another format or code, a reset, a rebase) walks the whole history
as it streams, writing the file as it goes. The file is renamed into place when whole (a
reader sees the old or the new one); it is never needed: without it the log reads every
message. Under replace refs, grafts or a shallow clone it is neither read nor written.

A merge in the history is :class:`Unhandled`, found before anything is printed (the full
command answers; git's history simplification decides what it shows).
"""

from __future__ import annotations

import os

from evolve._confine import open_own
from evolve.quick._git import Repo, Unhandled

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator
    from typing import IO

    from evolve.quick._log import Commit

LOG_CACHE = "evolve-log.cache"
_FORMAT = 2
_MAGIC = "evolve-log-cache"
_BATCH = 512  # commits evolve did not make, asked of git (`diff-tree`) together
_HOLD = 4_096  # commits held at most while one of them waits for that answer
_SINCE = 4_096  # new commits read ahead of the file at most (more: the whole walk streams)
Entry = tuple[str, int, bool, str]  # id, parents, changed memory/ or prompts/, JSON entry


def _stamp() -> str:
    """What a cached entry depends on besides the commit: the code that writes an entry (the
    bytes of every module of `evolve.quick` and `evolve._format`, through the one code-version
    helper of `evolve._format._cache`), as one word: any change to them misses the file."""
    import hashlib

    from evolve._format._cache import code_version

    folder = os.path.dirname(os.path.dirname(__file__))
    paths = sorted(
        os.path.join(folder, sub, name)
        for sub in ("quick", "_format")
        for name in os.listdir(os.path.join(folder, sub))
        if name.endswith(".py")
    )
    h = hashlib.blake2b(str(_FORMAT).encode(), digest_size=12)
    for path, (_, _, digest) in sorted(code_version(paths).items()):
        h.update(os.path.relpath(path, folder).encode() + digest)
    return h.hexdigest()


def _sealed(head: str) -> str | None:
    """The header's word for `head`: the code stamp and `head` under this user's seal
    (`evolve._format._cache.seal`), so a cache file written elsewhere (a `.git/` from someone
    else) is never read; None when there is no key (then no cache)."""
    from evolve._format._cache import sign

    mac = sign(f"{_stamp()} {head}".encode())
    return None if mac is None else mac.hex()


def _replaced(repo: Repo) -> bool:
    """Whether git may show a commit with other parents than it has (replace refs, grafts,
    a shallow clone): then what a commit id shows can change, and the cache is not used."""
    from evolve._format._git import history_rewritten

    return history_rewritten(repo.common_dir)


def tip(repo: Repo) -> str | None:
    """The commit the cache covers up to, or None when there is none usable."""
    found = _open(repo)
    if found is None:
        return None
    found[1].close()
    return found[0]


def _open(repo: Repo) -> tuple[str, IO[str]] | None:
    """(tip, the file positioned at its first entry), or None."""
    if _replaced(repo):
        return None
    try:
        fd = open_own(os.path.join(repo.git_dir, LOG_CACHE))  # no link followed
        f = os.fdopen(fd, encoding="utf-8", newline="\n")  # noqa: SIM115
    except OSError:
        return None
    try:
        header = f.readline(512).split(" ")  # bounded: another format may have no newline
    except (OSError, ValueError):
        f.close()
        return None
    if len(header) != 3 or header[0] != _MAGIC or header[1] != _sealed(header[2].rstrip("\n")):
        f.close()
        return None
    return header[2].rstrip("\n"), f


def _parse(line: str) -> Entry | None:
    parts = line.rstrip("\n").split(" ", 3)
    if len(parts) != 4 or not parts[1].isdigit() or parts[2] not in ("0", "1"):
        return None
    return parts[0], int(parts[1]), parts[2] == "1", parts[3]


class _Writer:
    """The new cache file, written as the log streams; put in place by `done()`."""

    def __init__(self, repo: Repo, head: str) -> None:
        self.path = os.path.join(repo.git_dir, LOG_CACHE)
        self.tmp = f"{self.path}.{os.getpid()}.tmp"
        self.f: IO[str] | None = None
        word = _sealed(head)
        if word is None:  # no key to seal with: no cache
            return
        try:
            fd = open_own(self.tmp, write=True)  # a planted link is never written through
            self.f = os.fdopen(fd, "w", encoding="utf-8", newline="\n")  # noqa: SIM115
            self.f.write(f"{_MAGIC} {word} {head}\n")
        except OSError:
            self.f = None

    def add(self, entry: Entry) -> None:
        if self.f is None:
            return
        sha, parents, tracked, line = entry
        try:
            self.f.write(f"{sha} {parents} {int(tracked)} {line}\n")
        except OSError:
            self.abandon()

    def done(self) -> None:
        if self.f is None:
            return
        try:
            self.f.close()
            os.replace(self.tmp, self.path)
        except OSError:
            self.abandon()
        self.f = None

    def abandon(self) -> None:
        if self.f is not None:
            try:  # noqa: SIM105 - contextlib costs start-up here
                self.f.close()
            except OSError:
                pass
            self.f = None
        try:  # noqa: SIM105 - contextlib costs start-up here
            os.unlink(self.tmp)
        except OSError:
            pass


def _entries(repo: Repo, commits: Iterable[Commit], esc: Callable[[str], str]) -> Iterator[Entry]:
    """The cache entries of `commits` (newest first, none a merge), in order; commits evolve
    did not make are asked of git (`diff-tree`) in batches, so at most `_HOLD` commits are
    held."""
    from evolve.quick._log import _made_by_evolve, _touching, json_line

    held: list[tuple[Commit, bool]] = []  # (commit, settled) in order
    unsure: list[str] = []

    def flush() -> Iterator[Entry]:
        touched = _touching(repo, unsure)
        for c, settled in held:
            tracked = bool(c.parents) and (settled or c.sha in touched)
            yield c.sha, len(c.parents), tracked, json_line(c, esc)
        held.clear()
        unsure.clear()

    for c in commits:
        if len(c.parents) > 1:
            raise Unhandled("a merge: git's history simplification decides")
        settled = not c.parents or _made_by_evolve(c)
        if not settled:
            unsure.append(c.sha)
        held.append((c, settled))
        if not unsure or len(unsure) >= _BATCH or len(held) >= _HOLD:
            yield from flush()
    yield from flush()


def _since(repo: Repo, tip: str) -> list[Commit] | None:
    """The commits of HEAD after `tip`, newest first, when HEAD's history is `tip`'s plus
    at most `_SINCE` single-parent commits; None otherwise."""
    from evolve.quick._git import GitError
    from evolve.quick._log import LOG_FORMAT, LOG_OPTIONS, Commit

    if not (len(tip) in (40, 64) and all(ch in "0123456789abcdef" for ch in tip)):
        return None
    run = repo.stream(
        "log", "--boundary", "-z", f"--format=%m%x00{LOG_FORMAT}", *LOG_OPTIONS,
        "--end-of-options", f"{tip}..HEAD",
    )  # fmt: skip
    new: list[Commit] = []
    boundary: list[str] = []
    fields: list[bytes] = []
    rest = b""
    try:
        for chunk in run.chunks():
            parts = (rest + chunk).split(b"\x00")
            rest = parts.pop()
            fields += parts
            whole = len(fields) - len(fields) % 5
            for n in range(0, whole, 5):
                c = Commit(*fields[n + 1 : n + 5])
                if fields[n] == b"-":
                    boundary.append(c.sha)
                elif len(c.parents) != 1 or len(new) >= _SINCE:
                    return None  # a merge, or so many that the whole walk streams them
                else:
                    new.append(c)
            del fields[:whole]
        run.finish()
    except GitError:
        return None  # `tip` is gone (a gc after a reset)
    finally:
        run.kill()
    if fields or rest:
        return None
    return new if boundary == [tip] else None


def _records(repo: Repo) -> dict[str, list[Commit]]:
    """The refusal records `evolve.history.history` places beside the commits, by the commit
    they were refused on (`Evolve-Base`), each base's in the records ref's order."""
    from evolve._format._message import BASE, KIND
    from evolve.quick._log import REFUSAL_KIND, TRAIN_REF, log

    if repo.read_ref(TRAIN_REF) is None:
        return {}
    by_base: dict[str, list[Commit]] = {}
    for c in log(repo, TRAIN_REF, "--fixed-strings", f"--grep={KIND}: {REFUSAL_KIND}"):
        if c.trailers.get(KIND) == REFUSAL_KIND:
            by_base.setdefault(c.trailers.get(BASE, ""), []).append(c)
    return by_base


def stream_lines(repo: Repo, encoder: Callable[[], Callable[[str], str]]) -> Iterator[str]:
    """Every JSON entry `evolve log -n 0 --json` prints, in its order (refusal records
    included), as an iterator that holds a batch of commits at most. Whatever may be
    :class:`Unhandled` is found before this returns, so nothing is printed then. A history
    with a merge is read uncached, with git's pathspec walk (as the full command reads it).
    `encoder()` gives the JSON string encoder.
    """
    from evolve.quick._log import LOG_FORMAT, LOG_OPTIONS, json_line, walk

    head = repo.head()
    if head is None:
        return iter(())
    esc = encoder()
    usable = not _replaced(repo)
    found = _open(repo) if usable else None  # noqa: SIM115 - closed by `cached`
    new: list[Commit] | None = None
    if found is not None:
        if found[0] != head:
            new = _since(repo, found[0])
            if new is None:
                found[1].close()
                found = None
        else:
            new = []
    # No merge anywhere in HEAD's history: checked before anything is printed.
    if found is None and repo.git("rev-list", "--min-parents=2", "--max-count=1", "HEAD").strip():
        # Two learners' work merged: git's pathspec walk decides, read uncached.
        from evolve.quick._log import history

        return iter([json_line(c, esc) for c in history(repo, None)])
    records = _records(repo)
    writer = _Writer(repo, head) if usable and (found is None or new) else None

    def cached(f: IO[str]) -> Iterator[Entry]:
        with f:
            for line in f:
                entry = _parse(line)
                if entry is None:
                    raise Unhandled("an unreadable log cache")
                yield entry

    def source() -> Iterator[Entry]:
        if found is not None:
            yield from _entries(repo, new or (), esc)
            yield from cached(found[1])
            return
        run = repo.stream(
            "log", "-z", f"--format={LOG_FORMAT}", *LOG_OPTIONS, "--end-of-options", "HEAD"
        )
        try:
            yield from _entries(repo, walk(run), esc)
        finally:
            run.kill()

    def lines() -> Iterator[str]:
        complete = False
        try:
            for entry in source():
                if writer is not None:
                    writer.add(entry)
                for record in records.pop(entry[0], ()):
                    yield json_line(record, esc)
                if entry[1] and entry[2]:
                    yield entry[3]
            complete = True
        finally:
            if writer is not None:
                if complete:
                    writer.done()
                else:
                    writer.abandon()

    return lines()
