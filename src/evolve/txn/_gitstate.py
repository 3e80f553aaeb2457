"""A git operation in progress (a revert, merge, rebase or cherry-pick stopped on a conflict,
or waiting for its commit): evolve writes nothing until it is finished or aborted.

A writer's commit in the middle of one would be taken into it (`git revert --continue` commits
whatever the index holds, evolve's files included) or moved by it (a rebase replays commits
over evolve's), and the tombstones for a plain `git revert` would be written before git has
written that revert. Each writer asks here, before it takes the lock.
"""

from __future__ import annotations

from evolve.errors import EvolveError
from evolve.workspace import Workspace

# (what git leaves in the git folder while the operation is under way, its name, the command
# that finishes it, the one that abandons it)
_IN_PROGRESS = (
    ("REVERT_HEAD", "a revert", "git revert --continue", "git revert --abort"),
    ("CHERRY_PICK_HEAD", "a cherry-pick", "git cherry-pick --continue", "git cherry-pick --abort"),
    ("MERGE_HEAD", "a merge", "git commit", "git merge --abort"),
    ("rebase-merge", "a rebase", "git rebase --continue", "git rebase --abort"),
    ("rebase-apply", "a rebase (or `git am`)", "git rebase --continue", "git rebase --abort"),
)


def git_in_progress(ws: Workspace) -> tuple[str, str, str] | None:
    """(what is in progress, the command that finishes it, the one that abandons it), or None."""
    git_dir = ws.store.git_dir
    for name, what, finish, abort in _IN_PROGRESS:
        if (git_dir / name).exists():
            return what, finish, abort
    return None


def refuse_git_in_progress(ws: Workspace, command: str) -> None:
    """Raise when git is in the middle of an operation in this workspace's worktree.

    Raises:
        EvolveError: naming the operation and the commands that finish or abandon it.
    """
    found = git_in_progress(ws)
    if found is None:
        return
    what, finish, abort = found
    raise EvolveError(
        f"git is in the middle of {what} in {ws.root}; finish it (`{finish}`) or abandon it "
        f"(`{abort}`), then run `{command}` again."
    )
