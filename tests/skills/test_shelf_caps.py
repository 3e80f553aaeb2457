"""Shelf caps hold in code whatever the evolver replies (issue 13, "Done means")."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evolve.applier import MemoryApplier
from evolve.memory import MemoryUnit, dump_unit, load_units
from evolve.ops import Op
from evolve.skills import Sighting, live_skills, occupancy, plan_batch
from evolve.workspace import ShelfCaps, Workspace
from factories import APPS, candidate, maker, skill

LESSONS = [
    "Read the changed item back before completing the task.",
    "Look up the recipient with a search call before writing.",
    "Set the visibility explicitly before paying.",
    "Set the sign-off explicitly before sending.",
    "End every task by calling complete_task.",
]
SHAPES = ["verify-final-state", "lookup-before-write", "explicit-sign-off", "BAD SHAPE"]


def _apply(state: dict[str, MemoryUnit], ops: list[Op]) -> dict[str, MemoryUnit]:
    out = dict(state)
    for op in ops:
        if op.op == "evict":
            out.pop(op.id, None)
        else:
            out[op.id] = op.unit
    return out


# Built once: hypothesis draws indices into these, which keeps 1,000 examples fast.
_CANDS = {
    (topic, i, lesson): candidate(f"c{i + 1}", topic, lesson, episode=i, task_id=f"task-{i}")
    for topic in APPS
    for i in range(8)
    for lesson in LESSONS
}
_GARBAGE = [None, 3, "x", [], [1, "a"], {"a": 1}, {"verdicts": "no"}, {"verdicts": [1, None]}]


@st.composite
def scenario(
    draw: st.DrawFn,
) -> tuple[list[MemoryUnit], list[Any], Any, ShelfCaps, dict[str, Sighting]]:
    caps = ShelfCaps(general=draw(st.integers(1, 5)), per_topic=draw(st.integers(1, 5)))
    units: list[MemoryUnit] = []
    for shelf in ("general", *APPS):
        cap = caps.general if shelf == "general" else caps.per_topic
        hand = draw(st.booleans())
        for i in range(draw(st.integers(0, cap))):
            topic = None if shelf == "general" else shelf
            units.append(
                skill(f"s-{shelf}-{i}", LESSONS[(i * 3) % 5], topic=topic,
                      recipe="hand" if hand and i == 0 else "skills")
            )  # fmt: skip
    n = draw(st.integers(1, 8))
    cands = [
        _CANDS[(draw(st.sampled_from(APPS)), i, draw(st.sampled_from(LESSONS)))] for i in range(n)
    ]
    ids = [u.id for u in units] + ["nope", "", "s-general-9"]
    refs = [c.ref for c in cands] + ["c99"]
    text = st.sampled_from([*LESSONS, None, "", "x" * 500, 7, "Pay Jamie back."])
    verdict = st.fixed_dictionaries(
        {
            "candidate": st.sampled_from([*refs, None, 4]),
            "verdict": st.sampled_from(["ADD", "MERGE", "REVISE", "SKIP", "add", "DELETE", None]),
        },
        optional={
            "target": st.sampled_from([*ids, None, 5]),
            "lesson": text,
            "trigger": text,
            "shape": st.sampled_from([*SHAPES, None]),
            "why": text,
        },
    )
    general = st.fixed_dictionaries(
        {
            "shape": st.sampled_from(SHAPES),
            "lesson": st.sampled_from([*LESSONS, "In venmo, check it."]),
            "trigger": st.sampled_from(["any task", "a task that writes"]),
        },
        optional={"target": st.sampled_from([*ids, None])},
    )
    reply = draw(
        st.one_of(
            st.fixed_dictionaries(
                {"verdicts": st.lists(verdict, max_size=12)},
                optional={"general": st.lists(general, max_size=4)},
            ),
            st.sampled_from(_GARBAGE),
        )
    )
    staged = draw(st.lists(st.sampled_from(SHAPES[:3]), max_size=3, unique=True))
    staging = {
        shape: Sighting({draw(st.sampled_from(APPS)): draw(st.integers(1, 3))}) for shape in staged
    }
    return units, cands, reply, caps, staging


@pytest.mark.slow  # 1,000 examples: ~5 s on a loaded machine
@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenario())
def test_shelves_never_exceed_their_caps_under_fuzzed_evolver_replies(
    case: tuple[list[MemoryUnit], list[Any], Any, ShelfCaps, dict[str, Sighting]],
) -> None:
    units, cands, reply, caps, staging = case
    plan = plan_batch(
        units, cands, reply, caps=caps, maker=maker(), staging=staging, topics=frozenset(APPS)
    )
    after = occupancy(live_skills(list(_apply(live_skills(units), plan.ops).values())))
    for shelf, used in after.items():
        assert used <= (caps.general if shelf == "general" else caps.per_topic), (shelf, reply)
    # every candidate got exactly one verdict line, and hand-written skills were not touched
    assert sorted(v.ref for v in plan.verdicts) == sorted(c.ref for c in cands)
    hand = {u.id for u in units if u.recipe == "hand"}
    assert not {op.id for op in plan.ops} & hand


def test_add_on_a_full_shelf_is_refused_and_logged_not_dropped() -> None:
    full = [skill(f"v{i}", LESSONS[i], topic="venmo") for i in range(5)]
    cands = [candidate("c1", "venmo", "Confirm the payment's audience before sending it."),
             candidate("c2", "phone", "Confirm the text's recipient before sending it.")]  # fmt: skip
    reply = {
        "verdicts": [
            {"candidate": "c1", "verdict": "ADD", "shape": "audience"},
            {"candidate": "c2", "verdict": "ADD", "shape": "recipient"},
        ]
    }
    plan = plan_batch(full, cands, reply, caps=ShelfCaps(), maker=maker(), staging={})
    by_ref = {v.ref: v for v in plan.verdicts}
    assert by_ref["c1"].verdict == "REFUSED" and "full" in by_ref["c1"].why
    assert any("topics/venmo is full (5/5)" in r.reason for r in plan.refused)
    assert by_ref["c2"].verdict == "ADD"  # the phone shelf has room
    assert [(op.op, op.unit.topic) for op in plan.ops] == [("add", "phone")]
    assert ("refused", "c1") in plan.trailer_ops()


def test_merge_on_a_full_shelf_is_taken() -> None:
    full = [skill(f"v{i}", LESSONS[i], topic="venmo") for i in range(5)]
    cand = candidate("c1", "venmo", "Set the visibility explicitly, always.")
    reply = {"verdicts": [{"candidate": "c1", "verdict": "MERGE", "target": "v2",
                           "lesson": "Set the visibility explicitly before every payment."}]}  # fmt: skip
    plan = plan_batch(full, [cand], reply, caps=ShelfCaps(), maker=maker(), staging={})
    assert [(op.op, op.id) for op in plan.ops] == [("modify", "v2")]
    unit = plan.ops[0].unit
    assert unit.text == "Set the visibility explicitly before every payment."
    assert unit.evidence == ["episode 0 (seed-0)", "episode 1 (pay_back-1)"]


def _commit_skills(ws: Workspace, units: list[MemoryUnit]) -> None:
    for unit in units:
        path = ws.root / str(unit.path())
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(dump_unit(unit), encoding="utf-8")
    ws.store.commit([str(u.path()) for u in units], "hand: skills")


def test_the_applier_refuses_an_add_to_a_full_shelf_whoever_proposes_it(
    workspace: Workspace,
) -> None:
    _commit_skills(workspace, [skill(f"v{i}", LESSONS[i], topic="venmo") for i in range(5)])
    units = load_units(workspace.root)
    applier = MemoryApplier(workspace, "global")
    extra = skill("v9", "Confirm the payment's audience first.", topic="venmo")
    other = skill("p1", "Confirm the text's recipient first.", topic="phone")
    changed = units[0].with_(text="Read the changed payment back before completing.")
    result = applier.apply(
        [Op(op="add", unit=extra), Op(op="add", unit=other), Op(op="modify", unit=changed)], units
    )
    applier.done()
    assert [r.reason for r in result.refused if r.what.startswith("Confirm the payment")]
    assert "skill shelf topics/venmo is full" in result.refused[0].reason
    assert sorted(op.id for op in result.applied) == ["p1", changed.id]
    assert not (workspace.root / "memory/skills/topics/venmo/v9.md").exists()
    assert (workspace.root / "memory/skills/topics/phone/p1.md").is_file()


def test_a_lesson_the_scoreboard_retired_is_not_learned_again() -> None:
    wrong = "Skip the final check: once the write call returns success, complete the task."
    retired = skill("old", wrong, topic="venmo", status="retired")
    cands = [candidate("c1", "venmo", wrong), candidate("c2", "phone", wrong, task_id="t-2")]
    reply = {
        "verdicts": [{"candidate": c, "verdict": "ADD", "shape": "skip"} for c in ("c1", "c2")],
        "general": [{"shape": "skip", "lesson": wrong, "trigger": "a task"}],
    }
    plan = plan_batch([retired], cands, reply, caps=ShelfCaps(), maker=maker(), staging={})
    assert plan.ops == [] and plan.promoted == []
    assert sum("retired this lesson (old)" in r.reason for r in plan.refused) == 3


@pytest.mark.parametrize(
    "path",
    [
        "memory/../evolve.yaml",
        "evalset/splits.yaml",
        "/etc/passwd",
        "memory/skills/x.md",
        "prompts/a.yaml",
    ],
)
def test_the_staging_write_is_confined_like_any_memory_write(
    workspace: Workspace, path: str
) -> None:
    from evolve.errors import PathRefused

    with pytest.raises(PathRefused):
        MemoryApplier(workspace, "global").apply([], [], extra_files={path: b"x: 1\n"})
    assert not workspace.store.dirty_paths(["memory", "evalset", "prompts"])
