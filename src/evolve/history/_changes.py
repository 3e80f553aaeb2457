"""Which commits are reverts, and what a commit changed and taught.

An evolve revert carries `Evolve-Kind: revert` (or `cascade revert`) and names what it undid
in `Evolve-Reverts`; a plain `git revert` says "This reverts commit <sha>" in its body. Both
the revert command (`_revert`) and what reads history for it (`_restarts`: records a later
commit restarted; `_gitrevert`: tombstones a plain `git revert` did not write) ask here, so
this module sits below all three.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from evolve._format._message import GIT_REVERT as GIT_REVERT  # re-exported
from evolve._format._message import REVERTS as REVERTS  # re-exported
from evolve._format._message import UNITS as UNITS  # re-exported
from evolve.history._content import is_counters_file, same_content, unit_of
from evolve.history._lines import added_lines, is_document
from evolve.memory import MemoryUnit
from evolve.memory._similarity import normalize
from evolve.store import KIND, CommitInfo, GitStore

REVERT_KINDS = ("revert", "cascade revert")
TRACKED = ["memory", "prompts"]
TAUGHT = ("active", "pending")  # statuses in which a unit teaches (a revert tombstones it)
_GIT_REVERT_LINE = re.compile(r"^This reverts commit ([0-9a-f]{7,64})\b", re.M)


def git_revert_target(info: CommitInfo) -> str | None:
    """The commit a plain `git revert` commit undid (its "This reverts commit <sha>" line)."""
    match = _GIT_REVERT_LINE.search(info.body)
    return match.group(1) if match else None


def is_revert(info: CommitInfo) -> bool:
    """An evolve revert, or a plain `git revert` of something."""
    return info.trailers.get(KIND) in REVERT_KINDS or git_revert_target(info) is not None


@dataclass(frozen=True)
class Change:
    """One file a commit changed in what it says: (path, before, after)."""

    path: str
    before: bytes | None
    after: bytes | None


def content_changes(store: GitStore, info: CommitInfo) -> list[Change]:
    """The memory/prompt files `info` changed in content (counter moves and sidecars aside)."""
    parent = info.parents[0]
    out = []
    for _, path in store.changed_paths(parent, info.sha, TRACKED):
        if is_counters_file(path):
            continue
        before, after = store.read(parent, path), store.read(info.sha, path)
        if not same_content(path, before, after):
            out.append(Change(path, before, after))
    return out


def taught_by(change: Change) -> MemoryUnit | None:
    """The unit `change` made active (or pending) with text it did not have, if any."""
    new, old = unit_of(change.path, change.after), unit_of(change.path, change.before)
    if new is None or new.status not in TAUGHT or not normalize(new.text):
        return None
    if old is not None and old.status in TAUGHT and normalize(old.text) == normalize(new.text):
        return None  # the same text stayed active: a status or field change taught nothing
    if is_document(new) and old is not None and old.status in TAUGHT:
        # A rewritten document taught the lines it added; those are what gets refused.
        lines = added_lines(old, new)
        return new.with_(text="\n".join(lines)) if lines else None
    return new


def uncancelled(store: GitStore, shas: list[str]) -> list[str]:
    """`shas` less each revert that a later one in the list undid, and that later one: the
    pair left the file as it was. Pairs are taken newest first, so a revert of a revert
    cancels that revert, and the commit they both followed stands (its effect is what the
    pair left)."""
    undid: dict[str, set[str]] = {}
    for sha in shas:
        info = store.commit_info(sha)
        target = git_revert_target(info)
        undid[sha] = set(info.trailers.get(REVERTS, "").split()) | ({target} if target else set())
    gone: set[str] = set()
    for sha, targets in reversed(undid.items()):
        if sha in gone:
            continue
        for other in shas:
            if other != sha and other not in gone and any(other.startswith(t) for t in targets):
                gone |= {sha, other}
                break
    return [s for s in shas if s not in gone]


def undid(info: CommitInfo, sha: str, unit: str | None = None) -> bool:
    """Whether `info` (a revert) took back `sha`: all of it, or, with `unit`, that unit's
    change. A per-unit revert (`Evolve-Units`) took back only the units it names."""
    target = git_revert_target(info)
    if not (
        sha in info.trailers.get(REVERTS, "").split()
        or (target is not None and sha.startswith(target))
    ):
        return False
    units = info.trailers.get(UNITS, "").split()
    return not units or (unit is not None and unit in units)


def git_revert_answers(store: GitStore, sha: str) -> list[CommitInfo]:
    """The commits evolve wrote to answer the plain `git revert` `sha` (its tombstones and
    records, trailer `Evolve-Git-Revert`), newest first."""
    out = store.git("log", "--fixed-strings", f"--grep={sha}", "--format=%H", f"{sha}..HEAD")
    found = [store.commit_info(c) for c in out.split()]
    return [c for c in found if c.trailers.get(GIT_REVERT) == sha]
