"""Updating git's index for the paths a commit changed, from Python, without a process.

After the store's fast commit, the index must agree with the new HEAD for the committed paths
(so `git status` is clean). `git update-index --add --remove -- PATHS` does that, but a git
process is a third of an episode's commit at a thousand units. This module does what that
command does for the common index: it rewrites the entries of those paths with the blob ids
the commit just stored and the stat data taken before the files were read, and invalidates the
cache-tree along those paths, under git's own `index.lock` protocol.

It handles index versions 2 and 3 only, and declines (the caller then runs git) whenever the
index holds anything it does not fully understand: version 4, a required extension (split
index `link`, sparse directories `sdir`), an entry of a changed path in a conflict stage or
with flags (assume-valid, skip-worktree, intent-to-add), a path that is a directory in the
index or under a file of it, an index named by `GIT_INDEX_FILE`, or `core.fileMode` /
`core.symlinks` / `core.ignoreCase` / `core.sharedRepository` / `core.fsync` settings git
would apply. Optional extensions that hold offsets or per-entry data (`EOIE`, `IEOT`,
`FSMN`, `UNTR`) are dropped, as git allows: git rebuilds them when it wants them. `REUC` is
kept as it is; an optional extension git does not know is dropped, as git drops it (a newer
git's extension may describe the entries, which changed).

Stat data: each entry records the `lstat` taken *before* its file was read for the blob, so a
change made after that read leaves a mismatch that git sees; a change in the same timestamp
tick is caught by git's racy-entry check, since the index is written after the files.
"""

from __future__ import annotations

import hashlib
import os
import struct
import time
from bisect import bisect_left
from collections.abc import Mapping
from pathlib import Path

from evolve._io import io_fault

# (mode, raw object id, lstat before reading) for a path present in the commit; None: removed.
Change = tuple[int, bytes, os.stat_result] | None

_HEADER = struct.Struct(">4sII")
_STAT = struct.Struct(">10I")
_KEPT = {b"TREE", b"REUC"}
_MASK = 0xFFFFFFFF
# How long to wait for another process's `index.lock` before giving up (git's own commands
# hold it for milliseconds; a lock held longer is reported by the caller).
LOCK_WAIT_S = 2.0


class Declined(Exception):
    """The index holds something this module does not rewrite; let git do it."""


