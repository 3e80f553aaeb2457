"""`evolve train --sync N`: pull before and push after every N episodes of the stream.

Each chunk of N episodes is one ordinary training run (its own transaction, its commits made
before the push), so a learner that loses a push race pulls, merges and pushes again
(`evolve.remote._travel.push`): its episodes are already committed and stay in its history
whatever the others pushed meanwhile. The persona clock of the next chunk starts after the
merged clock (a pull merges the timelines first).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from evolve.remote._travel import Travelled, pull, push
from evolve.workspace import Workspace


@dataclass
class SyncReport:
    """The training runs of one `evolve train --sync N`, and what each pull and push did."""

    reports: list[Any] = field(default_factory=list)  # evolve.train.TrainReport per chunk
    pulls: list[Travelled] = field(default_factory=list)
    pushes: list[Travelled] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "chunks": [r.to_json() for r in self.reports],
            "pulls": [p.to_json() for p in self.pulls],
            "pushes": [p.to_json() for p in self.pushes],
            "commits": [c for r in self.reports for c in r.commits],
        }


def resume_point(ws: Workspace, persona: str, recipe: str, seed: int, feedback: str) -> int:
    """The episode the stream runs next (as `evolve.train.train` resumes it)."""
    from evolve.train import last_episode, stream_id
    from evolve.train._trainref import last_run

    sid = stream_id(persona, recipe, seed, feedback)
    last = last_episode(ws, sid)
    ran = last_run(ws.store, sid)
    return 1 + max(-1 if last is None else last, -1 if ran is None else ran)


def train_synced(ws: Workspace, every: int, remote: str = "origin", **options: Any) -> SyncReport:
    """Train `ws`'s stream up to `options["episodes"]` (default `train.episodes`) in chunks
    of `every` episodes: pull, train the chunk, push (retried after a pull when it loses a
    race). Other options are `evolve.train.train`'s.

    Raises:
        EvolveError: as `pull`, `train` and `push` do; what was committed before stays.
    """
    from evolve.train import train

    if every < 1:
        raise ValueError("every must be at least 1")
    out = SyncReport()
    total = options.pop("episodes", None)
    while True:
        out.pulls.append(pull(ws, remote))
        ws = Workspace(ws.root)  # evolve.yaml may have changed with the pull
        cfg = ws.config
        end = total if total is not None else cfg.train.episodes
        start = resume_point(
            ws,
            options.get("persona") or cfg.persona,
            options.get("recipe") or cfg.train.recipe,
            cfg.train.seed if options.get("seed") is None else options["seed"],
            options.get("feedback") or cfg.train.feedback,
        )
        if start >= end:
            break
        report = train(ws, episodes=min(start + every, end), **options)
        out.reports.append(report)
        out.pushes.append(push(ws, remote))
        if report.end >= end or report.start >= report.end:
            break
    return out
