"""`evolve clone`, `evolve pull`, `evolve push`: a workspace travels whole (docs/sharing.md).

Git carries everything; evolve adds four things around it:

- the refspecs (:func:`configure_remote`): `remote.<name>.fetch` brings the remote's
  `refs/evolve/*` to `refs/remotes/<name>/evolve/*` (never over the local records) and
  `remote.<name>.push` sends the branch and `refs/evolve/*` (never forced), so a plain
  `git fetch` / `git push` carries them too;
- the union of records refs (`evolve.remote._records`) after each fetch;
- the branch merged through one function, :func:`_merge_branch`;
- a push that is never forced: a remote that moved is pulled first, and a push that loses a
  race is retried after another pull, so nothing anyone pushed is overwritten.
"""

from __future__ import annotations

import contextlib
import random
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evolve.errors import EvolveError
from evolve.remote._project import (
    configure_shared_push,
    install_pre_push,
    is_private,
    lift_fetched,
    shared_refs,
)
from evolve.remote._records import Merged, merge_ref
from evolve.store import GitFailed, GitStore
from evolve.store._base import _last_line, committed_env
from evolve.workspace import CONFIG_NAME, Workspace
from evolve.workspace._paths import APPLY_JOURNAL, GENERATION_JOURNAL

#: How often a push that lost a race is retried after another pull (three learners pushing
#: at once on a loaded machine lost five races in a row), and the longest wait between tries.
PUSH_TRIES = 12
PUSH_WAIT_S = 2.0
EVOLVE_REFS = "refs/evolve/"
_MERGE_TRAILER = "Evolve-Kind: merge"


@dataclass
class Travelled:
    """What one clone, pull or push did (`--json` prints it)."""

    remote: str
    branch: str
    fetched: str | None = None  # the remote's branch tip, as fetched
    merged_branch: str | None = None  # "fast-forward", "merge <sha>", or None (nothing new)
    records: Merged = field(default_factory=Merged)
    pushed: list[str] = field(default_factory=list)  # refs the remote took
    pulls: int = 0  # pulls before the push (a remote that had moved, a lost race)

    def to_json(self) -> dict[str, Any]:
        return {
            "remote": self.remote,
            "branch": self.branch,
            "fetched": self.fetched,
            "merged_branch": self.merged_branch,
            "records_updated": self.records.updated,
            "records_merged": self.records.merged,
            "records_kept_aside": self.records.kept_aside,
            "records_ignored": self.records.ignored,
            "pushed": self.pushed,
            "pulls": self.pulls,
        }


def _git(
    cwd: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, env={**committed_env(), **(env or {})}
    )


def identity(store: GitStore) -> dict[str, str]:
    """Who a merge commit is by: git's identity, else evolve's own (as the store commits)."""
    out = {}
    for role in ("AUTHOR", "COMMITTER"):
        name, email = store._identity_of(role)
        out[f"GIT_{role}_NAME"], out[f"GIT_{role}_EMAIL"] = name, email
    return out


def _run(cwd: Path, *args: str, doing: str) -> str:
    done = _git(cwd, *args)
    if done.returncode != 0:
        said = _last_line(done.stderr.decode("utf-8", "replace"))
        raise EvolveError(f"{doing} failed: {said}; check the remote and rerun.")
    return done.stdout.decode("utf-8", "surrogateescape")


def _branch(store: GitStore) -> str:
    ref = store.head_branch()
    if ref is None:
        raise EvolveError("HEAD is detached; check out the workspace's branch, then rerun.")
    return ref.removeprefix("refs/heads/")


def _remote_config(store: GitStore) -> dict[str, list[str]]:
    """Every `remote.*` setting of the repository, in one git call: key -> its values."""
    done = _git(store.root, "config", "-z", "--get-regexp", r"^remote\.")
    out: dict[str, list[str]] = {}
    if done.returncode not in (0, 1):  # 1: no such setting
        said = _last_line(done.stderr.decode("utf-8", "replace"))
        raise EvolveError(f"reading the remotes failed: {said}; check the remote and rerun.")
    for entry in done.stdout.decode("utf-8", "surrogateescape").split("\0"):
        key, _, value = entry.partition("\n")
        if key:
            out.setdefault(key.lower() if key.count(".") < 2 else _key(key), []).append(value)
    return out


