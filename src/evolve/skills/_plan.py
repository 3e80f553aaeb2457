"""From the evolver's reply to operations: verdicts, caps, promotion (pure functions).

The evolver sees the shelves and all of a batch's candidates at once and gives one verdict per
candidate: ADD, MERGE, REVISE or SKIP. Its reply is hostile input and its
caps are not trusted: this module enforces them in code. A shelf at its cap makes ADD
unavailable; an ADD there is refused with the reason (not dropped silently), so the verdict
had to be MERGE, REVISE or SKIP. Nothing here writes: the plan's ops go through the applier,
which checks the caps once more.

Promotion: the evolver names each candidate's failure shape. A shape seen under at least
`promote_min_topics` topics, counting the staging area, with at least `staging_threshold`
sightings, is promoted: the evolver's context-free rewrite of it (its `general` entry) is
added to the general shelf (or merged into the general skill it names). A rewrite that still
names an app or the source tasks' specifics is refused. Shapes not promoted are staged.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from evolve._format._units import content_id
from evolve.memory import MemoryUnit, Status, learned_time
from evolve.memory._similarity import normalize
from evolve.ops import Op, Refusal, items
from evolve.skills._filter import TaskSpecifics, screen
from evolve.skills._reflect import MAX_LESSON, MAX_TRIGGER, NO_APP_TOPIC, Candidate
from evolve.skills._staging import Sighting, Staging
from evolve.workspace import ShelfCaps

RECIPE = "skills"
KIND = "skill"
VERDICTS = ("ADD", "MERGE", "REVISE", "SKIP")
_LIVE = ("active", "pending")
_SLUG = re.compile(r"^[a-z0-9][a-z0-9-]{0,47}$")
_TICK = timedelta(microseconds=1)
MAX_EVIDENCE = 12


def shelf_key(unit: MemoryUnit) -> str | None:
    """`general`, `topics/<topic>`, or None for a unit that is not on a shelf."""
    if unit.shelf is None:
        return None
    return "general" if unit.shelf == "general" else f"topics/{unit.topic}"


def cap_of(shelf: str, caps: ShelfCaps) -> int:
    return caps.general if shelf == "general" else caps.per_topic


def live_skills(units: Sequence[MemoryUnit], scope: str = "global") -> dict[str, MemoryUnit]:
    """The skills on the shelves the batch may change: live, of `scope`, by id."""
    return {
        u.id: u
        for u in units
        if u.shelf is not None and u.status in _LIVE and u.scope == scope and u.kind == KIND
    }


def occupancy(skills: Mapping[str, MemoryUnit]) -> dict[str, int]:
    """Slots taken per shelf (a pending proposed change stands in its original's slot)."""
    out: dict[str, int] = {}
    for unit in skills.values():
        key = shelf_key(unit)
        if (
            key is not None
            and unit.status in _LIVE
            and not (unit.status == "pending" and unit.supersedes)
        ):
            out[key] = out.get(key, 0) + 1
    return out


@dataclass
class Maker:
    """Makes the units of one batch: ids and `valid_from` stamps (deterministic ids)."""

    stream: str
    batch: int
    episode: int  # the batch's last episode
    now: str
    scope: str = "global"
    status: Status = "active"  # pending under --review
    _n: int = 0
    _last: datetime | None = None

    def new_id(self, text: str) -> str:
        """Deterministic for (stream, batch, n) and the lesson: two branches of one stream
        never give one id to two lessons (`evolve._format._units.content_id`)."""
        self._n += 1
        return content_id("skill", f"{self.stream}|{self.batch}|{self._n}", text)

    def stamp(self, units: Sequence[MemoryUnit]) -> str:
        try:
            now = datetime.fromisoformat(self.now.replace("Z", "+00:00"))
        except ValueError:
            now = datetime.now(UTC)
        if now.tzinfo is None:
            now = now.replace(tzinfo=UTC)
        floor = max((learned_time(u) for u in units), default=None)
        if self._last is not None:
            floor = self._last if floor is None else max(floor, self._last)
        when = now if floor is None or now > floor else floor + _TICK
        self._last = when
        return when.isoformat(timespec="microseconds")


@dataclass
class VerdictLine:
    """One candidate's verdict as the commit body lists it."""

    ref: str
    verdict: str  # ADD / MERGE / REVISE / SKIP / REFUSED
    target: str | None
    why: str
    shape: str
    candidate: Candidate | None = None


@dataclass
class BatchPlan:
    ops: list[Op] = field(default_factory=list)
    refused: list[Refusal] = field(default_factory=list)
    verdicts: list[VerdictLine] = field(default_factory=list)
    promoted: list[tuple[str, str]] = field(default_factory=list)  # (shape, skill id)
    staging: Staging = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    # normalized text -> id of a skill the scoreboard retired: never learned again
    retired: dict[str, str] = field(default_factory=dict)

    def retired_by(self, *texts: str | None) -> str | None:
        for text in texts:
            ident = self.retired.get(normalize(text)) if text else None
            if ident is not None:
                return f"the scoreboard retired this lesson ({ident}); it is not learned again"
        return None

    def trailer_ops(self) -> list[tuple[str, str]]:
        """`Evolve-Ops` pairs: add/merge/revise=<skill id>, skip/refuse=<candidate>,
        promote=<general skill id> (the existing parser reads them as (op, id) pairs)."""
        out: list[tuple[str, str]] = []
        for v in self.verdicts:
            name = v.verdict.lower()
            out.append(
                (name, v.target if name in ("add", "merge", "revise") and v.target else v.ref)
            )
        out += [("promote", ident) for _, ident in self.promoted]
        return out


def slug(text: str) -> str:
    words = re.findall(r"[a-z0-9]+", text.lower())
    return "-".join(words)[:48].strip("-") or "shape"


def _text(value: object, limit: int) -> str | None:
    if not isinstance(value, str):
        return None
    out = " ".join(value.split())
    return out if out and len(out) <= limit else None


def _entries(data: object, key: str, plan: BatchPlan) -> list[dict[str, Any]]:
    if not isinstance(data, dict) or data.get(key) is None:
        return []
    return items(data, key, plan, op="evolve")


def plan_batch(
    units: Sequence[MemoryUnit],
    candidates: Sequence[Candidate],
    reply: object,
    *,
    caps: ShelfCaps,
    maker: Maker,
    staging: Staging,
    promote_min_topics: int = 2,
    staging_threshold: int = 2,
    topics: frozenset[str] = frozenset(),
) -> BatchPlan:
    """The batch's operations from the evolver's (parsed) reply; never over a cap.

    `units` are the workspace's units (the shelves are read from them); `topics` are the apps
    of the environment, which a general lesson may not name.
    """
    plan = BatchPlan()
    plan.retired = {normalize(u.text): u.id for u in units if u.status == "retired" and u.shelf}
    before = live_skills(units, maker.scope)
    state = dict(before)
    by_ref = {c.ref: c for c in candidates}
    seen: set[str] = set()
    shapes: dict[str, list[Candidate]] = {}
    if not isinstance(reply, dict):
        plan.refused.append(
            Refusal(op="evolve", what=str(reply)[:80], reason="the reply is not a JSON object")
        )
    for entry in _entries(reply, "verdicts", plan):
        ref = entry.get("candidate")
        cand = by_ref.get(ref) if isinstance(ref, str) else None
        if cand is None:
            plan.refused.append(
                Refusal(op="evolve", what=str(ref)[:80], reason="names no candidate of this batch")
            )
            continue
        if cand.ref in seen:
            plan.refused.append(
                Refusal(op="evolve", what=cand.ref, reason="a second verdict for one candidate")
            )
            continue
        seen.add(cand.ref)
        shape_raw = entry.get("shape")
        shape = (
            shape_raw
            if isinstance(shape_raw, str) and _SLUG.match(shape_raw)
            else slug(cand.lesson)
        )
        shapes.setdefault(shape, []).append(cand)
        line = _verdict(entry, cand, shape, state, caps, maker, units, plan, topics)
        plan.verdicts.append(line)
    for cand in candidates:
        if cand.ref not in seen:
            plan.verdicts.append(
                VerdictLine(
                    cand.ref,
                    "SKIP",
                    None,
                    "the evolver gave it no verdict",
                    slug(cand.lesson),
                    cand,
                )
            )
            plan.refused.append(
                Refusal(
                    op="evolve", what=cand.ref, reason="no verdict for this candidate (skipped)"
                )
            )
    _promote(reply, shapes, state, caps, maker, units, plan, staging, promote_min_topics, staging_threshold, topics)  # fmt: skip
    plan.ops = _ops(before, state)
    return plan


def _refuse(
    plan: BatchPlan, cand: Candidate, verdict: str, shape: str, what: str, why: str
) -> VerdictLine:
    plan.refused.append(Refusal(op=verdict.lower(), what=what[:80], reason=why))
    return VerdictLine(cand.ref, "REFUSED", None, f"{verdict} refused: {why}", shape, cand)


def _verdict(
    entry: dict[str, Any],
    cand: Candidate,
    shape: str,
    state: dict[str, MemoryUnit],
    caps: ShelfCaps,
    maker: Maker,
    units: Sequence[MemoryUnit],
    plan: BatchPlan,
    topics: frozenset[str] = frozenset(),
) -> VerdictLine:
    verdict = str(entry.get("verdict", "")).strip().upper()
    why = _text(entry.get("why"), 300) or ""
    if verdict not in VERDICTS:
        return _refuse(
            plan,
            cand,
            "verdict",
            shape,
            str(entry.get("verdict"))[:40],
            "not ADD, MERGE, REVISE or SKIP",
        )
    if verdict == "SKIP":
        return VerdictLine(cand.ref, "SKIP", None, why or "skipped", shape, cand)
    lesson = _text(entry.get("lesson"), MAX_LESSON)
    trigger = _text(entry.get("trigger"), MAX_TRIGGER)
    evidence = f"episode {cand.episode} ({cand.task_id})"
    for text in (lesson, trigger):
        bad = screen(text, cand.task) if text else None
        if bad is not None:
            return _refuse(plan, cand, verdict, shape, text or "", f"the evolver's text {bad}")
    retired = plan.retired_by(lesson or (cand.lesson if verdict == "ADD" else None))
    if retired is not None:
        return _refuse(plan, cand, verdict, shape, lesson or cand.lesson, retired)
    if verdict == "ADD":
        shelf = f"topics/{cand.topic}"
        used = occupancy(state).get(shelf, 0)
        if used >= caps.per_topic:
            return _refuse(
                plan, cand, "ADD", shape, cand.lesson,
                f"ADD is unavailable: the shelf {shelf} is full ({used}/{caps.per_topic}); "
                "merge, revise or skip",
            )  # fmt: skip
        unit = MemoryUnit(
            id=maker.new_id(lesson or cand.lesson),
            recipe=RECIPE,
            kind=KIND,
            status=maker.status,
            scope=maker.scope,
            created_episode=cand.episode,
            updated_episode=cand.episode,
            valid_from=maker.stamp([*units, *state.values()]),
            shelf="topic",
            topic=cand.topic,
            trigger=trigger or cand.trigger,
            evidence=[evidence],
            source_task=cand.task_id,
            text=lesson or cand.lesson,
        )
        state[unit.id] = unit
        return VerdictLine(cand.ref, "ADD", unit.id, why or "new on its shelf", shape, cand)
    target_id = entry.get("target")
    target = state.get(target_id) if isinstance(target_id, str) else None
    if target is None:
        return _refuse(
            plan,
            cand,
            verdict,
            shape,
            str(target_id)[:40],
            "its target names no skill on the shelves shown",
        )
    if target.is_hand_written:
        return _refuse(
            plan,
            cand,
            verdict,
            shape,
            target.id,
            "its target is hand-written; people edit their own skills",
        )
    if shelf_key(target) not in ("general", f"topics/{cand.topic}"):
        return _refuse(
            plan,
            cand,
            verdict,
            shape,
            target.id,
            f"its target is on another topic's shelf ({shelf_key(target)})",
        )
    if verdict == "REVISE" and lesson is None:
        return _refuse(plan, cand, verdict, shape, target.id, "a REVISE needs the new lesson")
    if shelf_key(target) == "general":
        # The general shelf is context-free, whichever way a text gets there.
        context = _app_context(cand.task, topics | {cand.topic})
        for text in (lesson, trigger):
            bad = screen(text, context) if text else None
            if bad is not None:
                return _refuse(
                    plan, cand, verdict, shape, text or "",
                    f"its target is a general skill, whose text must be context-free; it {bad}",
                )  # fmt: skip
    kept = [e for e in (target.evidence or []) if e != evidence]
    state[target.id] = target.with_(
        text=lesson or target.text,
        trigger=trigger or target.trigger,
        evidence=[*kept, evidence][-MAX_EVIDENCE:],
        updated_episode=cand.episode,
    )
    return VerdictLine(cand.ref, verdict, target.id, why or verdict.lower(), shape, cand)


def _promote(
    reply: object,
    shapes: dict[str, list[Candidate]],
    state: dict[str, MemoryUnit],
    caps: ShelfCaps,
    maker: Maker,
    units: Sequence[MemoryUnit],
    plan: BatchPlan,
    staging: Staging,
    min_topics: int,
    threshold: int,
    topics: frozenset[str],
) -> None:
    general: dict[str, dict[str, Any]] = {}
    for entry in _entries(reply, "general", plan):
        shape = entry.get("shape")
        if isinstance(shape, str) and _SLUG.match(shape) and shape not in general:
            general[shape] = entry
    out: Staging = {k: Sighting(dict(v.by_topic), list(v.evidence)) for k, v in staging.items()}
    for shape, cands in sorted(shapes.items()):
        seen = Sighting()
        for cand in cands:
            seen.add(cand.topic, f"episode {cand.episode} ({cand.task_id})")
        total = out.get(shape, Sighting()).joined(seen)
        # only apps count as topics: a lesson from a trajectory that called no app (its shelf is
        # NO_APP_TOPIC) is no evidence that the shape recurs across apps
        apps_seen = [t for t in total.topics if t != NO_APP_TOPIC and (not topics or t in topics)]
        if len(apps_seen) < min_topics or total.count < threshold:
            out[shape] = total
            continue
        rewrite = general.get(shape)
        if rewrite is None:
            plan.notes.append(
                f"shape {shape} is seen under {', '.join(total.topics)} but the evolver wrote no "
                "context-free lesson for it; it stays staged"
            )
            out[shape] = total
            continue
        ident = _general(rewrite, shape, cands, total, state, caps, maker, units, plan, topics)
        if ident is None:
            out[shape] = total
        else:
            out.pop(shape, None)
            plan.promoted.append((shape, ident))
    plan.staging = out


def _app_context(task: TaskSpecifics, topics: frozenset[str]) -> TaskSpecifics:
    """`task`'s specifics plus the apps' names: what a general skill's text may not name."""
    names = topics | task.topics
    # the apps' names, whole ("note" alone is an ordinary word; "simple_note" is the app)
    spaced = frozenset(n for t in names if "_" in t for n in (t, t.replace("_", " ")))
    return TaskSpecifics(
        task.task_id, task.words | frozenset(names), task.phrases | spaced, task.numbers
    )


def _general(
    entry: dict[str, Any],
    shape: str,
    cands: list[Candidate],
    seen: Sighting,
    state: dict[str, MemoryUnit],
    caps: ShelfCaps,
    maker: Maker,
    units: Sequence[MemoryUnit],
    plan: BatchPlan,
    topics: frozenset[str],
) -> str | None:
    lesson = _text(entry.get("lesson"), MAX_LESSON)
    trigger = _text(entry.get("trigger"), MAX_TRIGGER)
    if lesson is None or trigger is None:
        plan.refused.append(Refusal(op="promote", what=shape, reason="no lesson or trigger"))
        return None
    retired = plan.retired_by(lesson)
    if retired is not None:
        plan.refused.append(Refusal(op="promote", what=lesson[:80], reason=retired))
        return None
    task = cands[0].task
    for cand in cands[1:]:
        task = task.merged(cand.task)
    context = _app_context(task, topics | frozenset(seen.topics))
    for text in (lesson, trigger):
        bad = screen(text, context)
        if bad is not None:
            plan.refused.append(
                Refusal(
                    op="promote",
                    what=text[:80],
                    reason=f"a general lesson must be context-free; it {bad}",
                )
            )
            return None
    evidence = seen.evidence[-MAX_EVIDENCE:]
    target_id = entry.get("target")
    if isinstance(target_id, str) and target_id:
        target = state.get(target_id)
        if target is None or shelf_key(target) != "general" or target.is_hand_written:
            plan.refused.append(
                Refusal(
                    op="promote",
                    what=str(target_id)[:40],
                    reason="its target is no learned general skill shown",
                )
            )
            return None
        kept = [e for e in (target.evidence or []) if e not in evidence]
        state[target.id] = target.with_(
            text=lesson, trigger=trigger, evidence=[*kept, *evidence][-MAX_EVIDENCE:],
            updated_episode=maker.episode,
        )  # fmt: skip
        return target.id
    used = occupancy(state).get("general", 0)
    if used >= caps.general:
        plan.refused.append(
            Refusal(
                op="promote",
                what=lesson[:80],
                reason=f"ADD is unavailable: the general shelf is full ({used}/{caps.general}); "
                "name a general skill to merge into",
            )
        )
        return None
    unit = MemoryUnit(
        id=maker.new_id(lesson),
        recipe=RECIPE,
        kind=KIND,
        status=maker.status,
        scope=maker.scope,
        created_episode=maker.episode,
        updated_episode=maker.episode,
        valid_from=maker.stamp([*units, *state.values()]),
        shelf="general",
        trigger=trigger,
        evidence=evidence,
        source_task=" ".join(sorted({c.task_id for c in cands}))[:200],
        text=lesson,
    )
    state[unit.id] = unit
    return unit.id


def _ops(before: Mapping[str, MemoryUnit], after: Mapping[str, MemoryUnit]) -> list[Op]:
    """One op per unit the plan changed: add for a new one, modify for a changed one."""
    out = []
    for ident, unit in after.items():
        old = before.get(ident)
        if old is None:
            out.append(Op(op="add", unit=unit, reason="skills batch"))
        elif old != unit:
            revoked = unit.status == "revoked" and old.status != "revoked"
            out.append(Op(op="revoke" if revoked else "modify", unit=unit, reason="skills batch"))
    for ident, unit in before.items():
        if ident not in after:
            out.append(Op(op="evict", unit=unit, reason="skills batch"))
    return out
