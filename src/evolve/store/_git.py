"""Git access for the store.

Two commit paths:

- The fast path (the default): per-episode commits are frequent, so :meth:`GitStore.commit`
  writes the blobs, the trees along the changed paths, the commit object, the ref and the
  index entries of the changed paths from Python (`evolve.store._index`; an index that module
  leaves to git costs one `git update-index` process), so a commit starts no process.
- git's own commit path (`git commit --only`): used when the repository has a hook that a
  commit runs (pre-commit, prepare-commit-msg, commit-msg, post-commit, reference-transaction,
  in `core.hooksPath` or `.git/hooks`) or asks for signed commits (`commit.gpgsign`), so that
  hooks run and signing applies exactly as they would for a person's `git commit`.

`benchmarks/bench_commit.py` measures both against `git add` + `git commit` on a 1,000-file,
10,000-commit repository. Objects are hashed with the repository's own algorithm (SHA-1 or
SHA-256, `extensions.objectFormat`).

The store is built in layers (`_base`, `_objects`, `_refs`, `_history`, `_committed`, each a
class over the one before); this module adds the commit paths and the working tree.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from evolve._format._git import committed_env, status_paths
from evolve.errors import EvolveError
from evolve.store._base import (
    GitBase,
    GitFailed,
    _last_line,
)
from evolve.store._committed import GitCommitted
from evolve.store._history import CommitInfo, GitHistory
from evolve.store._index import Change, Declined, update_index
from evolve.store._objects import GitObjects
from evolve.store._refs import STALE_LOCK_SECONDS, GitRefs, _held_by_another
from evolve.store._trailers import Trailers, format_message

__all__ = [
    "COMMIT_HOOKS",
    "STALE_LOCK_SECONDS",
    "CommitInfo",
    "CommitPath",
    "GitBase",
    "GitCommitted",
    "GitFailed",
    "GitHistory",
    "GitObjects",
    "GitRefs",
    "GitStore",
]

# Hooks that `git commit` runs; when one is installed, commits go through `git commit`.
COMMIT_HOOKS = (
    "pre-commit",
    "prepare-commit-msg",
    "commit-msg",
    "post-commit",
    "reference-transaction",
)

CommitPath = Literal["auto", "fast", "git"]


class GitStore(GitCommitted):
    """A git repository holding a workspace; the only code that makes commits."""

    #: "auto" picks git's commit path when hooks or signing ask for it, else the fast path;
    #: "fast" and "git" force one (the benchmark uses them).
    commit_path: CommitPath = "auto"

    @classmethod
    def init(cls, root: Path) -> GitStore:
        root.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(
            ["git", "init", "--quiet", "--initial-branch=main", str(root)], capture_output=True
        )
        if done.returncode != 0:
            raise GitFailed(["init"], done.returncode, done.stderr.decode("utf-8", "replace"))
        return cls(root)

    def hooks_dir(self) -> Path:
        """Where git looks for hooks (`core.hooksPath`, else `hooks/` in the git dir)."""
        configured = self._config().get("core.hookspath")
        if configured:
            path = Path(os.path.expanduser(configured))
            return path if path.is_absolute() else self.root / path
        return self.common_dir / "hooks"

    def commit_hooks(self) -> list[str]:
        """The installed hooks that `git commit` would run (executable files only, as git)."""
        folder = self.hooks_dir()
        found = []
        for name in COMMIT_HOOKS:
            path = folder / name
            if path.is_file() and os.access(path, os.X_OK):
                found.append(name)
        return found

    def uses_git_commit(self) -> bool:
        """Whether :meth:`commit` goes through `git commit` (hooks or signing ask for it)."""
        if self.commit_path != "auto":
            return self.commit_path == "git"
        return self._config_bool("commit.gpgsign") or bool(self.commit_hooks())

    # --- writing -----------------------------------------------------------------------

    def commit(
        self,
        paths: Sequence[str],
        subject: str,
        *,
        body: str = "",
        trailers: Trailers = (),
        allow_empty: bool = False,
    ) -> str | None:
        """Commit the working-tree state of `paths` (added, changed or deleted) on top of HEAD.

        The new tree is HEAD's tree with exactly these paths changed (like `git commit --only`):
        anything else staged in the index stays staged and is not committed. Returns the new
        commit's sha, or None when nothing changed and `allow_empty` is false.

        Raises:
            EvolveError: when a hook or signing refuses the commit (nothing is committed and
                the index is as it was), or the branch moved or is locked.
        """
        message = format_message(subject, body, trailers)
        parent = self.head()
        base_tree = self._tree_of(parent) if parent is not None else None
        blobs = {path: self._store_worktree_file(path) for path in paths}
        changes = {p: (b[0], b[1]) if b is not None else None for p, b in blobs.items()}
        tree = self._write_tree(base_tree, changes) or self._store(b"tree", b"")
        if parent is not None and not allow_empty and tree == base_tree:
            return None
        if paths:
            self._check_index_free()
        if self.uses_git_commit():
            return self._git_commit(paths, message, tree, blobs)
        name, email = self._author()
        cname, cemail = self._identity_of("COMMITTER")
        stamp = f"{int(time.time())} {time.strftime('%z')}"
        lines = [f"tree {tree}"]
        if parent is not None:
            lines.append(f"parent {parent}")
        lines.append(f"author {name} <{email}> {stamp}")
        lines.append(f"committer {cname} <{cemail}> {stamp}")
        sha = self._store(b"commit", ("\n".join(lines) + "\n\n" + message).encode("utf-8"))
        self._update_head(sha, parent, subject)
        self._trees[sha] = tree
        if paths:
            # One index write, so that `git status` agrees with the new HEAD.
            self._sync_index(paths, sha, blobs)
        return sha

    def _git_commit(
        self, paths: Sequence[str], message: str, tree: str, blobs: dict[str, Change]
    ) -> str:
        """Commit `tree` (HEAD's tree with `paths` changed) through `git commit`, so hooks run
        and signing applies.

        git commits a temporary index holding exactly `tree` (stat data kept from the real
        index where the content matches, so git need not rehash the working tree), which is
        what `git commit --only` does too; the real index is updated for `paths` only after
        the commit succeeded, so a refusing hook or signer leaves everything as it was.
        """
        temp_index = self.git_dir / f"evolve-index-{os.getpid()}"
        name, email = self._author()
        cname, cemail = self._identity_of("COMMITTER")
        env = {
            **committed_env(),
            "GIT_AUTHOR_NAME": name,
            "GIT_AUTHOR_EMAIL": email,
            "GIT_COMMITTER_NAME": cname,
            "GIT_COMMITTER_EMAIL": cemail,
            "GIT_EDITOR": "true",
        }
        try:
            with self._owning(*self._branch_locks()):
                self._git_bytes("read-tree", "-m", "-i", f"--index-output={temp_index}", tree)
                done = subprocess.run(
                    ["git", "commit", "--quiet", "--allow-empty", "--cleanup=verbatim", "--file=-"],
                    cwd=self.root,
                    input=message.encode("utf-8"),
                    capture_output=True,
                    env={**env, "GIT_INDEX_FILE": str(temp_index)},
                )
        finally:
            temp_index.unlink(missing_ok=True)
        if done.returncode != 0:
            detail = _last_line(done.stderr.decode("utf-8", "replace"))
            raise EvolveError(
                f"git commit refused the commit ({detail}), so nothing was committed; fix the "
                "repository's commit hook or signing set-up and rerun."
            )
        sha = self.head()
        if sha is None:  # pragma: no cover - git said it committed
            raise EvolveError("git commit made no commit; rerun the command.")
        if paths:
            self._sync_index(paths, sha, blobs)
        return sha

    def _check_index_free(self) -> None:
        """Refuse before committing when a live git holds the index (the commit's index
        update would fail after the branch moved)."""
        lock = self.git_dir / "index.lock"
        if lock.exists() and not self.recover_stale_lock(lock):
            raise _held_by_another(lock, "using the index")

    def _sync_index(self, paths: Sequence[str], sha: str, blobs: dict[str, Change]) -> None:
        """Update the index for the committed `paths`, so `git status` agrees with HEAD:
        from Python with the blob ids just stored (`evolve.store._index`), or by `git
        update-index` when the index holds what that module leaves to git."""
        try:
            with self._owning("index"):
                update_index(
                    self.git_dir / "index", blobs, object_format=self.object_format,
                    config=self._config(),
                )  # fmt: skip
            return
        except (Declined, OSError):
            pass  # git does it (and says why, if it cannot)
        try:
            with self._owning("index"):
                self.git("update-index", "--add", "--remove", "--", *paths)
        except GitFailed as exc:
            named = " ".join(paths[:3]) + (" ..." if len(paths) > 3 else "")
            raise EvolveError(
                f"commit {sha[:10]} was made, but git could not update the index "
                f"({_last_line(str(exc.stderr))}); run `git reset -q -- {named}` to bring it "
                "in line."
            ) from None

    # --- the working tree --------------------------------------------------------------

    def dirty_paths(self, paths: Sequence[str] = ()) -> list[str]:
        """Paths with uncommitted changes (staged, unstaged or untracked), ignoring ignored files."""
        out = self.git("status", "--porcelain=v1", "-z", "--untracked-files=all", "--", *paths)
        return status_paths(out)

    def reset_hard(self, rev: str) -> None:
        """Move HEAD, the index and the working tree to `rev` (used to discard a generation)."""
        with self._owning(*self._branch_locks()):
            self.git("reset", "--hard", "--quiet", rev)

    def clean_untracked(self) -> None:
        """Remove untracked files and folders that are not ignored (`git clean -fd`)."""
        self.git("clean", "-f", "-d", "-q")

    def checkout_paths(self, rev: str, paths: Sequence[str]) -> None:
        """Restore `paths` in the index and working tree to their state at `rev`."""
        if paths:
            with self._owning("index"):
                self.git("checkout", rev, "--", *paths)
