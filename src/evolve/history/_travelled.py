"""Whether a workspace carries the records its branch depends on (docs/sharing.md).

A plain `git clone` copies the branch but not `refs/evolve/*`: the persona's clock, the
stream records and the refusal records stay behind. Training in such a clone would silently
restart the persona's clock (and relearn a preference the origin saw drift), so the commands
that train on those records (`evolve train`, `evolve evolve`) call :func:`require_records`
first and refuse, in one sentence naming the command that fixes it. (An experiment's job
clones train without the workspace's records by design, and the Python API leaves the
check to its caller.)

The check costs a ref read when the records are there (and one `git for-each-ref` where a
remote was fetched); only a workspace without `refs/evolve/train` asks git whether the branch
holds a commit that training made on a persona clock (`Evolve-Clock`: the clock is recorded
on `refs/evolve/train` before the first such commit, so only a copy can lack it).
"""

from __future__ import annotations

from evolve._format._message import CLOCK
from evolve.errors import EvolveError
from evolve.history._log import TRAIN_REF
from evolve.store import GitFailed, GitStore

SHARED_TRAIN = "refs/shared/evolve/train"  # evolve.remote._project: the last projection pushed


class RecordsMissing(EvolveError):
    """The branch has evolve's commits but not the records they depend on."""


def _fetched(store: GitStore) -> dict[str, str]:
    """{remote: its fetched refs/evolve/train}: where `evolve pull` (and a plain `git fetch`
    with the refspecs evolve configures) puts a remote's records before they are merged,
    `refs/remotes/<remote>/evolve/train`. No process where no remote was ever fetched."""
    common = store.common_dir
    try:
        packed = (common / "packed-refs").read_bytes()
    except OSError:
        packed = b""
    if not (common / "refs" / "remotes").is_dir() and b" refs/remotes/" not in packed:
        return {}
    try:
        out = store.git("for-each-ref", "--format=%(objectname) %(refname)", "refs/remotes/")
    except GitFailed:
        return {}
    found = {}
    for line in out.splitlines():
        sha, _, name = line.partition(" ")
        parts = name.split("/")
        if len(parts) == 5 and parts[3:] == ["evolve", "train"]:
            found[parts[2]] = sha
    return found


def _remotes(store: GitStore) -> list[str]:
    try:
        out = store.git("remote")
    except GitFailed:
        return []
    return [name for name in out.split() if name]


def fix_remote(store: GitStore) -> str:
    """The remote the fix names: the branch's upstream, else `origin`, else the first one."""
    remotes = _remotes(store)
    branch = (store.head_branch() or "").removeprefix("refs/heads/")
    if branch:
        try:
            upstream = store.git("config", "--get", f"branch.{branch}.remote").strip()
        except GitFailed:
            upstream = ""
        if upstream in remotes:
            return upstream
    if "origin" in remotes or not remotes:
        return "origin"
    return remotes[0]


def _has_episode_commits(store: GitStore) -> bool:
    if store.head() is None:
        return False
    try:
        out = store.git("rev-list", "-1", "--extended-regexp", f"--grep=^{CLOCK}: [0-9]+$", "HEAD")
    except GitFailed:
        return False
    return bool(out.strip())


def require_records(store: GitStore, persona: str, doing: str = "training") -> None:
    """Refuse `doing` when the branch holds episode commits made on a persona clock while
    `refs/evolve/train` is missing, or when a remote's records were fetched but not merged.

    Raises:
        RecordsMissing: one sentence with the command that fixes it (`evolve pull REMOTE`).
    """
    local = store.ref_sha(TRAIN_REF)
    if local is None:
        if _has_episode_commits(store):
            remote = fix_remote(store)
            raise RecordsMissing(
                f"this workspace's branch has training commits but no {TRAIN_REF} (a plain "
                f"`git clone` does not copy refs/evolve/*), so {doing} here would restart "
                f"{persona}'s clock; run `evolve pull {remote}` (or `git fetch {remote} "
                "'refs/evolve/*:refs/evolve/*'`) first."
            )
        return
    # What this machine last pushed when `share.scopes` keeps a scope here: the projection of
    # its own records (git points the remote-tracking ref at it after the push), not news.
    pushed = store.ref_sha(SHARED_TRAIN)
    for name, fetched in sorted(_fetched(store).items()):
        if fetched in (local, pushed):
            continue
        if not store.is_ancestor(fetched, local):
            raise RecordsMissing(
                f"the records fetched from {name} (refs/remotes/{name}/evolve/train) are not "
                f"merged into {TRAIN_REF}, so {doing} here would run on a stale clock for "
                f"{persona}; run `evolve pull {name}` first."
            )
