"""What the judged files look like: the protected paths in a commit's tree, on disk and in the index.

The evolve loop takes a :class:`ProtectedState` at the generation's base, before the candidate
is tested and scored, after it was scored and right before the verdict is applied; the gate
accepts only if all of them agree and none has a problem. A problem is anything that makes
the files on disk differ from what git says was judged, or that hides such a difference:

- a protected file missing from disk or unreadable (a rejection with its reason, never an
  exception);
- a protected file whose bytes differ from the commit, though `git status` may not show it;
- an index flag that hides a protected file from `git status` (skip-worktree or
  assume-unchanged, seen in `git ls-files -v`);
- uncommitted changes or untracked files under a protected path;
- a git set-up that can make git show files other than those committed (`_setup`), unless
  the user trusts it (`--trust-git-config`); then it must not change during the generation.

Every read here is of the committed objects as stored (`evolve.store._committed`): no replace
ref, graft, attribute or filter is honoured, and a file on disk is compared with its commit by
hashing its bytes as git would name them (a CRLF-only difference allowed, never a filter).

Ignored files under a protected path are not a problem, but they are part of the on-disk
digest, so one that appears or changes during the generation is caught like any other edit.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from evolve.gate._setup import git_setup
from evolve.store import GitStore


@dataclass(frozen=True)
class ProtectedState:
    rev: str
    paths: tuple[str, ...]  # the protected prefixes, without trailing slashes
    tree: str  # hash of the protected paths in `rev`'s tree (paths and blob ids)
    files: Mapping[str, str]  # every file on disk under the protected paths -> its digest
    problems: tuple[str, ...]
    # The protected files of `rev` as committed: path -> blob id (what a copy must hold).
    blobs: Mapping[str, str] = field(default_factory=dict)
    # The git set-up that can make git show other files (`_setup.git_setup`), as phrases.
    setup: tuple[str, ...] = ()

    @property
    def disk(self) -> str:
        digest = hashlib.sha256()
        for path, value in sorted(self.files.items()):
            digest.update(f"{path}\0{value}\0".encode("utf-8", "surrogateescape"))
        return digest.hexdigest()


def _clean(paths: Sequence[str]) -> list[str]:
    return [p.rstrip("/") for p in paths if p.strip("/")]


def _disk_files(root: Path, prefixes: Sequence[str]) -> tuple[dict[str, str], list[str]]:
    """Digest every file under `prefixes` (symlinks by their target, never followed)."""
    files: dict[str, str] = {}
    problems: list[str] = []

    def visit(path: Path) -> None:
        rel = path.relative_to(root).as_posix()
        try:
            info = path.lstat()
        except FileNotFoundError:
            return
        except OSError as exc:
            files[rel] = "unreadable"
            problems.append(f"protected file {rel} is unreadable ({exc.strerror or exc})")
            return
        if stat.S_ISLNK(info.st_mode):
            files[rel] = "link:" + os.readlink(path)
        elif stat.S_ISDIR(info.st_mode):
            try:
                children = sorted(path.iterdir())
            except OSError as exc:
                files[rel + "/"] = "unreadable"
                problems.append(f"protected folder {rel} is unreadable ({exc.strerror or exc})")
                return
            for child in children:
                visit(child)
        elif stat.S_ISREG(info.st_mode):
            try:
                data = path.read_bytes()
            except OSError as exc:
                files[rel] = "unreadable"
                problems.append(f"protected file {rel} is unreadable ({exc.strerror or exc})")
                return
            files[rel] = f"{info.st_mode & 0o111:o}:{hashlib.sha256(data).hexdigest()}"
        else:
            files[rel] = f"special:{stat.S_IFMT(info.st_mode):o}"

    for prefix in prefixes:
        visit(root / prefix)
    return files, problems


def _flag_name(tag: str) -> str | None:
    if tag == "H":
        return None
    if tag == "S":
        return "skip-worktree"
    if tag == "s":
        return "skip-worktree and assume-unchanged"
    if tag.islower():
        return "assume-unchanged"
    return f"in index state {tag!r}"


def index_flags(store: GitStore, paths: Sequence[str] = ()) -> dict[str, str]:
    """Index entries under `paths` (all, when empty) with a flag that hides them from
    `git status`, or another state than a plain cached file: path -> what it is."""
    flagged = {}
    for tag, path in store.index_tags(paths):
        name = _flag_name(tag)
        if name is not None:
            flagged[path] = name
    return flagged


def _same_as_committed(store: GitStore, root: Path, path: str, blob: str) -> bool:
    """Whether the file on disk holds the committed blob's bytes (or differs only by CRLF
    line ends, which a checkout on another platform may write)."""
    try:
        data = (root / path).read_bytes()
    except OSError:
        return False
    if store.blob_id(data) == blob:
        return True
    return b"\r\n" in data and store.blob_id(data.replace(b"\r\n", b"\n")) == blob


def setup_problem(setup: Sequence[str]) -> str:
    """The problem a generation has when the git set-up is not trusted (see `_setup`)."""
    return (
        "this workspace's git set-up can make git show files other than those committed "
        f"({'; '.join(setup)})"
    )


def protected_state(
    store: GitStore, rev: str, protected: Sequence[str], *, trust_git_config: bool = False
) -> ProtectedState:
    """The protected paths as `rev`'s tree, the disk and the index hold them now.

    The git set-up (`_setup.git_setup`) is a problem unless `trust_git_config`."""
    paths = _clean(protected)
    setup = tuple(git_setup(store, rev, paths))
    setup_problems = [setup_problem(setup)] if setup and not trust_git_config else []
    if not paths:
        return ProtectedState(
            rev=rev, paths=(), tree="", files={}, problems=tuple(setup_problems), setup=setup
        )
    tree = store.protected_hash(rev, protected)
    files, problems = _disk_files(store.root, paths)
    problems = setup_problems + problems
    for path, flag in sorted(index_flags(store, paths).items()):
        problems.append(f"protected file {path} is marked {flag} in the index")
    dirty = store.dirty_paths(paths)
    if dirty:
        problems.append(f"protected files have uncommitted changes ({_names(dirty)})")
    tracked = store.committed_entries(rev, paths)
    links = store.read_blobs(blob for mode, blob in tracked.values() if mode == "120000")
    for path, (mode, blob) in sorted(tracked.items()):
        if path in dirty or mode == "160000":
            continue
        on_disk = files.get(path)
        if on_disk is None:
            problems.append(f"protected file {path} is missing from the working tree")
        elif on_disk == "unreadable":
            continue  # already a problem
        elif mode == "120000":
            target = links[blob].decode("utf-8", "surrogateescape")
            if on_disk != "link:" + target:
                problems.append(f"protected file {path} differs from commit {rev[:10]}")
        elif (
            on_disk.startswith("link:")
            or on_disk.startswith("special:")
            or not _same_as_committed(store, store.root, path, blob)
        ):
            problems.append(f"protected file {path} differs from commit {rev[:10]}")
    blobs = {p: blob for p, (mode, blob) in tracked.items() if mode != "160000"}
    return ProtectedState(
        rev=rev, paths=tuple(paths), tree=tree, files=files, problems=tuple(problems),
        blobs=blobs, setup=setup,
    )  # fmt: skip


def loaded_problem(base: ProtectedState, loaded: Mapping[str, str], what: str) -> str | None:
    """Why the copy `what` (e.g. "the scored copy of 1234abcd") did not hold the base's
    committed protected files (`loaded`: path -> blob id, as hashed in the copy), or None."""
    differ = sorted(p for p in set(base.blobs) | set(loaded) if base.blobs.get(p) != loaded.get(p))
    if not differ:
        return None
    return f"{what} did not hold the protected files committed at the base ({_names(differ)})"


def _names(paths: Sequence[str], limit: int = 5) -> str:
    shown = ", ".join(paths[:limit])
    return shown + (f" and {len(paths) - limit} more" if len(paths) > limit else "")


def _more(count: int) -> str:
    return f" (and {count} more problem{'s' * (count > 1)})" if count else ""


def problems_reason(state: ProtectedState) -> str | None:
    """The state's problems as one reason: the first, and how many more (None when none)."""
    if not state.problems:
        return None
    return state.problems[0] + _more(len(state.problems) - 1)


def protection_reason(
    store: GitStore, before: ProtectedState, after: ProtectedState, when: str
) -> str | None:
    """Why `after` cannot be judged against `before` (None when it can).

    `when` completes "protected files changed ..." (e.g. "during scoring").
    """
    if after.problems:
        first = after.problems[0]
        more = len(after.problems) - 1
        if first.startswith("protected files have uncommitted changes ("):
            first = f"protected files changed {when} (" + first.partition("(")[2]
        else:
            first = f"{first}, found {when}"
        return first + _more(more)
    if before.tree != after.tree:
        names = store.committed_changes(before.rev, after.rev, before.paths)
        return f"protected files changed {when} (committed: {_names(names) or 'unknown paths'})"
    if before.setup != after.setup:
        new = [item for item in after.setup if item not in before.setup] or ["removed"]
        return f"the workspace's git set-up changed {when} ({'; '.join(new)})"
    if before.files != after.files:
        keys = sorted(set(before.files) | set(after.files))
        changed = [k for k in keys if before.files.get(k) != after.files.get(k)]
        return f"protected files changed {when} ({_names(changed)})"
    return None
