"""The sleep pass: every `skills.consolidate_every` batches, merge, dedup and cut (no new input).

A skill library depends on the order of the stream; its own proposed fix is a periodic pass
that re-reads the whole harness with no new candidates. The consolidator's reply is hostile
input like the evolver's: merged skills must share a shelf, hand-written skills are never
merged away, cut or revised, and any text it writes must name no URL, path, e-mail, number or
(on the general shelf) app. A cut or merged-away skill is revoked (it stays in history, with
the reason), never deleted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from evolve.memory import MemoryUnit
from evolve.ops import Op, Refusal
from evolve.skills._filter import TaskSpecifics, screen
from evolve.skills._plan import (
    BatchPlan,
    Maker,
    VerdictLine,
    _entries,
    _ops,
    _text,
    live_skills,
    shelf_key,
)
from evolve.skills._reflect import MAX_LESSON, MAX_TRIGGER


def plan_consolidation(
    units: Sequence[MemoryUnit], reply: object, *, maker: Maker, topics: frozenset[str]
) -> BatchPlan:
    plan = BatchPlan()
    before = live_skills(units, maker.scope)
    state: dict[str, MemoryUnit] = dict(before)
    gone: set[str] = set()
    if not isinstance(reply, dict):
        plan.refused.append(
            Refusal(op="consolidate", what=str(reply)[:80], reason="not a JSON object")
        )
    for entry in _entries(reply, "actions", plan):
        action = str(entry.get("action", "")).strip().lower()
        why = _text(entry.get("why"), 300) or action
        if action == "merge":
            _merge(entry, state, gone, maker, topics, plan, why)
        elif action in ("cut", "revise"):
            ident = entry.get("id")
            unit = state.get(ident) if isinstance(ident, str) and ident not in gone else None
            bad = _untouchable(unit, ident)
            if bad is not None:
                plan.refused.append(Refusal(op=action, what=str(ident)[:40], reason=bad))
                continue
            assert unit is not None
            if action == "cut":
                state[unit.id] = _revoked(unit, maker, None, f"cut by the sleep pass: {why}")
                gone.add(unit.id)
                plan.verdicts.append(VerdictLine(unit.id, "CUT", unit.id, why, ""))
                continue
            text = _checked(entry, unit, topics, plan, "revise")
            if text is None:
                continue
            lesson, trigger = text
            state[unit.id] = unit.with_(text=lesson, trigger=trigger, updated_episode=maker.episode)
            plan.verdicts.append(VerdictLine(unit.id, "REVISE", unit.id, why, ""))
        else:
            plan.refused.append(
                Refusal(op="consolidate", what=action[:40], reason="not merge, cut or revise")
            )
    plan.ops = _ops(before, state)
    return plan


def _untouchable(unit: MemoryUnit | None, ident: object) -> str | None:
    if unit is None:
        return f"names no live learned skill ({str(ident)[:40]})"
    if unit.is_hand_written:
        return "a hand-written skill; people edit their own skills"
    return None


def _merge(
    entry: Mapping[str, Any],
    state: dict[str, MemoryUnit],
    gone: set[str],
    maker: Maker,
    topics: frozenset[str],
    plan: BatchPlan,
    why: str,
) -> None:
    ids = entry.get("ids")
    if not isinstance(ids, list) or len(ids) < 2 or not all(isinstance(i, str) for i in ids):
        plan.refused.append(Refusal(op="merge", what=str(ids)[:80], reason="needs two or more ids"))
        return
    ids = list(dict.fromkeys(ids))
    found = [state.get(i) if i not in gone else None for i in ids]
    for ident, unit in zip(ids, found, strict=True):
        bad = _untouchable(unit, ident)
        if bad is not None:
            plan.refused.append(Refusal(op="merge", what=ident[:40], reason=bad))
            return
    units = [u for u in found if u is not None]
    if len({shelf_key(u) for u in units}) != 1:
        plan.refused.append(
            Refusal(op="merge", what=" ".join(ids)[:80], reason="merged skills must share a shelf")
        )
        return
    kept, rest = units[0], units[1:]
    text = _checked(entry, kept, topics, plan, "merge")
    if text is None:
        return
    lesson, trigger = text
    evidence = list(dict.fromkeys(e for u in units for e in (u.evidence or [])))[-12:]
    state[kept.id] = kept.with_(
        text=lesson, trigger=trigger, evidence=evidence, updated_episode=maker.episode
    )
    for unit in rest:
        state[unit.id] = _revoked(unit, maker, kept.id, f"merged into {kept.id} by the sleep pass")
        gone.add(unit.id)
    plan.verdicts.append(
        VerdictLine(
            kept.id, "MERGE", kept.id, f"{why} (merged {', '.join(u.id for u in rest)})", ""
        )
    )


def _checked(
    entry: Mapping[str, Any],
    unit: MemoryUnit,
    topics: frozenset[str],
    plan: BatchPlan,
    op: str,
) -> tuple[str, str] | None:
    lesson = _text(entry.get("lesson"), MAX_LESSON) or unit.text
    trigger = _text(entry.get("trigger"), MAX_TRIGGER) or unit.trigger or ""
    general = unit.shelf == "general"
    words = frozenset(topics) if general else frozenset()
    spaced = frozenset(n for t in words if "_" in t for n in (t, t.replace("_", " ")))
    context = TaskSpecifics("", words, spaced, frozenset())
    for text in (lesson, trigger):
        bad = screen(text, context) if text else None
        if bad is not None:
            plan.refused.append(Refusal(op=op, what=text[:80], reason=f"the new text {bad}"))
            return None
    return lesson, trigger


def _revoked(unit: MemoryUnit, maker: Maker, by: str | None, reason: str) -> MemoryUnit:
    return unit.with_(
        status="revoked",
        revoked_at=maker.episode,
        revoked_by=by,
        valid_to=maker.now,
        reason=reason,
        updated_episode=maker.episode,
    )


def consolidation_ops(plan: BatchPlan) -> list[Op]:
    return plan.ops
