"""Skills (issue 13; seed 003's Evo-Harness): lessons compiled from failures onto capped shelves.

The write path: reflect on each failed episode (`_reflect`), screen the candidate
(`_filter`), let the evolver give each candidate of a batch a verdict against the shelves
(`_evolver`, `_plan`: caps in code, promotion through the staging area `_staging`), sleep
passes (`_consolidate`), and one commit per batch (`_batch`). Skill files are memory units
(`memory/skills/general/<id>.md`, `memory/skills/topics/<topic>/<id>.md`) written by the
applier and committed by the store like every other unit.

Names are imported on first use (PEP 562): the scoring path (`evolve run`) imports
`evolve.skills._select` without the write path's modules.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evolve.skills._batch import (
        BATCH,
        BATCH_KIND,
        CONSOLIDATE_KIND,
        EPISODES,
        BatchResult,
        SkillsBatches,
        SkillsUpdate,
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

_WHERE = {
    "BATCH": "evolve.skills._batch",
    "BATCH_KIND": "evolve.skills._batch",
    "CONSOLIDATE_KIND": "evolve.skills._batch",
    "EPISODES": "evolve.skills._batch",
    "BatchResult": "evolve.skills._batch",
    "SkillsBatches": "evolve.skills._batch",
    "SkillsUpdate": "evolve.skills._batch",
    "plan_consolidation": "evolve.skills._consolidate",
    "CONSOLIDATE_SCHEMA": "evolve.skills._evolver",
    "EVOLVE_SCHEMA": "evolve.skills._evolver",
    "render_candidates": "evolve.skills._evolver",
    "render_shelves": "evolve.skills._evolver",
    "render_staging": "evolve.skills._evolver",
    "TaskSpecifics": "evolve.skills._filter",
    "screen": "evolve.skills._filter",
    "specifics": "evolve.skills._filter",
    "BatchPlan": "evolve.skills._plan",
    "Maker": "evolve.skills._plan",
    "VerdictLine": "evolve.skills._plan",
    "cap_of": "evolve.skills._plan",
    "live_skills": "evolve.skills._plan",
    "occupancy": "evolve.skills._plan",
    "plan_batch": "evolve.skills._plan",
    "shelf_key": "evolve.skills._plan",
    "REFLECT_SCHEMA": "evolve.skills._reflect",
    "Candidate": "evolve.skills._reflect",
    "Reflection": "evolve.skills._reflect",
    "reflect": "evolve.skills._reflect",
    "topic_of": "evolve.skills._reflect",
    "STAGING_PATH": "evolve.skills._staging",
    "Sighting": "evolve.skills._staging",
    "Staging": "evolve.skills._staging",
    "dump_staging": "evolve.skills._staging",
    "parse_staging": "evolve.skills._staging",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'evolve.skills' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


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
    "BatchResult",
    "Candidate",
    "Maker",
    "Reflection",
    "Sighting",
    "SkillsBatches",
    "SkillsUpdate",
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
    "reflect",
    "render_candidates",
    "render_shelves",
    "render_staging",
    "screen",
    "shelf_key",
    "specifics",
    "topic_of",
]
