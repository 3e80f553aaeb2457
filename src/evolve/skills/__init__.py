"""Skills: lessons compiled from failures onto capped shelves.

The write path: reflect on each failed episode (`_reflect`), screen the candidate
(`_filter`), let the evolver give each candidate of a batch a verdict against the shelves
(`_evolver`, `_plan`: caps in code, promotion through the staging area `_staging`), sleep
passes (`_consolidate`), and each batch's plan (`_batch`). This package proposes and reads: it
imports neither the applier nor the store. Skill files are memory units
(`memory/skills/general/<id>.md`, `memory/skills/topics/<topic>/<id>.md`) that training writes
through the applier and commits through the store, one commit per batch
(`evolve.train._batch`), like every other unit.

Names are imported on first use (PEP 562): the scoring path (`evolve run`) imports
`evolve.skills._select` without the write path's modules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evolve._lazy import lazy_exports

if TYPE_CHECKING:
    from evolve.skills._batch import (
        BATCH,
        BATCH_KIND,
        CONSOLIDATE_KIND,
        EPISODES,
        propose_batch,
        propose_sleep,
        summary_of,
    )
    from evolve.skills._consolidate import plan_consolidation
    from evolve.skills._evolver import (
        CONSOLIDATE_SCHEMA,
        EVOLVE_SCHEMA,
        render_candidates,
        render_shelves,
        render_staging,
    )
    from evolve.skills._filter import TaskSpecifics, screen, specifics
    from evolve.skills._plan import (
        BatchPlan,
        Maker,
        VerdictLine,
        cap_of,
        live_skills,
        occupancy,
        plan_batch,
        shelf_key,
    )
    from evolve.skills._reflect import REFLECT_SCHEMA, Candidate, Reflection, reflect, topic_of
    from evolve.skills._staging import STAGING_PATH, Sighting, Staging, dump_staging, parse_staging

_MODULES = {
    "evolve.skills._batch": (
        "BATCH",
        "BATCH_KIND",
        "CONSOLIDATE_KIND",
        "EPISODES",
        "propose_batch",
        "propose_sleep",
        "summary_of",
    ),
    "evolve.skills._consolidate": ("plan_consolidation",),
    "evolve.skills._evolver": (
        "CONSOLIDATE_SCHEMA",
        "EVOLVE_SCHEMA",
        "render_candidates",
        "render_shelves",
        "render_staging",
    ),
    "evolve.skills._filter": ("TaskSpecifics", "screen", "specifics"),
    "evolve.skills._plan": (
        "BatchPlan",
        "Maker",
        "VerdictLine",
        "cap_of",
        "live_skills",
        "occupancy",
        "plan_batch",
        "shelf_key",
    ),
    "evolve.skills._reflect": ("REFLECT_SCHEMA", "Candidate", "Reflection", "reflect", "topic_of"),
    "evolve.skills._staging": (
        "STAGING_PATH",
        "Sighting",
        "Staging",
        "dump_staging",
        "parse_staging",
    ),
}

__getattr__, __dir__ = lazy_exports(__name__, globals(), _MODULES)


__all__ = [
    "BATCH",
    "BATCH_KIND",
    "CONSOLIDATE_KIND",
    "CONSOLIDATE_SCHEMA",
    "EPISODES",
    "EVOLVE_SCHEMA",
    "REFLECT_SCHEMA",
    "STAGING_PATH",
    "BatchPlan",
    "Candidate",
    "Maker",
    "Reflection",
    "Sighting",
    "Staging",
    "TaskSpecifics",
    "VerdictLine",
    "cap_of",
    "dump_staging",
    "live_skills",
    "occupancy",
    "parse_staging",
    "plan_batch",
    "plan_consolidation",
    "propose_batch",
    "propose_sleep",
    "reflect",
    "render_candidates",
    "render_shelves",
    "render_staging",
    "screen",
    "shelf_key",
    "specifics",
    "summary_of",
    "topic_of",
]
