"""An evict stands or falls with the add it makes room for (issue 23 item 1).

ace (at its cap), topl, trace and reflexion evict to make room for a new unit. When the
applier refuses that unit (a tombstone, a cap on its size), the evict is refused with it:
memory never shrinks for a unit it did not gain. The property test drives the applier with
1,000 seeded random batches full of refusals.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from functools import partial
from typing import Any

import pytest

from evolve.applier import MemoryApplier, Op
from evolve.llm import MockLLM
from evolve.memory import MemoryUnit, dump_unit, load_units
from evolve.updaters import EpisodeView, RecipeContext, get_recipe
from evolve.updaters._trace import sentence
from evolve.workspace import Workspace, init_workspace
from factories import memory_unit

ALEX = "user:alex"
NOW = "2026-04-04T00:00:00+00:00"
NEW = "Always send Venmo payments with private visibility."


def _plant(ws: Workspace, units: Sequence[MemoryUnit]) -> None:
    for u in units:
        path = ws.root / u.path()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(dump_unit(u), "utf-8")


def _ctx(units: Sequence[MemoryUnit], reply: dict[str, Any]) -> RecipeContext:
    return RecipeContext(
        units=list(units),
        scope=ALEX,
        episode=EpisodeView(
            episode=40,
            task_id="pay_back-1",
            instruction="Pay Sam back on Venmo.",
            actions="",
            complaint="My payment to Sam was visible to everyone.",
            accepted=False,
        ),
        llm=MockLLM([json.dumps(reply)]),
        seed=0,
        now=NOW,
        tools=("venmo__send_payment",),
    )


def _full(recipe: str, n: int, kind: str, **fields: Any) -> list[MemoryUnit]:
    return [
        memory_unit(
            f"{recipe}-{i:010d}",
            f"Old {recipe} statement number {i} about something else.",
            recipe=recipe,
            kind=kind,
            created_episode=i,
            valid_from=f"2026-01-01T00:00:{i:02d}.000000+00:00",
            **fields,
        )
        for i in range(n)
    ]


TRACE_TEXT = sentence("venmo__send_payment", "visibility", "equals", "private")
CASES: dict[str, tuple[list[MemoryUnit], dict[str, Any], str]] = {
    # recipe: (units at its cap, the updater's reply, the new unit's text)
    "ace": (
        _full("ace", 12, "bullet", helpful=0, harmful=0),
        {"operations": [{"op": "add", "text": NEW}], "bullet_tags": []},
        NEW,
    ),
    "topl": (
        _full("topl", 60, "assertion", alpha=2.0, beta=1.0),
        {"assertions": [NEW]},
        NEW,
    ),
    "trace": (
        [
            u.with_(api="phone__send_text_message", argument="message").with_(
                predicate="contains", value=f"v{i}"
            )
            for i, u in enumerate(_full("trace", 12, "check"))
        ],
        {
            "checks": [
                {
                    "api": "venmo__send_payment",
                    "argument": "visibility",
                    "predicate": "equals",
                    "value": "private",
                }
            ]
        },
        TRACE_TEXT,
    ),
    "reflexion": (
        _full("reflexion", 3, "reflection"),
        {"reflection": NEW},
        NEW,
    ),
}


@pytest.mark.parametrize("recipe", sorted(CASES))
def test_a_refused_new_unit_takes_its_evict_with_it(workspace: Workspace, recipe: str) -> None:
    full, reply, text = CASES[recipe]
    stone = memory_unit(
        "hand-stone", text, recipe=recipe, status="tombstoned", reason="reverted by hand"
    )
    _plant(workspace, [*full, stone])
    units = load_units(workspace.root)
    update = get_recipe(recipe).observe(_ctx(units, reply))
    evicts = [op for op in update.ops if op.op == "evict"]
    assert evicts, update  # the recipe made room for the new unit ...
    (add,) = [op for op in update.ops if op.op == "add"]
    assert all(op.room_for == add.id and op.reason for op in evicts)  # ... and said so
    applier = MemoryApplier(workspace, ALEX)
    result = applier.apply(update.ops, units)
    applier.done()
    assert result.applied == []
    assert {r.op for r in result.refused} == {"add", "evict"}
    assert any(r.op == "evict" and "goes with add" in r.reason for r in result.refused)
    active = {u.id for u in load_units(workspace.root) if u.status == "active"}
    assert active == {u.id for u in full}  # nothing lost


@pytest.mark.parametrize("recipe", sorted(CASES))
def test_an_accepted_new_unit_evicts_by_the_recipe_rule(workspace: Workspace, recipe: str) -> None:
    full, reply, _ = CASES[recipe]
    _plant(workspace, full)
    units = load_units(workspace.root)
    update = get_recipe(recipe).observe(_ctx(units, reply))
    applier = MemoryApplier(workspace, ALEX)
    result = applier.apply(update.ops, units)
    applier.done()
    assert sorted(op.op for op in result.applied) == ["add", "evict"], result.refused
    active = [u for u in load_units(workspace.root) if u.status == "active"]
    assert len(active) == len(full)


def test_an_evict_naming_no_unit_of_the_batch_is_refused(workspace: Workspace) -> None:
    (a, b) = _full("reflexion", 2, "reflection")
    _plant(workspace, [a, b])
    evict = Op(op="evict", unit=a, reason="keep last 3", room_for="reflexion-nowhere")
    applier = MemoryApplier(workspace, ALEX)
    result = applier.apply([evict], load_units(workspace.root))
    applier.done()
    (refusal,) = result.refused
    assert "makes room for, reflexion-nowhere, is not written" in refusal.reason
    assert {u.id for u in load_units(workspace.root)} == {a.id, b.id}


# --- the property ------------------------------------------------------------------------

STONED = "Never send a payment without a note."
TEXTS = [
    "Sign every text with my first name.",
    "Pay with the card I use most often.",
    "Use bulleted lists in notes.",
    "Open emails with Hi and the first name.",
    STONED,
    "y" * 320,  # over the reflexion cap of 300 characters per unit
]
KEEP = 3  # reflexion's cap
_refl = partial(memory_unit, recipe="reflexion", kind="reflection", created_episode=0)


def _batch(rng: random.Random) -> tuple[list[MemoryUnit], list[Op]]:
    """Starting reflexion units (at most the cap active, a tombstone) and a random batch: new
    units with and without the evict that makes room for them, stand-alone evicts, revokes,
    tombstones, and ops the applier must refuse (unknown ids, another scope, a tombstoned or
    oversized text, an evict whose partner is missing)."""
    units = [_refl("reflexion-stone", STONED, status="tombstoned")]
    for i in range(rng.randint(0, 5)):
        status = "active" if i < KEEP and rng.random() < 0.8 else "revoked"
        stamp = f"2026-01-01T00:00:{i:02d}.000000+00:00"
        units.append(_refl(f"reflexion-old{i}", TEXTS[i % 4], status=status, valid_from=stamp))
    live = [u for u in units if u.status == "active"]
    ops: list[Op] = []
    for n in range(rng.randint(1, 5)):
        kind = rng.choice(["pair", "pair", "add", "evict", "revoke", "stone", "bad"])
        new = _refl(
            f"reflexion-new{n}",
            rng.choice(TEXTS),
            scope=ALEX if rng.random() < 0.9 else "user:casey",
            valid_from=f"2026-02-01T00:00:{n:02d}.000000+00:00",
        )
        victim = rng.choice(live) if live else None
        if kind == "pair" and victim is not None:
            room = new.id if rng.random() < 0.9 else "reflexion-nowhere"
            ops.append(Op(op="add", unit=new))
            ops.append(
                Op(op="evict", unit=victim, reason=f"keep last 3: for {room}", room_for=room)
            )
        elif kind == "add":
            ops.append(Op(op="add", unit=new))
        elif kind == "evict" and victim is not None:
            ops.append(Op(op="evict", unit=victim, reason="memory held more than the cap"))
        elif kind == "revoke" and victim is not None:
            by = rng.choice([None, new.id])
            ops.append(Op(op="revoke", unit=victim.with_(status="revoked", revoked_by=by)))
            if by is not None and rng.random() < 0.7:
                ops.append(Op(op="add", unit=new))
        elif kind == "stone" and victim is not None:
            ops.append(Op(op="tombstone", unit=victim.with_(status="tombstoned")))
        elif kind == "bad":
            ghost = _refl("reflexion-ghost", "A unit that is not in memory.")
            ops.append(Op(op=rng.choice(["modify", "evict", "revoke"]), unit=ghost, reason="x"))
    rng.shuffle(ops)
    return units, ops


def _check(before: list[MemoryUnit], ops: list[Op], ws: Workspace) -> None:
    applier = MemoryApplier(ws, ALEX)
    result = applier.apply(ops, load_units(ws.root))
    applier.done()
    assert len(result.applied) + len(result.refused) == len(ops)
    after = {u.id: u for u in load_units(ws.root)}
    applied = {(op.op, op.id): op for op in result.applied}
    written = {op.id for op in result.applied if op.op in ("add", "modify", "reactivate")}
    for u in before:
        if u.status != "active":
            continue
        now = after.get(u.id)
        if now is not None and now.status == "active":
            continue
        # It left: an applied op that takes knowledge away named it ...
        taker = next(
            (applied[k] for k in (("evict", u.id), ("revoke", u.id), ("tombstone", u.id))
             if k in applied),
            None,
        )  # fmt: skip
        assert taker is not None, (u.id, result)
        if taker.op == "evict":
            # ... with its reason, and the unit it made room for was written.
            assert taker.reason, taker
            assert taker.room_for is None or taker.room_for in written, (taker, result)
            if taker.room_for is not None:
                assert after[taker.room_for].status == "active"
    live_before = sum(u.status == "active" for u in before)
    live_after = sum(u.status == "active" and u.recipe == "reflexion" for u in after.values())
    assert live_after <= max(KEEP, live_before), result  # the cap holds


@pytest.mark.slow
def test_active_units_shrink_only_by_a_stated_op_whose_partner_was_applied(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    ws = init_workspace(tmp_path_factory.mktemp("evict") / "ws")
    rng = random.Random(23)
    folder = ws.root / "memory" / "alex"
    refused_pairs = 0
    for _ in range(1000):
        units, ops = _batch(rng)
        for path in folder.glob("*.md"):
            path.unlink()
        _plant(ws, units)
        _check(units, ops, ws)
        refused_pairs += any(op.op == "evict" and op.room_for for op in ops)
    assert refused_pairs > 300  # the batches did exercise paired evicts
