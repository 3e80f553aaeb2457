"""Research commits: how a search knows that cards were added since its last cycle.

`evolve research add` commits each card with the trailer `Evolve-Kind: research` (and
`Evolve-Card: <id>`). The pool's version is the number of such commits on the branch (0: the
starter pool alone): a search records the version its cycle started from, and a larger
version means new cards, so a new cycle starts from the champion (ScholarEvolve §3.4).
:func:`research_commits` lists the commits since a given one, with the cards they added.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from evolve._format._message import KIND

if TYPE_CHECKING:
    from evolve.workspace import Workspace

RESEARCH_KIND = "research"
CARD = "Evolve-Card"


@dataclass(frozen=True)
class ResearchCommit:
    """One commit of `evolve research add`: its sha and the card id it added or changed."""

    sha: str
    card: str


def research_commits(ws: Workspace, since: str | None = None) -> list[ResearchCommit]:
    """The research commits on the branch (reachable from HEAD), oldest first; with `since`,
    only those not reachable from it (the commit a cycle started from)."""
    store = ws.store
    if store.head() is None:
        return []
    rev = "HEAD" if since is None else f"{since}..HEAD"
    found = [
        ResearchCommit(info.sha, info.trailers.get(CARD, ""))
        for info in store.log(rev=rev, grep_trailer=KIND, grep_value=RESEARCH_KIND)
        if info.trailers.get(KIND) == RESEARCH_KIND
    ]
    return found[::-1]


def pool_version(ws: Workspace) -> int:
    """How many research commits the branch holds: 0 with the starter pool alone; it grows by
    one with each card `evolve research add` commits."""
    return len(research_commits(ws))
