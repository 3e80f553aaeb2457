"""git's machine-readable outputs that evolve reads: `status --porcelain=v1 -z`,
`ls-tree -r -z` and `cat-file --batch`. The store and the reading commands' fast path run git
each in their own way (GitPython's `git`, a spawned process) and read its answer here."""

from __future__ import annotations

import os

#: What the git processes evolve starts add to git's environment: replace refs
#: (`refs/replace/`, `git replace --graft`) and grafts (`info/grafts`) are not honoured, so a
#: commit, tree or blob reads as it is stored (see `evolve.store._committed`). The graft file
#: named cannot exist (a file under `/dev/null`): git reads no grafts, and says nothing (an
#: empty graft file that exists makes git print its deprecation hint). The store (every git
#: process it starts), the reading commands' fast path (`evolve.quick._git`) and the
#: experiments' arms (`evolve.compare._cells`) start git with it.
COMMITTED_ENV = {
    "GIT_NO_REPLACE_OBJECTS": "1",
    "GIT_GRAFT_FILE": os.path.join(os.devnull, "no-grafts"),
    # No optional lock: a `git status` evolve stops early (a reading command handing over to
    # the full one) never leaves an `index.lock` behind for the next git command to trip on.
    "GIT_OPTIONAL_LOCKS": "0",
}


def committed_env() -> dict[str, str]:
    """The process's environment with :data:`COMMITTED_ENV` added."""
    return {**os.environ, **COMMITTED_ENV}


def status_paths(out: str) -> list[str]:
    """Paths with changes in `git status --porcelain=v1 -z` output (a rename's source, the
    entry after it, is not listed)."""
    dirty: list[str] = []
    skip = False
    for entry in out.split("\x00"):
        if not entry:
            continue
        if skip:
            skip = False
            continue
        status, path = entry[:2], entry[3:]
        if "R" in status or "C" in status:
            skip = True  # the next entry is the rename source
        dirty.append(path)
    return dirty


def status_paths_ignored(out: str) -> tuple[list[str], bool]:
    """(paths with changes, whether any ignored file is there) in the output of
    `git status --porcelain=v1 -z --ignored --no-renames`."""
    dirty, ignored = [], False
    for entry in out.split("\x00"):
        if not entry:
            continue
        if entry.startswith("!!"):
            ignored = True
        else:
            dirty.append(entry[3:])
    return dirty, ignored


def tree_blobs(listing: str) -> list[tuple[str, str]]:
    """(path, blob id) of every file in `git ls-tree -r -z` output."""
    entries = []
    for item in listing.split("\x00"):
        meta, _, path = item.partition("\t")
        parts = meta.split()
        if len(parts) == 3 and parts[1] == "blob":
            entries.append((path, parts[2]))
    return entries


def batch_request(entries: list[tuple[str, str]]) -> bytes:
    """What `git cat-file --batch` reads to answer `entries` (path, object id)."""
    return "".join(f"{sha}\n" for _, sha in entries).encode("ascii")


def batch_contents(raw: bytes, entries: list[tuple[str, str]]) -> dict[str, bytes]:
    """Each entry's content (by path) in `git cat-file --batch` output for `entries`.

    Raises:
        LookupError: an object git did not find.
    """
    out, pos = {}, 0
    for path, _ in entries:
        header_end = raw.index(b"\n", pos)
        header = raw[pos:header_end].split()
        if len(header) != 3:
            raise LookupError(f"git has no object for {path}")
        start = header_end + 1
        size = int(header[2])
        out[path] = raw[start : start + size]
        pos = start + size + 1
    return out


def history_rewritten(common_dir: str) -> bool:
    """Whether git may show a commit otherwise than it is stored (replace refs, grafts, a
    shallow clone's edge): then what a commit id shows can change, and nothing kept per commit
    (the log cache, the writers' digests) may be trusted."""
    import os

    if os.environ.get("GIT_REPLACE_REF_BASE") or os.environ.get("GIT_GRAFT_FILE"):
        return True
    if os.path.exists(os.path.join(common_dir, "info", "grafts")) or os.path.exists(
        os.path.join(common_dir, "shallow")
    ):
        return True
    if any(files for _, _, files in os.walk(os.path.join(common_dir, "refs", "replace"))):
        return True
    try:
        with open(os.path.join(common_dir, "packed-refs"), "rb") as f:
            return b" refs/replace/" in f.read()
    except OSError:
        return False
