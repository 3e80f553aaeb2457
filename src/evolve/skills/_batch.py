"""A skills batch's plan, the proposer's half: verdicts and operations only.

`evolve train --recipe skills --episodes N` runs the episodes as usual; each failed episode is
reflected on at once (one call, `updaters._skills`) and its candidate is kept for the batch.
Every `skills.batch_size` episodes (batch k covers stream episodes k*B .. k*B+B-1), and after
the last episode for a partial batch, the evolver sees the shelves and every candidate of the
batch; `propose_batch` turns its verdicts into operations (`_plan`). Every
`skills.consolidate_every` batches a sleep pass follows (`propose_sleep`: merge, dedup, cut).

What happens to a plan is the writer's: `evolve.train._batch` has the applier write it with
the staging area under one journal and the store make **one commit for the batch**:

    skills · alex · batch 1 (episodes 4-7): add 1, merge 1, skip 1

with the trailers of an episode commit (`Evolve-Episode` is the batch's last episode, so a
stopped stream resumes after it; `Evolve-Episodes` lists them all) and
`Evolve-Kind: skills batch`, `Evolve-Batch: <k>`, and `Evolve-Ops` holding the verdicts
(`add=<skill> merge=<skill> revise=<skill> skip=<c3> refused=<c4> promote=<skill>`). A sleep
pass is committed on its own (`Evolve-Kind: skills consolidate`). Nothing here imports the
applier or the store.
"""

from __future__ import annotations

from collections.abc import Sequence

from evolve._format._message import BATCH as BATCH  # re-exported
from evolve._format._message import EPISODES as EPISODES  # re-exported
from evolve.llm import LLM
from evolve.memory import MemoryUnit
from evolve.ops import Refusal
from evolve.skills._consolidate import plan_consolidation
from evolve.skills._evolver import ask_consolidator, ask_evolver
from evolve.skills._plan import BatchPlan, Maker, plan_batch
from evolve.skills._reflect import Candidate
from evolve.skills._staging import Staging
from evolve.workspace import ShelfCaps

BATCH_KIND = "skills batch"
CONSOLIDATE_KIND = "skills consolidate"


def summary_of(plan: BatchPlan) -> dict[str, int]:
    """A batch's verdicts by kind (`add`, `merge`, `revise`, `skip`) and its promotions, in
    the order first seen: what the commit's subject line counts."""
    counts: dict[str, int] = {}
    for v in plan.verdicts:
        counts[v.verdict.lower()] = counts.get(v.verdict.lower(), 0) + 1
    if plan.promoted:
        counts["promote"] = len(plan.promoted)
    return counts


def propose_batch(
    evolver: LLM,
    units: Sequence[MemoryUnit],
    candidates: Sequence[Candidate],
    staging: Staging,
    *,
    caps: ShelfCaps,
    seed: int,
    maker: Maker,
    promote_min_topics: int,
    staging_threshold: int,
    topics: frozenset[str],
    refused: list[Refusal],
) -> BatchPlan:
    """The batch's plan: the evolver's verdicts on `candidates` against the shelves, as
    operations never over a cap (`plan_batch`). Without candidates, no call: the plan only
    carries the staging area. An evolver reply that is not JSON is a refusal in `refused`."""
    if not candidates:
        plan = BatchPlan()
        plan.staging = staging
        return plan
    reply = ask_evolver(evolver, units, candidates, staging, caps, seed, refused)
    return plan_batch(
        units,
        candidates,
        reply,
        caps=caps,
        maker=maker,
        staging=staging,
        promote_min_topics=promote_min_topics,
        staging_threshold=staging_threshold,
        topics=topics,
    )


def propose_sleep(
    evolver: LLM,
    units: Sequence[MemoryUnit],
    *,
    caps: ShelfCaps,
    seed: int,
    maker: Maker,
    topics: frozenset[str],
    refused: list[Refusal],
) -> BatchPlan:
    """A sleep pass's plan: the consolidator's merges, dedups and cuts of the shelves."""
    reply = ask_consolidator(evolver, units, caps, seed, refused)
    return plan_consolidation(units, reply, maker=maker, topics=topics)