def _entry(path: bytes, mode: int, oid: bytes, st: os.stat_result) -> bytes:
    stat = _STAT.pack(
        (st.st_ctime_ns // 1_000_000_000) & _MASK,
        st.st_ctime_ns % 1_000_000_000,
        (st.st_mtime_ns // 1_000_000_000) & _MASK,
        st.st_mtime_ns % 1_000_000_000,
        st.st_dev & _MASK,
        st.st_ino & _MASK,
        mode,
        st.st_uid & _MASK,
        st.st_gid & _MASK,
        st.st_size & _MASK,
    )
    flags = min(len(path), 0xFFF)
    body = stat + oid + struct.pack(">H", flags) + path
    return body + b"\0" * (8 - len(body) % 8)


def _parse_entries(
    data: bytes, count: int, rawlen: int
) -> tuple[list[tuple[bytes, int]], list[int], list[int]]:
    """The entries' (path, stage) keys, their flags, and their offsets (one more than the
    entries: the last is where the extensions start)."""
    keys: list[tuple[bytes, int]] = []
    flag_list: list[int] = []
    offsets: list[int] = []
    pos = _HEADER.size
    fixed = 40 + rawlen
    unpack = struct.Struct(">H").unpack_from
    for _ in range(count):
        (flags,) = unpack(data, pos + fixed)
        name_at = pos + fixed + (4 if flags & 0x4000 else 2)
        length = flags & 0xFFF
        end = name_at + length if length < 0xFFF else data.index(b"\0", name_at)
        keys.append((data[name_at:end], (flags >> 12) & 3))
        flag_list.append(flags)
        offsets.append(pos)
        pos += (end - pos + 8) & ~7
    offsets.append(pos)
    return keys, flag_list, offsets


def _invalidate_tree(data: bytes, paths: list[bytes], rawlen: int) -> bytes:
    """The `TREE` extension with every directory along `paths` marked invalid (git drops the
    object id of an invalidated node and sets its entry count to -1)."""
    nodes: list[tuple[bytes, int, int, bytes]] = []
    pos = 0
    while pos < len(data):
        nul = data.index(b"\0", pos)
        name = data[pos:nul]
        newline = data.index(b"\n", nul)
        count_text, _, sub_text = data[nul + 1 : newline].partition(b" ")
        count, subtrees = int(count_text), int(sub_text)
        pos = newline + 1
        oid = b""
        if count >= 0:
            oid = data[pos : pos + rawlen]
            pos += rawlen
        nodes.append((name, count, subtrees, oid))
    # The nodes are a pre-order walk: node, then its `subtrees` children, each with theirs.
    dirty = {b""}
    for path in paths:
        parts = path.split(b"/")[:-1]
        dirty.update(b"/".join(parts[: i + 1]) for i in range(len(parts)))
    out: list[bytes] = []
    stack: list[tuple[bytes, int]] = []  # (directory path, children still to read)
    for name, count, subtrees, oid in nodes:
        while stack and stack[-1][1] == 0:
            stack.pop()
        if stack:
            parent, left = stack[-1]
            stack[-1] = (parent, left - 1)
            full = parent + b"/" + name if parent else name
        else:
            full = b""
        stack.append((full, subtrees))
        if full in dirty:
            out.append(name + b"\0-1 %d\n" % subtrees)
        else:
            out.append(name + b"\0%d %d\n" % (count, subtrees) + oid)
    return b"".join(out)


def _extensions(data: bytes, start: int, end: int) -> list[tuple[bytes, bytes]]:
    out = []
    pos = start
    while pos < end:
        if pos + 8 > end:
            raise Declined("a truncated extension")
        sig = data[pos : pos + 4]
        (size,) = struct.unpack_from(">I", data, pos + 4)
        out.append((sig, data[pos + 8 : pos + 8 + size]))
        pos += 8 + size
    if pos != end:
        raise Declined("extensions do not end at the checksum")
    return out


def update_index(
    index: Path,
    changes: Mapping[str, Change],
    *,
    object_format: str,
    config: Mapping[str, str | None],
) -> None:
    """Rewrite the entries of `changes` in the index at `index`, like `git update-index
    --add --remove -- PATHS` after those files were committed.

    Raises:
        Declined: the index or the settings call for git itself (nothing was written).
        FileExistsError: another process held `index.lock` for longer than `LOCK_WAIT_S`.
    """
    if "GIT_INDEX_FILE" in os.environ:
        raise Declined("GIT_INDEX_FILE names another index")
    for key, default in (("core.filemode", True), ("core.symlinks", True)):
        if _bool(config, key, default) is not default:
            raise Declined(f"{key} is set")
    if _bool(config, "core.ignorecase", False):
        raise Declined("core.ignorecase is set")
    for key in ("core.sharedrepository", "core.fsync", "core.fsyncobjectfiles"):
        if config.get(key, "false") not in ("false", "0", "no", "off", "umask"):
            raise Declined(f"{key} is set (file modes or fsync git applies to the index)")
    rawlen = 32 if object_format == "sha256" else 20
    if not index.is_file():
        raise Declined("no index yet")
    # git's lock first, then the read: a git process that changed the index before we got
    # the lock is not overwritten with what we read before it.
    lock = index.with_name(index.name + ".lock")
    fd = _take_lock(lock)
    try:
        with os.fdopen(fd, "wb") as handle:
            try:
                out = _rewritten(index.read_bytes(), changes, rawlen)
            except (struct.error, ValueError, IndexError) as exc:
                raise Declined(f"an index this module cannot read ({exc})") from None
            handle.write(out)
        os.replace(lock, index)
    except BaseException:
        lock.unlink(missing_ok=True)
        raise


def _take_lock(lock: Path) -> int:
    """Create `lock` (git's protocol), waiting up to `LOCK_WAIT_S` for a git process that
    holds it (a user's `git add` or `git status` racing the commit holds it for milliseconds;
    failing at once would leave the index behind the commit just made).

    Raises:
        FileExistsError: the lock is still held after the wait.
    """
    flags = os.O_CREAT | os.O_EXCL | os.O_WRONLY | getattr(os, "O_CLOEXEC", 0)
    deadline = time.monotonic() + LOCK_WAIT_S
    io_fault(lock)
    while True:
        try:
            return os.open(lock, flags, 0o666)
        except FileExistsError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.01)


def _rewritten(data: bytes, changes: Mapping[str, Change], rawlen: int) -> bytes:
    """The index `data` with the entries of `changes` rewritten."""
    if len(data) < _HEADER.size + rawlen:
        raise Declined("a truncated index")
    sig, version, count = _HEADER.unpack_from(data)
    if sig != b"DIRC" or version not in (2, 3):
        raise Declined(f"index version {version}")
    trailer = data[-rawlen:]
    digest = hashlib.sha256 if rawlen == 32 else hashlib.sha1
    skip_hash = trailer == b"\0" * rawlen
    if not skip_hash and digest(data[:-rawlen]).digest() != trailer:
        raise Declined("the index checksum does not match")
    keys, flags, offsets = _parse_entries(data, count, rawlen)
    exts = _extensions(data, offsets[-1], len(data) - rawlen)
    for ext, _ in exts:
        if not b"A" <= ext[:1] <= b"Z":
            raise Declined(f"the required extension {ext!r}")
    changed = {p.encode("utf-8", "surrogateescape"): c for p, c in changes.items()}
    # Entries are sorted by path, then stage (0 normally; 1-3 for a conflict): each change
    # replaces, removes or inserts one entry, found by bisection; the rest is copied as is.
    edits: list[tuple[int, int, bytes, bytes]] = []  # (index, 0 insert / 1 replace, path, entry)
    for path in sorted(changed):
        change = changed[path]
        i = bisect_left(keys, (path, 0))
        j = i
        while j < len(keys) and keys[j][0] == path:
            if flags[j] & 0xF000:  # assume-valid, extended flags, or a conflict stage
                raise Declined(f"{path!r} has flags or a conflict stage")
            j += 1
        exists = j > i
        if change is None:
            if exists:
                edits.append((i, 1, path, b""))
            continue
        parts = path.split(b"/")
        for n in range(1, len(parts)):
            k = bisect_left(keys, (b"/".join(parts[:n]), 0))
            if k < len(keys) and keys[k][0] == b"/".join(parts[:n]):
                raise Declined(f"{path!r} is under a file of the index")
        k = bisect_left(keys, (path + b"/", 0))
        if k < len(keys) and keys[k][0].startswith(path + b"/"):
            raise Declined(f"{path!r} is a directory in the index")
        mode, oid, st = change
        edits.append((i, 1 if exists else 0, path, _entry(path, mode, oid, st)))
    pieces: list[bytes] = []
    at = 0  # the next existing entry to copy
    total = len(keys)
    for i, replace, _, entry in sorted(edits):
        pieces.append(data[offsets[at] : offsets[i]])
        pieces.append(entry)
        at = i + replace
        total += (0 if entry else -1) if replace else 1
    pieces.append(data[offsets[at] : offsets[-1]])
    kept: list[bytes] = []
    for ext, body in exts:
        if ext not in _KEPT:
            continue
        if ext == b"TREE":
            try:
                body = _invalidate_tree(body, sorted(changed), rawlen)
            except (ValueError, IndexError):
                continue  # unreadable: drop it, git rebuilds the cache-tree when it commits
        kept.append(ext + struct.pack(">I", len(body)) + body)
    out = b"".join([_HEADER.pack(b"DIRC", version, total), *pieces, *kept])
    return out + (b"\0" * rawlen if skip_hash else digest(out).digest())


def _bool(config: Mapping[str, str | None], key: str, default: bool) -> bool:
    if key not in config:
        return default
    value = config[key]
    if value is None:
        return True
    return value.strip().lower() in ("true", "yes", "on", "1")
