"""The skills scoreboard's driver on the writer's side: count episodes, retire harmful skills.

The scoreboard itself (`evolve.skills._scoreboard`) is statistics and proposals: the `count`
ops of the episodes' outcomes, the `revoke` (retire) ops of skills whose lift is confidently
negative, the message that says why. Training applies them through the applier and commits
them through the store here; proposers never do.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from evolve.memory import GLOBAL_SCOPE, load_units
from evolve.skills._scoreboard import count_ops, retire_message, retire_ops
from evolve.skills._strata import Outcome, load_strata, strata_files
from evolve.store import EPISODE, KIND, OPS, RECIPE, format_ops
from evolve.txn import joined


@dataclass
class ScoreboardResult:
    count_commit: str | None = None
    retired: list[tuple[str, str | None]] = field(default_factory=list)  # (id, commit)


def _trailers(
    kind: str, episodes: str, recipe: str, ops: str, extra: Sequence[tuple[str, str]]
) -> list[tuple[str, str]]:
    return [(EPISODE, episodes), (RECIPE, recipe), (OPS, ops), (KIND, kind), *extra]


def settle(
    ws: Any,
    outcomes: Sequence[Outcome],
    *,
    episodes: str,
    recipe: str,
    confidence: float,
    extra_trailers: Sequence[tuple[str, str]] = (),
    extra_files: Mapping[str, bytes | None] | None = None,
) -> ScoreboardResult:
    """Count `outcomes` on the scoreboard (one commit, `Evolve-Kind: skill count`) and retire
    every skill that is then confidently harmful (one commit each, `Evolve-Kind: skill
    retire`, the evidence in the body). Goes through the applier and the store; the caller
    holds the writer lock (`evolve.txn.writer`). `extra_files` (the failed-task record,
    `evolve.skills._failed`) go with the first count commit, or in one of their own."""
    tx = joined(ws)
    result = ScoreboardResult()
    units = load_units(ws.root)
    ops = count_ops(units, outcomes)
    files = dict(extra_files or {})
    skills = [u.id for u in units if getattr(u, "kind", None) == "skill"]
    files.update(strata_files(ws.root, outcomes, keep=skills))
    for scope in sorted({op.unit.scope for op in ops} | ({GLOBAL_SCOPE} if files else set())):
        mine = [op for op in ops if op.unit.scope == scope]
        applied = tx.apply(mine, units, scope=scope, extra_files=files)
        files = {}
        if applied.paths:
            ids = ", ".join(op.id for op in applied.applied)
            body = f"Counted {len(applied.applied)} skill(s): {ids or 'none'}."
            if any(p.endswith("_strata.yaml") for p in applied.paths):
                body += "\nThe per-task counts changed (memory/skills/_strata.yaml)."
            if any(p.endswith("_failed_tasks.yaml") for p in applied.paths):
                body += "\nThe record of tasks failed so far changed (memory/skills/_failed_tasks.yaml)."
            result.count_commit = tx.commit(
                applied.paths,
                f"skills: scoreboard counts for episode(s) {episodes}",
                body=body,
                trailers=_trailers(
                    "skill count", episodes, recipe,
                    format_ops((op.op, op.id) for op in applied.applied), extra_trailers,
                ),
            )  # fmt: skip
        tx.end()
    units = load_units(ws.root)
    strata = load_strata(ws.root)
    for op, score in retire_ops(units, confidence, strata):
        applied = tx.apply([op], units, scope=op.unit.scope)
        commit = None
        if applied.paths:
            subject, body = retire_message(op, score)
            commit = tx.commit(
                applied.paths,
                subject,
                body=body,
                trailers=_trailers(
                    "skill retire", episodes, recipe, format_ops([("retire", op.id)]),
                    extra_trailers,
                ),
            )  # fmt: skip
        tx.end()
        result.retired.append((op.id, commit))
        units = load_units(ws.root)
    return result


def retire_pass(
    ws: Any,
    *,
    episodes: str,
    recipe: str,
    confidence: float,
    extra_trailers: Sequence[tuple[str, str]] = (),
) -> ScoreboardResult:
    """Retire every confidently harmful skill (one commit each); nothing to count."""
    return settle(
        ws, [], episodes=episodes, recipe=recipe, confidence=confidence,
        extra_trailers=extra_trailers,
    )  # fmt: skip
