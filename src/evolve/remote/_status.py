"""`evolve status`: whether this workspace travels whole (docs/sharing.md).

Three things a plain git command can leave wrong without saying so, each with the one
command that fixes it:

- a remote added by hand (`git remote add`) lacks evolve's refspecs until the first `evolve
  push` or `evolve pull` that names it: a plain `git push` there sends the branch alone and a
  plain `git fetch` brings no records;
- the records (`refs/evolve/train`) are missing (a plain `git clone`) or fetched but not
  merged: training would run on a stale persona clock;
- HEAD is a plain git merge evolve's merge rules have not settled: writers refuse it;
- the merge drivers are not registered (git never carries `.git/config`, so a plain
  `git clone` lacks them): a plain `git merge` would then merge the counter sidecars line by
  line instead of adding their counts up.

Reading only: it changes nothing (`git config` calls for the remotes and the drivers, the
records' refs read from their files, HEAD's commit through the store's reader).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from evolve.errors import EvolveError
from evolve.remote._project import SHARED_PREFIX, is_private
from evolve.remote._travel import EVOLVE_REFS, _remote_config
from evolve.workspace import Workspace, drivers_installed

DRIVERS_MISSING = (
    "not registered here (git does not carry them: a plain `git clone` lacks them, and a "
    "plain `git merge` would merge the counter sidecars line by line instead of adding "
    "their counts); run `evolve merge --install-drivers` once"
)


@dataclass
class RemoteStatus:
    """One remote: whether a plain `git fetch` and `git push` carry `refs/evolve/*`."""

    name: str
    url: str
    fetches_records: bool
    pushes_records: bool

    @property
    def fix(self) -> str | None:
        """The one command that configures the refspecs (None: nothing to fix)."""
        return None if self.fetches_records and self.pushes_records else f"evolve push {self.name}"

    def sentence(self) -> str:
        if self.fix is None:
            return (
                f"remote {self.name} ({self.url}): a plain git fetch and git push carry the records"
            )
        lacks = [
            what
            for what, ok in (
                ("a plain git fetch brings no records", self.fetches_records),
                ("a plain git push sends the branch without them", self.pushes_records),
            )
            if not ok
        ]
        return (
            f"remote {self.name} ({self.url}) lacks evolve's refspecs ({'; '.join(lacks)}); "
            f"run `{self.fix}` once"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "url": self.url,
            "fetches_records": self.fetches_records,
            "pushes_records": self.pushes_records,
            "fix": self.fix,
        }


@dataclass
class Status:
    """What `evolve status` reports (`--json` prints :meth:`to_json`)."""

    branch: str | None
    head: str | None
    remotes: list[RemoteStatus] = field(default_factory=list)
    records: str | None = None  # the problem with refs/evolve/train, with its fix
    merge: str | None = None  # the unsettled plain merge at HEAD, with its fix
    drivers: str | None = None  # the merge drivers git lacks here, with the fix

    @property
    def ok(self) -> bool:
        return (
            all(r.fix is None for r in self.remotes)
            and self.records is None
            and self.merge is None
            and self.drivers is None
        )

    def lines(self) -> list[str]:
        where = f"branch {self.branch or '(detached)'} at {self.head[:10] if self.head else '(no commit)'}"
        out = [where]
        out += [r.sentence() for r in self.remotes] or [
            "no remote (add one: git remote add NAME URL)"
        ]
        out.append(f"records: {self.records}" if self.records else "records: in place")
        out.append(f"merge: {self.merge}" if self.merge else "merge: nothing to settle")
        out.append(
            f"merge drivers: {self.drivers}" if self.drivers else "merge drivers: registered"
        )
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "branch": self.branch,
            "head": self.head,
            "remotes": [r.to_json() for r in self.remotes],
            "records": self.records,
            "merge": self.merge,
            "drivers": self.drivers,
        }


def _remotes(ws: Workspace) -> list[RemoteStatus]:
    config = _remote_config(ws.store)
    names = sorted({k[len("remote.") :].rpartition(".")[0] for k in config})
    private = is_private(ws)
    out: list[RemoteStatus] = []
    for name in names:
        fetch = config.get(f"remote.{name}.fetch", [])
        push = config.get(f"remote.{name}.push", [])
        if private:  # a plain push sends the last projection (`configure_shared_push`)
            wanted = [
                f"{SHARED_PREFIX}heads/*:refs/heads/*",
                f"{SHARED_PREFIX}evolve/*:refs/evolve/*",
            ]
        else:
            wanted = [f"{EVOLVE_REFS}*:{EVOLVE_REFS}*"]
        out.append(
            RemoteStatus(
                name=name,
                url=(config.get(f"remote.{name}.url") or [""])[-1],
                fetches_records=f"+{EVOLVE_REFS}*:refs/remotes/{name}/evolve/*" in fetch,
                pushes_records=all(spec in push for spec in wanted),
            )
        )
    return out


def status(ws: Workspace) -> Status:
    """Whether `ws` travels whole: its remotes' refspecs, its records, an unsettled merge.

    Raises:
        EvolveError: git could not read the remotes' settings.
    """
    from evolve.history import require_records
    from evolve.txn._unsettled import unsettled_sentence

    store = ws.store
    branch = store.head_branch()
    result = Status(branch.removeprefix("refs/heads/") if branch else None, store.head())
    result.remotes = _remotes(ws)
    try:
        require_records(store, ws.config.persona)
    except EvolveError as exc:
        result.records = str(exc)
    result.merge = unsettled_sentence(ws, "evolve train")
    if not drivers_installed(ws.root):
        result.drivers = DRIVERS_MISSING
    return result
