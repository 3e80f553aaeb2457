"""Issue 22: supersession that does not need the updater to name what it replaces.

On main, with an updater that names nothing, alex's "friends-only" (episode 0) and "private"
(episode 3) both stayed active; proposed again after the drift, "friends-only" was dropped as
a duplicate of the older bullet, and "private" kept rendering last (15/15 violations). Now a
repeat re-affirms the unit it repeats (it renders as the newest), and a statement on the
subject of an active unit that says something else replaces it, with no name given.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from evolve.llm._mock import MockLLM
from evolve.memory import MemoryUnit
from evolve.updaters import EpisodeView, RecipeContext, Update, get_recipe, render_for

ALEX = "user:alex"
FRIENDS = "Set my Venmo payments to friends-only visibility."
PRIVATE = "Keep all my Venmo payments private."
BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_drift.py"


def _unit(uid: str, recipe: str, text: str, episode: int, **fields: Any) -> MemoryUnit:
    kind = {"ace": "bullet", "topl": "assertion", "tepa": "precedent", "trace": "check"}[recipe]
    by_recipe: dict[str, dict[str, Any]] = {
        "ace": {"helpful": 0, "harmful": 0},
        "topl": {"alpha": 2.0, "beta": 1.0},
    }
    counters: dict[str, Any] = by_recipe.get(recipe, {})
    return MemoryUnit.model_validate(
        {
            "id": uid,
            "recipe": recipe,
            "kind": kind,
            "scope": ALEX,
            "created_episode": episode,
            "updated_episode": episode,
            "valid_from": f"2026-01-01T00:00:{episode:02d}.000000+00:00",
            "text": text,
            **counters,
            **fields,
        }
    )


def _observe(recipe: str, units: list[MemoryUnit], reply: dict[str, Any]) -> Update:
    ctx = RecipeContext(
        units=units,
        scope=ALEX,
        episode=EpisodeView(
            episode=13,
            task_id="pay_back-1",
            instruction="Pay Sam back $20 for lunch on Venmo.",
            actions="",
            complaint="My payment to Sam was not shown the way I share payments.",
            accepted=False,
        ),
        llm=MockLLM([json.dumps(reply)]),
        seed=0,
        now="2026-01-01T00:00:30+00:00",
    )
    return get_recipe(recipe).observe(ctx)


def _after(units: list[MemoryUnit], update: Update) -> list[MemoryUnit]:
    state = {u.id: u for u in units}
    for op in update.ops:
        state[op.id] = op.unit
    return list(state.values())


def _last_line(units: list[MemoryUnit], recipe: str) -> str:
    return render_for(units, ALEX, (recipe,)).splitlines()[-1]


def test_ace_a_repeat_of_an_older_bullet_reaffirms_it_so_it_renders_last() -> None:
    units = [_unit("ace-f", "ace", FRIENDS, 0), _unit("ace-p", "ace", PRIVATE, 3)]
    assert _last_line(units, "ace").endswith(PRIVATE)
    update = _observe("ace", units, {"operations": [{"op": "add", "text": FRIENDS}]})
    assert [(op.op, op.id) for op in update.ops] == [("reaffirm", "ace-f")]
    (op,) = update.ops
    assert op.unit.text == FRIENDS and op.unit.status == "active"
    assert op.unit.valid_from is not None and op.unit.valid_from > units[1].valid_from  # type: ignore[operator]
    assert _last_line(_after(units, update), "ace").endswith(FRIENDS)


@pytest.mark.parametrize("recipe", ["ace", "topl"])
def test_a_statement_on_the_subject_of_an_active_unit_replaces_it_unnamed(recipe: str) -> None:
    old = _unit(f"{recipe}-p", recipe, PRIVATE, 3, key="payment_visibility")
    other = _unit(f"{recipe}-c", recipe, "Pay with the card I use most often.", 1, key="card")
    entry = {"text": FRIENDS, "subject": "Payment visibility"}
    reply = {"operations": [{"op": "add", **entry}]} if recipe == "ace" else {"assertions": [entry]}
    update = _observe(recipe, [other, old], reply)
    ops = {op.id: op for op in update.ops}
    assert ops[old.id].op == "revoke"
    (new,) = [op.unit for op in update.ops if op.op == "add"]
    assert ops[old.id].unit.revoked_by == new.id and new.key == "payment_visibility"
    after = _after([other, old], update)
    shown = render_for(after, ALEX, (recipe,))
    assert FRIENDS in shown and PRIVATE not in shown and "card I use" in shown


def test_a_copied_field_name_is_no_subject() -> None:
    stale = _unit("ace-p", "ace", PRIVATE, 3, key="payment_visibility")
    copied = _unit("ace-s", "ace", "Title notes in Title Case.", 2, key="subject")
    reply = {
        "operations": [
            {"op": "add", "text": "Pay with the card I use most often.", "subject": "SUBJECT"},
            {"op": "add", "text": FRIENDS, "subject": "payment visibility"},
        ]
    }
    update = _observe("ace", [copied, stale], reply)
    labels = sorted((op.op, op.unit.text) for op in update.ops)
    # "SUBJECT" names nothing: the note on subject "subject" stays; the real subject replaces
    assert labels == sorted([("add", "Pay with the card I use most often."), ("add", FRIENDS),
                             ("revoke", PRIVATE)])  # fmt: skip
    keys = {op.unit.text: op.unit.key for op in update.ops}
    assert keys["Pay with the card I use most often."] is None


def test_topl_support_for_an_older_entry_reaffirms_it_so_it_renders_last() -> None:
    units = [_unit("topl-f", "topl", FRIENDS, 0), _unit("topl-p", "topl", PRIVATE, 3)]
    update = _observe("topl", units, {"assertions": [FRIENDS]})
    assert [(op.op, op.id) for op in update.ops] == [("reaffirm", "topl-f")]
    assert update.ops[0].unit.alpha == 3.0
    assert _last_line(_after(units, update), "topl").endswith(FRIENDS)


def test_tepa_and_trace_reaffirm_an_older_repeat_and_leave_the_newest_alone() -> None:
    sign = _unit(
        "tepa-s", "tepa", "Sign texts with a dash and my first name.", 0, key="sms.signoff"
    )
    pay = _unit("tepa-p", "tepa", PRIVATE, 3, key="payment.visibility")
    again = {"precedents": [{"key": "sms.signoff", "sentence": sign.text}]}
    update = _observe("tepa", [sign, pay], again)
    assert [(op.op, op.id) for op in update.ops] == [("reaffirm", "tepa-s")]
    assert _last_line(_after([sign, pay], update), "tepa").endswith(sign.text)
    newest = {"precedents": [{"key": "payment.visibility", "sentence": PRIVATE}]}
    assert _observe("tepa", [sign, pay], newest).ops == []  # already renders last

    def check(uid: str, value: str, episode: int) -> MemoryUnit:
        fields = {"api": "venmo__send_payment", "argument": "visibility", "predicate": "equals"}
        text = f"When sending a Venmo payment, the visibility must equal '{value}'."
        return _unit(uid, "trace", text, episode, value=value, **fields)

    units = [check("trace-f", "friends", 0), check("trace-n", "note", 3)]
    units[1] = units[1].with_(argument="note", predicate="contains")
    entry = {"api": "venmo__send_payment", "argument": "visibility", "predicate": "equals"}
    update = _observe("trace", units, {"checks": [{**entry, "value": "friends"}]})
    assert [(op.op, op.id) for op in update.ops] == [("reaffirm", "trace-f")]


def _bench() -> Any:
    spec = importlib.util.spec_from_file_location("bench_drift", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_drift"] = module
    spec.loader.exec_module(module)
    return module


def test_unnamed_drops_every_naming_field_ace_modify_included() -> None:
    bench = _bench()
    reply = {
        "operations": [
            {"op": "modify", "id": "ace-1", "text": FRIENDS, "subject": "visibility"},
            {"op": "add", "text": PRIVATE, "replaces": ["ace-2"]},
        ],
        "bullet_tags": [{"id": "ace-1", "tag": "harmful"}],
        "retire": ["x"],
    }
    assert bench._unnamed(reply) == {
        "operations": [
            {"op": "add", "text": FRIENDS, "subject": "visibility"},
            {"op": "add", "text": PRIVATE},
        ],
        "bullet_tags": [{"id": "ace-1", "tag": "harmful"}],
    }


@pytest.mark.parametrize("recipe", ["ace", "topl"])
def test_unnamed_updates_follow_alex_drift_with_no_stale_unit(recipe: str) -> None:
    """The measured case: alex, instance tier, 30 episodes, the updater names nothing."""
    bench = _bench()
    drift = bench.DRIFTS[0]
    assert drift.persona == "alex"
    bad, n, stale, rendered = bench.measure(recipe, drift, "instance", 30, unnamed=True)
    assert n > 0 and bad * 15 <= n, rendered  # the bar: at most 1 in 15
    assert not stale, rendered