def _key(key: str) -> str:
    """git prints a key's section and name lower-cased, its subsection (the remote) as is."""
    section, rest = key.split(".", 1)
    sub, _, name = rest.rpartition(".")
    return f"{section.lower()}.{sub}.{name.lower()}"


def _check_remote(store: GitStore, remote: str, config: dict[str, list[str]] | None = None) -> None:
    if config is None:
        names = _run(store.root, "remote", doing="listing the remotes").split()
    else:
        names = sorted({k[len("remote.") :].rpartition(".")[0] for k in config})
    if remote not in names:
        shown = ", ".join(names) or "none"
        raise EvolveError(
            f"no remote named {remote!r} (remotes: {shown}); add it with "
            f"`git remote add {remote} URL`."
        )


def configure_remote(
    store: GitStore,
    remote: str,
    config: dict[str, list[str]] | None = None,
    *,
    push: bool = True,
) -> None:
    """Add evolve's refspecs to `remote` (idempotent): fetch `refs/evolve/*` to
    `refs/remotes/<remote>/evolve/*`; push the current branch and `refs/evolve/*`, unforced
    (not with `push=False`: a workspace keeping a scope here pushes projections instead).
    `config`: the `remote.*` settings already read (`_remote_config`), else they are read."""
    wanted = {
        f"remote.{remote}.fetch": [
            f"+refs/heads/*:refs/remotes/{remote}/*",
            f"+{EVOLVE_REFS}*:refs/remotes/{remote}/evolve/*",
        ],
    }
    if push:
        wanted[f"remote.{remote}.push"] = ["HEAD", f"{EVOLVE_REFS}*:{EVOLVE_REFS}*"]
    for key, values in wanted.items():
        if config is not None:
            have = config.get(key, [])
        else:
            done = _git(store.root, "config", "--get-all", key)
            have = (
                done.stdout.decode("utf-8", "replace").splitlines() if done.returncode == 0 else []
            )
        for value in values:
            if value not in have:
                _run(store.root, "config", "--add", key, value, doing=f"setting {key}")


def fetch(store: GitStore, remote: str, branch: str) -> str | None:
    """Fetch `remote`'s branches and records into refs/remotes/<remote>/ (an empty remote
    fetches nothing); the tip of its `branch`, None when it has none."""
    _run(
        store.root,
        "fetch", "--quiet", "--no-tags", remote,
        f"+refs/heads/*:refs/remotes/{remote}/*",
        f"+{EVOLVE_REFS}*:refs/remotes/{remote}/evolve/*",
        doing=f"fetching from {remote}",
    )  # fmt: skip
    return _tracking(store, remote, branch)


def _tracking(store: GitStore, remote: str, branch: str) -> str | None:
    done = _git(store.root, "rev-parse", "--verify", "--quiet", f"refs/remotes/{remote}/{branch}")
    out = done.stdout.decode("ascii", "replace").strip()
    return out if done.returncode == 0 and out else None


def merge_records(store: GitStore, remote: str) -> Merged:
    """Merge every records ref fetched from `remote` into the local ones (the union rules of
    `evolve.remote._records`); refs evolve does not write are left where they were fetched."""
    prefix = f"refs/remotes/{remote}/evolve/"
    out = _run(
        store.root, "for-each-ref", "--format=%(objectname) %(refname)", prefix,
        doing="listing the fetched records",
    )  # fmt: skip
    done = Merged()
    for line in out.splitlines():
        sha, _, name = line.partition(" ")
        merge_ref(store, EVOLVE_REFS + name[len(prefix) :], sha, remote, done)
    return done


def _merge_branch(ws: Workspace, ref: str, sha: str | None = None) -> str | None:
    """Merge `ref` (a fetched branch) into the workspace's branch: the one place `evolve pull`
    merges a branch, through `evolve.merge.merge_branch` (a fast-forward when the branch has
    nothing of its own, else ONE merge commit: counter sidecars three-way, units by the merge
    rules of docs/sharing.md). It joins the writer lock `pull` holds.

    Returns "fast-forward", "merge <sha>", or None when `ref` is already merged.

    Raises:
        EvolveError: the merge cannot be made (a unit conflict the rules cannot settle, a
            conflict outside the unit files): one sentence, the workspace as it was.
    """
    decided, quick = _quick_merge(ws, ref, sha)
    if decided:
        return quick
    from evolve.merge import merge_branch
    from evolve.txn._unsettled import refuse_unsettled_merge

    # A merge on top would hide a plain git merge's lost count for good (it joins pull's
    # lock, so `txn.writer`'s own check does not run).
    refuse_unsettled_merge(ws, "evolve pull")

    done = merge_branch(ws, ref)
    if done.status == "up-to-date" or done.commit is None:
        return None
    if done.status == "fast-forward":
        return "fast-forward"
    return f"merge {done.commit}"


