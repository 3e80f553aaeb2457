"""What a writer needs from history, kept per commit so that no writer walks all of it.

A *digest* is a small JSON value folded over the commits of HEAD, newest first (the revert
commits no evolve commit answered yet, the last episode of each training stream). It is
remembered in `.git/evolve-<name>.digest` with the commit it covers up to (its *tip*). The
next command reads only the commits since: `git log --boundary TIP..HEAD` lists them and
proves TIP an ancestor of HEAD in the same process (TIP is the walk's only boundary commit
exactly when HEAD's history extends TIP's by single-parent commits). Anything else (a reset
to an older commit, a rebase, an amend, a merge, a missing or unreadable file, another
format) folds the whole history again from nothing, as a command without the file does, and
remembers the result. A few tips are kept, so a reset back to a commit some command saw
(a rejected generation returns to its base) is answered from what was kept for it.

Replace refs, grafts and shallow clones change what a commit id shows; with any of them the
file is neither read nor written.

A digest must be a function of the commits alone, and a fold of the commits since TIP over
TIP's digest must give what a fold of the whole history gives: both hold for folds that only
collect what the newest commits say (as git's `--grep` walks do).
"""

from __future__ import annotations

import json
import marshal
import os
import zlib
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

from evolve._confine import open_own
from evolve._format._git import history_rewritten

if TYPE_CHECKING:
    from evolve.store._git import GitStore
    from evolve.store._history import CommitInfo

T = TypeVar("T")
# (state, the commits to fold in, newest first, each with its raw message) -> new state
Fold = Callable[[T, Iterable[tuple["CommitInfo", str]]], T]

KEEP = 4  # tips remembered per digest
_FORMAT = "%m%x00%H%x00%P%x00%cI%x00%B"  # the boundary mark, then as GitStore.log reads


def _replaced(store: GitStore) -> bool:
    """Whether git may show a commit otherwise than it is (replace refs, grafts, shallow)."""
    return history_rewritten(str(store.common_dir))


def _records(store: GitStore, *rev: str) -> Iterator[tuple[str, CommitInfo, str]]:
    """(boundary mark, commit, raw message) of `git log --boundary REV`, as git streams it."""
    from evolve.store._history import _LOG_OPTIONS, _info, stream_fields

    argv = ["log", "--boundary", "-z", f"--format={_FORMAT}", *_LOG_OPTIONS, "--end-of-options"]
    for mark, sha, parents, when, message in stream_fields(store.root, [*argv, *rev], 5):
        info = _info(sha, parents, when, message)
        yield mark.decode("ascii"), info, message.decode("utf-8", "replace")


# What `_since` read in this process, by (git folder, tip, HEAD): a command's digests (the
# reverts no commit answered, the training streams) mostly stand on the same tip, so the walk
# since it runs once. Commit ids name immutable content, so an entry never goes stale.
_SINCE: dict[tuple[str, str, str], tuple[tuple[CommitInfo, str], ...] | None] = {}
_SINCE_KEPT = 8


def _since(store: GitStore, tip: str, head: str) -> list[tuple[CommitInfo, str]] | None:
    """The commits of `head` after `tip`, newest first, when `head`'s history is `tip`'s plus
    single-parent commits; None otherwise (or when git cannot walk from `tip`). Read once per
    process for each pair (`_SINCE`)."""
    key = (str(store.git_dir), tip, head)
    if key not in _SINCE:
        walked = _walk_since(store, tip)
        while len(_SINCE) >= _SINCE_KEPT:
            del _SINCE[next(iter(_SINCE))]
        _SINCE[key] = None if walked is None else tuple(walked)
    found = _SINCE[key]
    return None if found is None else list(found)


def _walk_since(store: GitStore, tip: str) -> list[tuple[CommitInfo, str]] | None:
    """`_since`'s walk, of HEAD (which `digest` read just before, under the writer lock where
    a writer asks)."""
    from evolve.store._base import GitFailed

    new: list[tuple[CommitInfo, str]] = []
    boundary: list[str] = []
    try:
        for mark, info, message in _records(store, f"{tip}..HEAD"):
            if mark == "-":
                boundary.append(info.sha)
            elif len(info.parents) != 1:
                return None
            else:
                new.append((info, message))
    except GitFailed:
        return None  # `tip` is gone (a gc after a reset), or unreadable
    return new if boundary == [tip] else None


def _load(path: str, version: str) -> list[tuple[str, Any]]:
    try:
        with os.fdopen(open_own(path), encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return []
    if not isinstance(data, dict) or data.get("version") != version:
        return []
    tips = data.get("tips")
    if not isinstance(tips, list):
        return []
    return [
        (t[0], t[1])
        for t in tips
        if isinstance(t, list) and len(t) == 2 and isinstance(t[0], str) and _is_sha(t[0])
    ]


def _is_sha(text: str) -> bool:
    return len(text) in (40, 64) and all(c in "0123456789abcdef" for c in text)


def _save(path: str, version: str, tips: list[tuple[str, Any]]) -> None:
    """Write atomically; never fails the command (without the file the next one walks)."""
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        with os.fdopen(open_own(tmp, write=True), "w", encoding="utf-8") as f:
            json.dump({"version": version, "tips": [list(t) for t in tips[:KEEP]]}, f)
        os.replace(tmp, path)
    except OSError:
        try:  # noqa: SIM105 - contextlib costs start-up here
            os.unlink(tmp)
        except OSError:
            pass


def _code_version(version: str, fold: Callable[..., Any]) -> str:
    """`version` and a checksum of the fold's compiled code: an edit to the fold (or another
    Python) stops an old file from being read, whether or not `version` was bumped."""
    code = getattr(fold, "__code__", None)
    if code is None:
        return version
    return f"{version}:{zlib.crc32(marshal.dumps(code)):08x}"


def digest(
    store: GitStore,
    name: str,
    version: str,
    fold: Fold[T],
    empty: Callable[[], T],
    valid: Callable[[Any], bool],
) -> T:
    """`fold(empty(), every commit of HEAD, newest first)`, from the commits since a kept
    tip where one is an ancestor of HEAD (see the module's docstring). `version` names what
    the fold keeps (the fold's code is checked too); `valid` says whether a value read back
    has the shape the fold gives (one that has not is a damaged file: the history is walked).
    The value must survive a JSON round trip unchanged."""
    head = store.head()
    if head is None:
        return fold(empty(), [])
    usable = not _replaced(store)
    path = str(store.git_dir / f"evolve-{name}.digest")
    version = _code_version(version, fold)
    tips = [t for t in _load(path, version) if valid(t[1])] if usable else []
    state: T | None = None
    for tip, kept in tips:
        if tip == head:
            if tip != tips[0][0]:
                _save(path, version, [(tip, kept), *(t for t in tips if t[0] != tip)])
            return kept  # type: ignore[no-any-return]
    for tip, kept in tips:
        new = _since(store, tip, head)
        if new is not None:
            state = fold(kept, new)
            break
    if state is None:
        state = fold(empty(), ((info, message) for _, info, message in _records(store, "HEAD")))
    if usable:
        _save(path, version, [(head, state), *(t for t in tips if t[0] != head)])
    return state
