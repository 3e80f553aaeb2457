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
- uncommitted changes or untracked files under a protected path.

Ignored files under a protected path are not a problem, but they are part of the on-disk
digest, so one that appears or changes during the generation is caught like any other edit.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from evolve.store import GitStore


@dataclass(frozen=True)
class ProtectedState:
    rev: str
    paths: tuple[str, ...]  # the protected prefixes, without trailing slashes
    tree: str  # hash of the protected paths in `rev`'s tree (paths and blob ids)
    files: Mapping[str, str]  # every file on disk under the protected paths -> its digest
    problems: tuple[str, ...]

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
    out = store.repo.git.ls_files("-v", "-z", "--", *paths)
    flagged = {}
    for entry in out.split("\0"):
        if len(entry) > 2 and entry[1] == " ":
            name = _flag_name(entry[0])
            if name is not None:
                flagged[entry[2:]] = name
    return flagged


def _tracked(store: GitStore, rev: str, paths: Sequence[str]) -> dict[str, tuple[str, str]]:
    out = store.repo.git.ls_tree("-r", "-z", "--full-tree", rev, "--", *paths)
    entries = {}
    for item in out.split("\0"):
        meta, sep, path = item.partition("\t")
        parts = meta.split()
        if sep and len(parts) == 3 and parts[1] == "blob":
            entries[path] = (parts[0], parts[2])
    return entries


def _blob_ids(store: GitStore, paths: Sequence[str]) -> dict[str, str]:
    """What git would store for these files now (filters such as eol conversion applied)."""
    simple = [p for p in paths if "\n" not in p]
    out: dict[str, str] = {}
    if simple:
        done = subprocess.run(
            ["git", "hash-object", "--stdin-paths"],
            cwd=store.root,
            input="\n".join(simple).encode("utf-8", "surrogateescape") + b"\n",
            capture_output=True,
        )
        ids = done.stdout.decode("ascii", "replace").split()
        if done.returncode == 0 and len(ids) == len(simple):
            out.update(zip(simple, ids, strict=True))
    rest = [p for p in paths if p not in out]
    if rest:
        import git  # GitPython (its import is a sixth of a scoring run's start-up): only here

        for path in rest:
            with contextlib.suppress(git.GitCommandError):
                out[path] = store.repo.git.hash_object("--", path).strip()
    return out


def protected_state(store: GitStore, rev: str, protected: Sequence[str]) -> ProtectedState:
    """The protected paths as `rev`'s tree, the disk and the index hold them now."""
    paths = _clean(protected)
    if not paths:
        return ProtectedState(rev=rev, paths=(), tree="", files={}, problems=())
    tree = store.protected_hash(rev, protected)
    files, problems = _disk_files(store.root, paths)
    for path, flag in sorted(index_flags(store, paths).items()):
        problems.append(f"protected file {path} is marked {flag} in the index")
    dirty = store.dirty_paths(paths)
    if dirty:
        problems.append(f"protected files have uncommitted changes ({_names(dirty)})")
    tracked = _tracked(store, rev, paths)
    regular = []
    for path, (mode, blob) in sorted(tracked.items()):
        if path in dirty:
            continue
        on_disk = files.get(path)
        if on_disk is None:
            problems.append(f"protected file {path} is missing from the working tree")
        elif on_disk == "unreadable":
            continue  # already a problem
        elif mode == "120000":
            target = store.repo.git.cat_file("blob", blob, strip_newline_in_stdout=False)
            if on_disk != "link:" + target:
                problems.append(f"protected file {path} differs from commit {rev[:10]}")
        elif on_disk.startswith("link:") or on_disk.startswith("special:"):
            problems.append(f"protected file {path} differs from commit {rev[:10]}")
        else:
            regular.append(path)
    now = _blob_ids(store, regular)
    for path in regular:
        if now.get(path) != tracked[path][1]:
            problems.append(f"protected file {path} differs from commit {rev[:10]}")
    return ProtectedState(
        rev=rev, paths=tuple(paths), tree=tree, files=files, problems=tuple(problems)
    )


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
        names = [
            p
            for p in store.repo.git.diff(
                "--name-only", "-z", before.rev, after.rev, "--", *before.paths
            ).split("\0")
            if p
        ]
        return f"protected files changed {when} (committed: {_names(names) or 'unknown paths'})"
    if before.files != after.files:
        keys = sorted(set(before.files) | set(after.files))
        changed = [k for k in keys if before.files.get(k) != after.files.get(k)]
        return f"protected files changed {when} ({_names(changed)})"
    return None