def _quick_merge(ws: Workspace, ref: str, sha: str | None = None) -> tuple[bool, str | None]:
    """The cases that need none of the merge rules, without loading them (most pulls):
    (True, None) when `ref` (at `sha`, when the caller knows it) is already merged, (True,
    "fast-forward") when the branch had nothing of its own, a clean tree and no merge in
    progress (what `merge_branch` would do then); (False, None) otherwise (`merge_branch`
    decides, refusals and all)."""
    store = ws.store
    head = store.head()
    theirs = sha or _tracking_ref(store, ref)
    if head is None or theirs is None:
        return False, None
    done = _git(store.root, "merge-base", head, theirs)
    base = done.stdout.decode("ascii", "replace").strip()
    if done.returncode != 0 or not base:
        return False, None
    if base == theirs:
        return True, None
    if base != head or (store.git_dir / "MERGE_HEAD").exists() or store.dirty_paths():
        return False, None
    done = _git(store.root, "merge", "--ff-only", "--quiet", theirs)
    return (True, "fast-forward") if done.returncode == 0 else (False, None)


def _tracking_ref(store: GitStore, ref: str) -> str | None:
    done = _git(store.root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    out = done.stdout.decode("ascii", "replace").strip()
    return out if done.returncode == 0 and out else None


def pull(ws: Workspace, remote: str = "origin") -> Travelled:
    """Fetch `remote`'s branch and records; merge the records (union) and the branch.

    Raises:
        EvolveError: no such remote, a fetch that failed, hostile records (nothing merged),
            or a branch merge git could not make (undone).
    """
    store = ws.store
    config = _remote_config(store)
    _check_remote(store, remote, config)
    _configure(ws, remote, config)
    branch = _branch(store)
    result = Travelled(remote, branch)
    result.fetched = lift_fetched(ws, remote, branch, fetch(store, remote, branch))
    with _locked(ws, "evolve pull"):
        result.records = merge_records(store, remote)
        if result.fetched is not None:
            result.merged_branch = _merge_branch(
                ws, f"refs/remotes/{remote}/{branch}", result.fetched
            )
    return result


def _configure(ws: Workspace, remote: str, config: dict[str, list[str]] | None = None) -> None:
    """The refspecs of `remote`; with a scope kept here, pushes send projections."""
    configure_remote(ws.store, remote, config, push=not is_private(ws))
    configure_shared_push(ws, remote)
    install_pre_push(ws)


def _locked(ws: Workspace, command: str) -> contextlib.AbstractContextManager[object]:
    """The writer lock for git's own writes (merge, update-ref). Where a dead writer left a
    journal, the whole transaction (`txn.writer`) recovers it first; otherwise the lock alone,
    so a pull does not load the applier."""
    git_dir = ws.store.git_dir
    if (git_dir / APPLY_JOURNAL).exists() or (git_dir / GENERATION_JOURNAL).exists():
        from evolve.txn import writer

        return writer(ws, command)
    from evolve.txn import LOCK_NAME, WriterLock

    return WriterLock(git_dir / LOCK_NAME, command)


def push(ws: Workspace, remote: str = "origin") -> Travelled:
    """Send the branch and every `refs/evolve/*` ref to `remote`, never forced.

    A remote that moved is pulled first (its records merged as a union, its branch merged);
    a push that loses a race to another learner is retried after another pull, up to
    `PUSH_TRIES` times, so no one's episodes are lost on either side.

    Raises:
        EvolveError: no such remote, HEAD a plain git merge not yet settled (`evolve merge
            --fix`), or a push still refused after the retries. With a
            scope `share.scopes` keeps here, what is sent is the projection of the branch and
            of the training records without it (`evolve.remote._project`).
    """
    from evolve.txn._unsettled import refuse_unsettled_merge

    store = ws.store
    _check_remote(store, remote)
    # Sent as it is, a plain git merge's lost count would reach every clone that pulls it.
    refuse_unsettled_merge(ws, "evolve push")
    _configure(ws, remote)
    branch = _branch(store)
    result = Travelled(remote, branch)
    for attempt in range(PUSH_TRIES):
        if attempt:  # lost a race: let the winner finish, at a random point (no lockstep)
            time.sleep(random.uniform(0, min(PUSH_WAIT_S, 0.1 * 2**attempt)))
        result.fetched = lift_fetched(ws, remote, branch, fetch(store, remote, branch))
        if _behind(store, remote, branch, result.fetched):
            pulled = pull(ws, remote)
            result.pulls += 1
            result.records = pulled.records
            result.merged_branch = pulled.merged_branch or result.merged_branch
        refs = shared_refs(ws, branch) or [f"refs/heads/{branch}:refs/heads/{branch}"] + [
            f"{name}:{name}" for name in store.ref_names(EVOLVE_REFS.rstrip("/"))
        ]
        done = _git(ws.root, "push", "--quiet", "--atomic", "--porcelain", remote, *refs)
        if done.returncode == 0:
            result.pushed = [r.split(":", 1)[1] for r in refs]
            return result
        said = (done.stderr + done.stdout).decode("utf-8", "replace")
        if "rejected" not in said and "fetch first" not in said and "non-fast-forward" not in said:
            raise EvolveError(f"pushing to {remote} failed: {_last_line(said)}; rerun.")
    raise EvolveError(
        f"{remote} kept moving: {PUSH_TRIES} pushes lost the race to other learners; nothing "
        "was lost, rerun `evolve push` in a moment."
    )


def _behind(store: GitStore, remote: str, branch: str, fetched: str | None) -> bool:
    """Whether `remote` holds something (branch or records) that is not merged here."""
    head = store.head()
    if fetched is not None and (head is None or not store.is_ancestor(fetched, head)):
        return True
    prefix = f"refs/remotes/{remote}/evolve/"
    out = _run(
        store.root, "for-each-ref", "--format=%(objectname) %(refname)", prefix,
        doing="listing the fetched records",
    )  # fmt: skip
    for line in out.splitlines():
        sha, _, name = line.partition(" ")
        ours = store.ref_sha(EVOLVE_REFS + name[len(prefix) :])
        if ours is None or (ours != sha and not store.is_ancestor(sha, ours)):
            return True
    return False


def clone(url: str, directory: Path | None = None) -> tuple[Workspace, Travelled]:
    """`git clone URL DIR`, then the remote's records: the workspace as its origin has it.

    Raises:
        EvolveError: the clone failed, the folder exists and is not empty, what was cloned
            is not an evolve workspace, or its records are refused; nothing is left then.
    """
    target = (directory or Path(url.rstrip("/").rsplit("/", 1)[-1].removesuffix(".git"))).resolve()
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise EvolveError(f"{target} exists and is not empty; pick a new or empty folder.")
    created = not target.exists()
    try:
        done = subprocess.run(
            ["git", "clone", "--quiet", "--no-tags", "--origin", "origin", url, str(target)],
            capture_output=True,
            env=committed_env(),
        )
        if done.returncode != 0:
            said = _last_line(done.stderr.decode("utf-8", "replace"))
            raise EvolveError(f"git clone {url} failed: {said}; check the URL and rerun.")
        if not (target / CONFIG_NAME).is_file():
            raise EvolveError(
                f"{url} is not an evolve workspace (no {CONFIG_NAME} on its branch); "
                "use `git clone` for it."
            )
        ws = Workspace(target)
        from evolve.merge import install_merge_drivers

        install_merge_drivers(target)  # the config git never carries: plain merges use them too
        result = pull(ws, "origin")
        _set_upstream(ws.store, result.branch)
        return Workspace(target), result
    except BaseException:
        if created:
            shutil.rmtree(target, ignore_errors=True)
        else:
            for child in target.iterdir():
                if child.is_dir() and not child.is_symlink():
                    shutil.rmtree(child, ignore_errors=True)
                else:
                    child.unlink(missing_ok=True)
        raise


def _set_upstream(store: GitStore, branch: str) -> None:
    with contextlib.suppress(GitFailed):
        store.git("config", f"branch.{branch}.remote", "origin")
        store.git("config", f"branch.{branch}.merge", f"refs/heads/{branch}")
